"""NVRTC, through cuda-python's bindings: CUDA C++ source -> cubin for one `sm_XY[a]`, in process.

`nvrtc_compile` needs no GPU and no driver. On failure it raises ToolchainError with NVRTC's full log,
the options and the path where the source was written.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from tilecraft.errors import ToolchainError, Unavailable
from tilecraft.execution.cuda_driver.sources import SOURCE_NAME, keep_source
from tilecraft.execution.cuda_driver.toolkit import toolkit_roots

BASE_OPTIONS = ("-std=c++17", "-default-device", "--generate-line-info")
# Fast math as TileLang asks NVRTC for it (tl.enable_fast_math); NaN and infinity still behave.
FAST_MATH_OPTIONS = ("--use_fast_math",)
INSTALL_BINDINGS = "pip install cuda-python  (or: pip install 'tilecraft[cuda]')"
INSTALL_NVRTC = (
    "pip install nvidia-cuda-nvrtc (matching your driver's CUDA major version), or install the CUDA "
    "toolkit and put its lib64 directory on LD_LIBRARY_PATH"
)


class NvrtcUnavailable(Unavailable):
    """cuda-python or the NVRTC library is missing; `reason` says which and `fix` what to install."""


def nvrtc_module() -> ModuleType:
    """cuda-python's NVRTC bindings (`cuda.bindings.nvrtc`, or `cuda.nvrtc` before cuda-python 12.6)."""
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        try:
            from cuda import nvrtc  # type: ignore[no-redef]
        except ImportError:
            raise NvrtcUnavailable("cuda-python is not installed (NVRTC is reached through its bindings)",
                                   INSTALL_BINDINGS) from None  # fmt: skip
    return nvrtc


def _ok(nvrtc: ModuleType, result: Any, call: str) -> None:
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, text = nvrtc.nvrtcGetErrorString(result)
        raise ToolchainError(f"{call} failed: {text.decode() if isinstance(text, bytes) else text}")


@functools.cache
def nvrtc_version() -> str:
    """NVRTC's version, "major.minor" (part of the cache key); ToolchainError when NVRTC cannot load."""
    nvrtc = nvrtc_module()
    try:
        result, major, minor = nvrtc.nvrtcVersion()
    except Exception as err:  # cuda-python raises its own loader errors when libnvrtc is missing
        raise NvrtcUnavailable(f"the NVRTC library cannot be loaded: {err}", INSTALL_NVRTC) from None
    _ok(nvrtc, result, "nvrtcVersion")
    return f"{major}.{minor}"


@functools.cache
def cuda_include_dirs() -> tuple[str, ...]:
    """Directories holding the CUDA headers (cuda_fp16.h, cuda_bf16.h ...), which NVRTC does not ship.

    Looked up in $CUDA_HOME, $CUDA_PATH, next to nvcc (as cuda_driver/toolkit.py finds it), /usr/local/cuda,
    then with cuda-python's pathfinder, which knows NVIDIA's pip wheels. CUDA 13 adds `include/cccl`.
    """
    for root in toolkit_roots():
        include = root / "include"
        if (include / "cuda_fp16.h").is_file():
            cccl = include / "cccl"
            return (str(include),) + ((str(cccl),) if cccl.is_dir() else ())
    found = _pathfinder_headers()
    return (found,) if found else ()


def _pathfinder_headers() -> str | None:
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        return find_nvidia_header_directory("cudart")
    except Exception:  # an old cuda-python has no pathfinder; then there are no wheel headers to find
        return None


def requested_options(fast_math: bool, options: Sequence[str] = ()) -> tuple[str, ...]:
    """The NVRTC options for what the user asked: fast math, then their own flags (a later one wins)."""
    return (*(FAST_MATH_OPTIONS if fast_math else ()), *options)


def nvrtc_options(arch: str, options: Sequence[str] = (), include_dirs: Sequence[str] | None = None
                  ) -> tuple[str, ...]:  # fmt: skip
    """The full NVRTC option list: arch, the base options, include paths, then `options`."""
    dirs = cuda_include_dirs() if include_dirs is None else tuple(include_dirs)
    return (
        f"--gpu-architecture={arch}",
        *BASE_OPTIONS,
        *(f"--include-path={d}" for d in dirs),
        *options,
    )


def nvrtc_compile(source: str, arch: str, options: Sequence[str] = (), *,
                  include_dirs: Sequence[str] | None = None, keep_dir: Path | None = None) -> bytes:  # fmt: skip
    """Compile one CUDA C++ translation unit to a cubin for `arch` (`sm_XY` or `sm_XYa`).

    `options` are extra NVRTC flags (e.g. `--use_fast_math`). On failure the source is written to
    `keep_dir` (a new temporary directory when None) and the ToolchainError shows NVRTC's log.
    """
    if not arch.startswith("sm_"):
        raise ToolchainError(f"NVRTC makes a cubin only for a real arch such as sm_90a, not {arch!r}")
    nvrtc = nvrtc_module()
    nvrtc_version()  # a clear error when the library is missing, before any program is created
    flags = nvrtc_options(arch, options, include_dirs)
    result, program = nvrtc.nvrtcCreateProgram(source.encode(), SOURCE_NAME.encode(), 0, [], [])
    _ok(nvrtc, result, "nvrtcCreateProgram")
    try:
        encoded = [f.encode() for f in flags]
        (result,) = nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise _compile_failure(source, arch, flags, _log(nvrtc, program), keep_dir)
        return _cubin(nvrtc, program)
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _log(nvrtc: ModuleType, program: Any) -> str:
    result, size = nvrtc.nvrtcGetProgramLogSize(program)
    _ok(nvrtc, result, "nvrtcGetProgramLogSize")
    log = b" " * size
    _ok(nvrtc, nvrtc.nvrtcGetProgramLog(program, log)[0], "nvrtcGetProgramLog")
    return log.rstrip(b"\x00").decode(errors="replace").strip()


def _cubin(nvrtc: ModuleType, program: Any) -> bytes:
    result, size = nvrtc.nvrtcGetCUBINSize(program)
    _ok(nvrtc, result, "nvrtcGetCUBINSize")
    cubin = b" " * size
    _ok(nvrtc, nvrtc.nvrtcGetCUBIN(program, cubin)[0], "nvrtcGetCUBIN")
    return cubin


def _compile_failure(source: str, arch: str, flags: Sequence[str], log: str, keep_dir: Path | None
                     ) -> ToolchainError:  # fmt: skip
    kept = keep_source(source, keep_dir, "tilecraft-nvrtc-")
    hint = ""
    if "could not open source file" in log and not any(f.startswith("--include-path") for f in flags):
        hint = "\nhint: NVRTC found no CUDA headers; set CUDA_HOME to a CUDA toolkit or pip install nvidia-cuda-runtime"
    return ToolchainError(
        f"NVRTC {nvrtc_version()} failed to compile the kernel for {arch}\n"
        f"  options: {' '.join(flags)}\n  generated source: {kept}\n{log}{hint}"
    )
