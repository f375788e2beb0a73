"""Running generated HIP kernels on the CPU: the `hip` execution backend, unchanged, launches through the
fake HIP runtime (fake_libamdhip64.c), which runs the kernels in the emulator (emulator/tc_hip_emu.h).

The path: tilecraft lowers and compiles a kernel for the target's arch as always (the code object clang
made is what the backend builds and loads); when the backend loads a built kernel, `install` has the
same `hip-source` compiled for the host against the emulator and registers that library with the fake
runtime for those code-object bytes; the backend's generated launcher packs the parameter slots and
calls hipModuleLaunchKernel, which runs `tc_run_<kernel>` (written here per kernel) on them. Arrays are
`DeviceArray`s, host memory the backend takes for ROCm memory (DLPack device type 10).

What this does not check: the AMDGPU code clang generated (the host build is another compile of the same
source), the hardware's instruction behaviour beyond the ISA guide's definitions, and timing or memory
effects of truly concurrent work-items (see the header).
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from tilecraft.execution.hip import DLPACK_ROCM
from tilecraft.ir import dtype as dt
from tilecraft.runtime.arrays import ArrayArg

EMULATOR_DIR = Path(__file__).resolve().parent / "emulator"
HEADER = EMULATOR_DIR / "tc_hip_emu.h"
KERNEL = re.compile(
    r'extern "C" __attribute__\(\(global\)\) __attribute__\(\(amdgpu_flat_work_group_size\((\d+), \d+\)\)\) '
    r"void (\w+)\((.*?)\) \{",
    re.S,
)
# --driver-mode=g++: the clang found for HIP is `clang-19`, which links no C++ library by itself
PARAM = re.compile(r"^(.*?)\s*\b(\w+)$", re.S)
FLAGS = ("--driver-mode=g++", "-x", "c++", "-std=c++17", "-O1", "-shared", "-fPIC", "-w")


def kernel_signatures(source: str) -> dict[str, tuple[int, list[str]]]:
    """Per kernel: its fixed work-group size and its parameters' C types."""
    out = {}
    for threads, name, params in KERNEL.findall(source):
        types = []
        for text in filter(None, (p.strip() for p in params.split(","))):
            found = PARAM.match(text.replace("__restrict__", " ").strip())
            if found is None:
                raise ValueError(f"cannot read kernel parameter {text!r} of {name}")
            types.append(" ".join(found.group(1).split()))
        out[name] = (int(threads), types)
    return out


def runner_source(source: str) -> str:
    """The source with one `extern "C" int tc_run_<kernel>(params, grid, block, lds, error)` per kernel:
    each parameter read from its 8-byte kernelParams slot, the work-group size checked against the
    kernel's amdgpu_flat_work_group_size."""
    parts = [source]
    for name, (threads, types) in kernel_signatures(source).items():
        args = ", ".join(f"*({ctype}*)params[{i}]" for i, ctype in enumerate(types))
        parts.append(
            f'extern "C" int tc_run_{name}(void** params, unsigned gx, unsigned gy, unsigned gz, unsigned bx,\n'
            f"        unsigned by, unsigned bz, unsigned lds, char* error, int error_len) {{\n"
            f"    if (bx * by * bz != {threads}u) {{\n"
            f'        snprintf(error, error_len, "{name} launched with %u work-items, its '
            f'amdgpu_flat_work_group_size is {threads}", bx * by * bz);\n'
            "        return 1;\n"
            "    }\n"
            "    const unsigned groups[3] = {gx, gy, gz}, size[3] = {bx, by, bz};\n"
            f"    return tc_emu::run_grid(groups, size, lds, [&] {{ {name}({args}); }}, error, error_len);\n"
            "}\n"
        )
    return "\n".join(parts)


def arch_macro(arch: str) -> str:
    """The macro clang defines when compiling for `arch` (the generated code tests it: fp8 MFMA)."""
    return f"-D__{arch}__"


def build_library(source: str, arch: str, compiler: str, build_dir: Path) -> Path:
    """The host shared library of `source` against the emulator (built once per source and arch)."""
    text = runner_source(source)
    digest = hashlib.sha256(f"{arch}\n{HEADER.read_text()}\n{text}".encode()).hexdigest()[:20]
    lib = build_dir / f"{digest}.so"
    if not lib.exists():
        src = build_dir / f"{digest}.cc"
        src.write_text(text)
        run = subprocess.run([compiler, *FLAGS, arch_macro(arch), "-include", str(HEADER), str(src), "-o", str(lib)],
                             capture_output=True, text=True)  # fmt: skip
        if run.returncode != 0:
            raise RuntimeError(f"the emulator build of {src} failed:\n{run.stderr[-4000:]}")
    return lib


