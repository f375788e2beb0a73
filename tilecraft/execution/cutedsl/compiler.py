"""The CuTe DSL's JIT as this backend's device compiler: a generated module to a cubin, no GPU needed.

The module is written to a file and imported (the DSL reads a kernel's source to trace it), then
`cute.compile(tc_launch, *fake_args, options="--gpu-arch <arch> --keep-cubin")` traces and compiles it:
fake pointers (`cute.runtime.make_ptr(dtype, 0, gmem, assumed_align)`) and scalars stand for the
arguments, so the DSL never touches a device. The cubin comes back with the kernels' entry symbols,
which must be the ones the source step put in the KernelInfo records.

Without the package: ToolchainNotFound naming the extra (`pip install 'tilecraft[cutedsl]'`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tilecraft.errors import ToolchainError, ToolchainNotFound

EXTRA = "tilecraft[cutedsl]"
PACKAGE = "nvidia-cutlass-dsl"
INSTALL_HINT = (
    f"pip install '{EXTRA}' (NVIDIA's CuTe DSL, package {PACKAGE} 4.x, Linux x86_64/aarch64, Python 3.10+)"
)
_LOCK = threading.Lock()  # the DSL's tracing state is per process: one compile at a time


def dsl_modules() -> tuple[Any, Any]:
    """(cutlass, cutlass.cute), or ToolchainNotFound naming the extra to install."""
    try:
        import cutlass
        import cutlass.cute as cute
    except ImportError as err:
        raise ToolchainNotFound(
            f"the CuTe DSL is not installed (import cutlass: {err}); the cutedsl backend compiles its kernels "
            f"with it; install it with {INSTALL_HINT}"
        ) from None
    return cutlass, cute


def dsl_version() -> str:
    """The installed DSL's version (part of the cache key of what it builds)."""
    from importlib import metadata

    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        cutlass, _ = dsl_modules()
        return str(getattr(cutlass, "__version__", "unknown"))


def compile_module(source: str, arch: str, symbols: Sequence[str]) -> bytes:
    """The cubin of a generated module for `arch`; ToolchainError with the kept source on a failure."""
    cutlass, cute = dsl_modules()
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    with _LOCK, tempfile.TemporaryDirectory(prefix="tilecraft-cutedsl-") as tmp:
        path = Path(tmp) / f"tc_cutedsl_{digest}.py"
        path.write_text(source)
        module = _import(path, f"tc_cutedsl_{digest}")
        try:
            args = [_fake_arg(cutlass, cute, *arg) for arg in module.TC_ARGS]
            compiled = cute.compile(
                module.tc_launch, *args, options=f"--gpu-arch {arch} --keep-cubin --dump-dir {tmp}"
            )
            cubin = compiled.artifacts.CUBIN
            found = tuple(compiled.kernel_info)
        except Exception as err:
            kept = _keep(source, digest)
            raise ToolchainError(
                f"the CuTe DSL could not compile the generated module for {arch}: {type(err).__name__}: "
                f"{_first_lines(err)}; the module is at {kept}"
            ) from err
        finally:
            sys.modules.pop(module.__name__, None)
    if isinstance(cubin, str):
        cubin = Path(cubin).read_bytes()
    if not isinstance(cubin, bytes) or not cubin:
        raise ToolchainError(
            f"the CuTe DSL returned no cubin for {arch}; the module is at {_keep(source, digest)}"
        )
    missing = [s for s in symbols if s not in found]
    if missing:
        raise ToolchainError(
            f"the CuTe DSL named the kernels {', '.join(found)}, not {', '.join(missing)} as the KernelInfo records "
            f"say (a DSL version whose naming differs: {dsl_version()}); the module is at {_keep(source, digest)}"
        )
    return cubin


def _import(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _fake_arg(cutlass: Any, cute: Any, kind: str, dtype: str, align: int) -> Any:
    numeric = getattr(cutlass, dtype.removeprefix("cutlass."))
    if kind == "pointer":
        from cutlass.cute.runtime import make_ptr

        return make_ptr(numeric, 0, cute.AddressSpace.gmem, assumed_align=align)
    return numeric(0)


def _keep(source: str, digest: str) -> Path:
    """The generated module, kept for the error message."""
    path = Path(tempfile.gettempdir()) / f"tilecraft-cutedsl-{digest}.py"
    path.write_text(source)
    return path


def _first_lines(err: Exception, limit: int = 12) -> str:
    text = str(err).strip().splitlines()
    return "\n".join(text[:limit]) + ("\n..." if len(text) > limit else "")
