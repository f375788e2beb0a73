"""OpenCL programs: built from OpenCL C source for one device (a failure shows the full build log, the
options and where the source was kept), and loaded from a program binary when the platform accepts it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tilecraft.errors import ToolchainError
from tilecraft.execution.opencl.device import DeviceRuntime, import_pyopencl
from tilecraft.execution.opencl.spec import NO_UNROLL
from tilecraft.runtime.artifact import CompiledArtifact

BASE_OPTIONS = ("-cl-std=CL1.2",)
# Fast math (pass config tl.enable_fast_math). Not -cl-fast-relaxed-math: its -cl-finite-math-only lets the
# compiler assume no NaN or infinity, and kernels start max-reductions at -inf and test for NaN.
FAST_MATH_OPTIONS = ("-cl-unsafe-math-optimizations",)
SOURCE_FILE = "kernel.cl"


def compile_flags(artifact: CompiledArtifact) -> tuple[str, ...]:
    """The user's `compile_flags`, passed to the OpenCL compiler as they are."""
    return tuple(str(f) for f in artifact.extra_value("compile_flags", ()) or ())


def program_options(artifact: CompiledArtifact, cpu: bool = False) -> list[str]:
    """The build options: OpenCL C 1.2, fast math when the artifact asks for it, loops left rolled on a
    CPU device (the printer's unroll pragmas test NO_UNROLL: PoCL took 122 s, against 7, to build and
    run the flash attention conformance kernel unrolled), then the user's flags (a later option
    overrides an earlier one)."""
    fast = FAST_MATH_OPTIONS if artifact.extra_value("fast_math", False) else ()
    rolled = (f"-D{NO_UNROLL}",) if cpu else ()
    return [*BASE_OPTIONS, *fast, *rolled, *compile_flags(artifact)]


def build_from_source(runtime: DeviceRuntime, source: str, options: Sequence[str], keep_dir: Path) -> Any:
    """The program built for the runtime's device; ToolchainError with the build log on failure."""
    cl = import_pyopencl()
    try:
        # cache_dir=False: our cache is the only one, so what it holds is what a build produced.
        return cl.Program(runtime.context, source).build(
            options=list(options), devices=[runtime.info.handle], cache_dir=False
        )
    except cl.Error as err:
        kept = keep_source(source, keep_dir)
        raise ToolchainError(
            f"the OpenCL C build failed on {runtime.info.describe()}\n"
            f"  options: {' '.join(options)}\n"
            f"  source kept at: {kept}\n"
            f"build log:\n{str(err).strip()}"
        ) from None


def keep_source(source: str, keep_dir: Path) -> Path:
    """Write the source of a failed build where the user can read it."""
    keep_dir.mkdir(parents=True, exist_ok=True)
    kept = keep_dir / SOURCE_FILE
    kept.write_text(source)
    return kept


def program_binary(program: Any) -> bytes | None:
    """The device binary of a built program, or None when the platform does not provide one."""
    cl = import_pyopencl()
    try:
        binaries = program.get_info(cl.program_info.BINARIES)
    except cl.Error:
        return None
    return bytes(binaries[0]) if binaries and binaries[0] else None


def load_binary(runtime: DeviceRuntime, binary: bytes) -> tuple[Any, str]:
    """(program, "") from a device binary, or (None, why) when the platform rejects the binary."""
    cl = import_pyopencl()
    try:
        return cl.Program(runtime.context, [runtime.info.handle], [binary]).build(), ""
    except cl.Error as err:
        return None, str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def kernel_names(program: Any) -> list[str]:
    """The `__kernel` functions a built program defines."""
    cl = import_pyopencl()
    try:
        names = program.get_info(cl.program_info.KERNEL_NAMES)
    except cl.Error:
        return []
    return sorted(n for n in str(names).split(";") if n)
