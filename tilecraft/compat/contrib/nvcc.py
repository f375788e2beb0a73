"""TileLang's `tilelang.contrib.nvcc` queries, answered from tilecraft's `cuda` target.

TileLang scripts ask it for the GPU's compute capability (`get_target_compute_version()`, "9.0") and
what that capability supports (`have_tma`, `have_fp8`, ...) before choosing a kernel. Here the
capability comes from a tilecraft target (a `Target`, a target string or dict) or, when none is given,
from device 0 (or the emulated device under `tilecraft run-tilelang --cuda-on-cpu`). TileLang's
compile helpers (`compile_cuda`, `get_ptx_from_source`, ...) are not provided: kernels are compiled by
tilecraft's execution backends.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tilecraft.backend.errors import TargetError
from tilecraft.cuda.carver import resolve_target
from tilecraft.cuda.target import KIND, capability
from tilecraft.errors import ToolchainError


def get_target_compute_version(target: Any = None) -> str:
    """The compute capability of `target` (default: device 0) as TileLang writes it, e.g. "9.0"."""
    major, minor = _capability(target)
    return f"{major}.{minor}"


def parse_compute_version(compute_version: str) -> tuple[int, int]:
    """ "8.6" -> (8, 6); RuntimeError for anything else, as TileLang raises."""
    parts = str(compute_version).split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError) as err:
        raise RuntimeError(f"Compute version parsing error: {compute_version!r} is not MAJOR.MINOR") from err


def get_target_arch(compute_version: str | tuple[int, int]) -> str:
    """The arch digits nvcc takes: "80" for 8.0, "90a" for 9.0 (9.x and later get the `a` suffix)."""
    major, minor = (
        parse_compute_version(compute_version) if isinstance(compute_version, str) else compute_version
    )
    return f"{major * 10 + minor}{'a' if major >= 9 else ''}"


def have_fp16(compute_version: str) -> bool:
    major, minor = parse_compute_version(compute_version)
    return (major == 5 and minor >= 3) or major >= 6


def have_int8(compute_version: str) -> bool:
    return parse_compute_version(compute_version)[0] >= 6


def have_bf16(compute_version: str) -> bool:
    return parse_compute_version(compute_version)[0] >= 8


def have_fp8(compute_version: str) -> bool:
    major, minor = parse_compute_version(compute_version)
    return (major == 8 and minor >= 9) or major >= 9


def have_tensorcore(compute_version: str | None = None, target: Any = None) -> bool:
    if compute_version is None:
        compute_version = get_target_compute_version(target)
    return parse_compute_version(compute_version)[0] >= 7


def have_tma(target: Any = None) -> bool:
    return _is_cuda(target) and _capability(target)[0] >= 9


def have_mbarrier(target: Any = None) -> bool:
    return have_tma(target)


def have_pdl(target: Any = None) -> bool:
    return have_tma(target)


def is_hopper(target: Any = None) -> bool:
    return _is_cuda(target) and _capability(target) == (9, 0)


def have_cudagraph() -> bool:
    return True  # every CUDA this backend supports (sm_80+ needs CUDA 11) has graphs


def find_cuda_path() -> str:
    """The CUDA toolkit root: $CUDA_HOME, else the folder above the nvcc tilecraft would use."""
    if os.environ.get("CUDA_HOME"):
        return os.environ["CUDA_HOME"]
    return str(Path(get_nvcc_compiler()).resolve().parent.parent)


def get_nvcc_compiler() -> str:
    """The nvcc that tilecraft's `nvcc` execution backend uses (TILECRAFT_NVCC, CUDA_HOME, PATH)."""
    from tilecraft.execution.nvcc.toolchain import nvcc_path

    return nvcc_path()


def get_cuda_version(cuda_path: str | None = None) -> tuple[int, ...]:
    """nvcc's version as a tuple, e.g. (13, 0, 88)."""
    from tilecraft.execution.nvcc.toolchain import nvcc_version

    nvcc = str(Path(cuda_path) / "bin" / "nvcc") if cuda_path else None
    version = nvcc_version(nvcc)
    try:
        return tuple(int(p) for p in version.split("."))
    except ValueError:
        raise ToolchainError(f"cannot read the CUDA version from nvcc's output {version!r}") from None


def _capability(target: Any) -> tuple[int, int]:
    return capability(resolve_target(KIND if target is None else target).attr("arch"))


def _is_cuda(target: Any) -> bool:
    if target is None:
        return True
    try:
        return resolve_target(target).kind == KIND
    except TargetError:  # a target of another kind: TileLang answers False
        return False