class DeviceArray:
    """An array in emulated GPU memory: host memory, 16-byte aligned, that the backend reads as ROCm's."""

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        raw = np.empty(count * dtype.itemsize + 16, np.uint8)
        start = -raw.ctypes.data % 16
        self.data = raw[start : start + count * dtype.itemsize].view(dtype).reshape(shape)

    @classmethod
    def of(cls, host: np.ndarray) -> DeviceArray:
        out = cls(host.shape, host.dtype)
        out.data[...] = host
        return out

    @property
    def ptr(self) -> int:
        return self.data.ctypes.data

    @property
    def __array_interface__(self) -> dict:
        # what makes tilecraft take it for an array (eager calls read shapes from it); the backend reads
        # it first through `read_array`, as its own device's memory
        return self.data.__array_interface__


def read_array(x: Any) -> ArrayArg | None:
    """The backend's view of a DeviceArray (None for anything else)."""
    if not isinstance(x, DeviceArray):
        return None
    a = x.data
    strides = tuple(s // a.itemsize for s in a.strides)
    return ArrayArg(x, x.ptr, a.shape, strides, dt.as_dtype(a.dtype), DLPACK_ROCM, 0, "emulated")


class Emulation:
    """The fake runtime library `lib` running kernels in the emulator for the `hip` backend `backend`."""

    def __init__(self, lib: ctypes.CDLL, compiler: str, build_dir: Path) -> None:
        self.lib = lib
        self.compiler = compiler
        self.build_dir = build_dir
        self.registered: set[str] = set()
        self.sources: list[str] = []  # every source loaded, in order (tests check what ran)
        lib.fake_emulate_image.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_char_p]

    def register(self, image: bytes, source: str, arch: str) -> None:
        library = build_library(source, arch, self.compiler, self.build_dir)
        key = hashlib.sha256(image).hexdigest()
        self.sources.append(source)
        if key not in self.registered:
            if self.lib.fake_emulate_image(image, len(image), str(library).encode()):
                raise RuntimeError("the fake HIP runtime's table of emulated images is full")
            self.registered.add(key)

    @property
    def launches(self) -> int:
        return ctypes.c_long.in_dll(self.lib, "fake_emu_launches").value


def install(monkeypatch, backend, emulation: Emulation) -> None:
    """Make the `hip` backend object load kernels into the emulator and take DeviceArrays for arrays."""
    from tilecraft.execution.hip.backend import CODE_OBJECT_FILE, SOURCE_FILE

    real_load = backend.load

    def load(built):
        arch = built.artifact.target.attr("arch")
        emulation.register(built.read(CODE_OBJECT_FILE), built.read(SOURCE_FILE).decode(), arch)
        return real_load(built)

    def empty(reference, shape, dtype):
        return DeviceArray(tuple(shape), dt.numpy_dtype(dtype))

    monkeypatch.setattr(backend, "load", load)
    monkeypatch.setattr(backend, "array_readers", (read_array,))
    monkeypatch.setattr(backend, "to_device", lambda array, device=None: DeviceArray.of(np.asarray(array)))
    monkeypatch.setattr(backend, "to_host", lambda array: array.data.copy())
    monkeypatch.setattr(backend, "empty", empty)


def launch(library: Path, kernel: str, args: list[Any], groups: tuple[int, int, int],
           size: tuple[int, int, int], lds: int = 0) -> str:  # fmt: skip
    """Run `kernel` of an emulator library directly (no runtime): numpy arrays are passed by pointer,
    Python ints as int32 and floats as float32; the emulator's error text, or ''."""
    lib = ctypes.CDLL(str(library))
    slots = []
    for a in args:
        if isinstance(a, np.ndarray):
            slots.append(ctypes.c_void_p(a.ctypes.data))
        elif isinstance(a, float):
            slots.append(ctypes.c_float(a))
        else:
            slots.append(ctypes.c_int32(a))
    params = (ctypes.c_void_p * max(1, len(slots)))(
        *[ctypes.cast(ctypes.pointer(s), ctypes.c_void_p) for s in slots]
    )
    error = ctypes.create_string_buffer(512)
    run = getattr(lib, f"tc_run_{kernel}")
    run.restype = ctypes.c_int
    status = run(params, *[ctypes.c_uint(v) for v in (*groups, *size, lds)], error, 512)
    return error.value.decode() if status else ""
