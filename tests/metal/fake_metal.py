"""A fake of PyObjC's `Metal` module: the calls the `metal` execution backend makes, on a fake device
whose compiler builds the MSL as C++ against the emulator (emulator/metal_stdlib) and whose command
buffers run the kernels there, on the CPU.

The device, its family, the library compiler and the encoders behave as Metal documents (a library
that does not compile is (None, error); a command buffer runs when committed; buffers are shared
storage the CPU reads through `contents()`), and every call is recorded so tests can check what the
backend asked for. Without a C++ compiler the fake still records, and runs nothing (`emulate=False`).
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import subprocess
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.metal.msl import as_cxx

EMULATOR_DIR = Path(__file__).resolve().parent / "emulator"
KERNEL = re.compile(r"kernel\s+void\s+(\w+)\s*\((.*?)\)\s*\{", re.S)
PARAM = re.compile(r"^(.*?)\s*\b(\w+)\s*\[\[(\w+)(?:\((\d+)\))?\]\]$", re.S)
COMPLETED, ERROR = 4, 5


@dataclass
class FakeError:
    text: str

    def localizedDescription(self) -> str:
        return self.text


class FakeCompileOptions:
    def __init__(self) -> None:
        self.fast_math = True  # Metal's default

    @classmethod
    def new(cls) -> FakeCompileOptions:
        return cls()

    def setFastMathEnabled_(self, value: bool) -> None:
        self.fast_math = bool(value)


class FakeBuffer:
    def __init__(self, data: bytes) -> None:
        self.data = bytearray(data)
        self._c = (ctypes.c_char * len(self.data)).from_buffer(self.data)

    @property
    def address(self) -> int:
        return ctypes.addressof(self._c)

    def length(self) -> int:
        return len(self.data)

    def contents(self) -> Any:
        buffer = self

        class _Contents:
            def as_buffer(self, n: int) -> memoryview:
                return memoryview(buffer.data)[:n]

        return _Contents()


def kernel_signatures(source: str) -> dict[str, list[tuple[str, str, str, int | None]]]:
    """Per kernel function: its params as (type, name, attribute, index)."""
    out = {}
    for name, params in KERNEL.findall(source):
        parsed = []
        for text in params.split(","):
            m = PARAM.match(text.strip())
            if m is None:
                raise ValueError(f"cannot read kernel parameter {text.strip()!r} of {name}")
            parsed.append((m.group(1), m.group(2), m.group(3), int(m.group(4)) if m.group(4) else None))
        out[name] = parsed
    return out


def _call_args(params) -> str:
    args = []
    for ctype, _, attribute, index in params:
        if attribute == "buffer":
            args.append(
                f"*({ctype[:-1]}*)args[{index}]" if ctype.endswith("&") else f"({ctype})args[{index}]"
            )
        elif attribute == "threadgroup":
            args.append(f"({ctype})smem")
        elif attribute == "threadgroup_position_in_grid":
            args.append("g")
        elif attribute == "thread_position_in_threadgroup":
            args.append("t")
        else:
            raise ValueError(f"the emulator does not bind [[{attribute}]]")
    return ", ".join(args)


def runner_source(source: str) -> str:
    """The library as C++ with one extern "C" tc_run_<kernel> per kernel function."""
    parts = [as_cxx(source)]
    for name, params in kernel_signatures(source).items():
        parts.append(
            f'extern "C" int tc_run_{name}(void** args, void* smem, long smem_bytes, unsigned gx, unsigned gy,\n'
            f"        unsigned gz, unsigned tx, unsigned ty, unsigned tz, char* error, int error_len) {{\n"
            f"    return tc_emu::run_grid(metal::uint3{{gx, gy, gz}}, metal::uint3{{tx, ty, tz}}, smem, smem_bytes,\n"
            f"        [&](metal::uint3 g, metal::uint3 t) {{ {name}({_call_args(params)}); }}, error, error_len);\n"
            "}\n"
        )
    return "\n".join(parts)


class FakeLibrary:
    def __init__(self, source: str, native: Any) -> None:
        self.source = source
        self.signatures = kernel_signatures(source)
        self.native = native

    def newFunctionWithName_(self, name: str) -> Any:
        return FakeFunction(self, name) if name in self.signatures else None

    def functionNames(self) -> list[str]:
        return sorted(self.signatures)


@dataclass
class FakeFunction:
    library: FakeLibrary
    name: str


@dataclass
class FakePipeline:
    function: FakeFunction
    max_threads: int = 1024

    def maxTotalThreadsPerThreadgroup(self) -> int:
        return self.max_threads

    def staticThreadgroupMemoryLength(self) -> int:
        return 0


@dataclass
class Dispatch:
    pipeline: FakePipeline
    buffers: dict[int, FakeBuffer]
    bytes: dict[int, bytes]
    threadgroup_memory: dict[int, int]
    groups: tuple[int, int, int]
    threads: tuple[int, int, int]


class FakeEncoder:
    def __init__(self, command_buffer: FakeCommandBuffer) -> None:
        self.command_buffer = command_buffer
        self.pipeline = None
        self.buffers: dict[int, FakeBuffer] = {}
        self.bytes: dict[int, bytes] = {}
        self.threadgroup_memory: dict[int, int] = {}

    def setComputePipelineState_(self, pipeline: FakePipeline) -> None:
        self.pipeline = pipeline

    def setBuffer_offset_atIndex_(self, buffer: FakeBuffer, offset: int, index: int) -> None:
        assert offset == 0
        self.buffers[index] = buffer

    def setBytes_length_atIndex_(self, data: bytes, length: int, index: int) -> None:
        assert len(data) == length
        self.bytes[index] = bytes(data)

    def setThreadgroupMemoryLength_atIndex_(self, length: int, index: int) -> None:
        if length % 16:
            raise AssertionError(
                f"threadgroup memory length {length} is not a multiple of 16 (Metal requires it)"
            )
        self.threadgroup_memory[index] = length

    def dispatchThreadgroups_threadsPerThreadgroup_(self, groups, threads) -> None:
        self.command_buffer.dispatches.append(
            Dispatch(
                self.pipeline,
                dict(self.buffers),
                dict(self.bytes),
                dict(self.threadgroup_memory),
                tuple(groups),
                tuple(threads),
            )  # fmt: skip
        )

    def endEncoding(self) -> None:
        self.command_buffer.encoders_ended += 1


class FakeCommandBuffer:
    def __init__(self, device: FakeDevice) -> None:
        self.device = device
        self.dispatches: list[Dispatch] = []
        self.encoders_ended = 0
        self._status = 0
        self._error: FakeError | None = None

    def computeCommandEncoder(self) -> FakeEncoder:
        return FakeEncoder(self)

    def commit(self) -> None:
        self.device.committed.append(self)
        for dispatch in self.dispatches:
            error = self.device.run(dispatch)
            if error:
                self._status, self._error = ERROR, FakeError(error)
                return
        self._status = COMPLETED

    def waitUntilCompleted(self) -> None:
        assert self._status, "waitUntilCompleted before commit"

    def status(self) -> int:
        return self._status

    def error(self) -> FakeError | None:
        return self._error


class FakeQueue:
    def __init__(self, device: FakeDevice) -> None:
        self.device = device

    def commandBuffer(self) -> FakeCommandBuffer:
        return FakeCommandBuffer(self.device)


@dataclass
class FakeDevice:
    family: int
    compiler: str | None
    build_dir: Path
    compiled: list[tuple[str, bool]] = field(default_factory=list)  # (source, fast math)
    committed: list[FakeCommandBuffer] = field(default_factory=list)

    def name(self) -> str:
        return f"Fake Apple GPU (apple{self.family}, emulated)"

    def supportsFamily_(self, family: int) -> bool:
        return 1001 <= family <= 1000 + self.family

    def maxThreadgroupMemoryLength(self) -> int:
        return 32 * 1024

    def newCommandQueue(self) -> FakeQueue:
        return FakeQueue(self)

    def newLibraryWithSource_options_error_(self, source: str, options: FakeCompileOptions, error: Any):
        self.compiled.append((source, options.fast_math))
        native = None
        if self.compiler is not None:
            native, log = self._build(source)
            if native is None:
                return None, FakeError(log)
        return FakeLibrary(source, native), None

    def _build(self, source: str) -> tuple[Any, str]:
        text = runner_source(source)
        digest = hashlib.sha256(text.encode()).hexdigest()[:20]
        lib = self.build_dir / f"{digest}.so"
        if not lib.exists():
            src = self.build_dir / f"{digest}.cc"
            src.write_text(text)
            run = subprocess.run(
                [self.compiler, "-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-I", str(EMULATOR_DIR), "-x", "c++",
                 str(src), "-o", str(lib)], capture_output=True, text=True)  # fmt: skip
            if run.returncode != 0:
                return None, run.stderr
        return ctypes.CDLL(str(lib)), ""

    def newComputePipelineStateWithFunction_error_(self, function: FakeFunction, error: Any):
        return FakePipeline(function), None

    def newBufferWithBytes_length_options_(self, data: bytes, length: int, options: int) -> FakeBuffer:
        assert len(data) == length and options == 0
        return FakeBuffer(data)

    def run(self, dispatch: Dispatch) -> str:
        """Runs one dispatch in the emulator; the error text, or ''."""
        function = dispatch.pipeline.function
        if function.library.native is None:
            return ""
        signature = function.library.signatures[function.name]
        slots = [index for _, _, attribute, index in signature if attribute == "buffer"]
        args = (ctypes.c_void_p * (max(slots, default=-1) + 1))()
        keep = []
        for index in slots:
            if index in dispatch.buffers:
                args[index] = dispatch.buffers[index].address
            elif index in dispatch.bytes:
                data = ctypes.create_string_buffer(dispatch.bytes[index], len(dispatch.bytes[index]))
                keep.append(data)
                args[index] = ctypes.addressof(data)
            else:
                return f"kernel {function.name}: nothing bound at buffer index {index}"
        smem_bytes = dispatch.threadgroup_memory.get(0, 0)
        smem = ctypes.create_string_buffer(max(smem_bytes, 16))
        error = ctypes.create_string_buffer(512)
        run = getattr(function.library.native, f"tc_run_{function.name}")
        run.restype = ctypes.c_int
        status = run(args, smem, ctypes.c_long(smem_bytes), *[ctypes.c_uint(v) for v in dispatch.groups],
                     *[ctypes.c_uint(v) for v in dispatch.threads], error, 512)  # fmt: skip
        return error.value.decode() if status else ""


def fake_metal_module(family: int, compiler: str | None, build_dir: Path) -> types.ModuleType:
    """A module shaped like PyObjC's `Metal`, with one fake device."""
    module = types.ModuleType("Metal")
    module.device = FakeDevice(family, compiler, build_dir)
    module.MTLCreateSystemDefaultDevice = lambda: module.device
    module.MTLSizeMake = lambda x, y, z: (x, y, z)
    module.MTLCompileOptions = FakeCompileOptions
    module.MTLResourceStorageModeShared = 0
    return module
