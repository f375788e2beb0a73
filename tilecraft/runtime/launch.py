"""What an execution backend makes of an artifact and how a call reaches it: `Built` (the files a
build produced), `Loaded` (those files loaded into this process), the `Launcher` that launches them, and
the raw launch descriptions the JIT's fast paths use (`FastPath` for torch tensors, `NativeLaunch` for the
compiled launcher). `ExecutionBackend` (tilecraft.backend) returns these from `build`, `load`,
`launcher`, `fast_path` and `native_launch`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from tilecraft.runtime.artifact import CompiledArtifact


class StoredFiles(Protocol):
    """Where a build's files are kept: a cache entry, or an export read back (`execution/cache.py`)."""

    files: Mapping[str, str]
    meta: Mapping[str, Any]

    def path(self, name: str) -> Path: ...

    def read(self, name: str) -> bytes: ...


@dataclass(frozen=True, eq=False)
class Built:
    """A built artifact: the files an execution backend produced, and the key they are kept under."""

    execution_backend: str
    key: str
    artifact: CompiledArtifact
    entry: StoredFiles

    def path(self, name: str) -> Path:
        return self.entry.path(name)

    def read(self, name: str) -> bytes:
        return self.entry.read(name)


@dataclass(frozen=True, eq=False)
class Loaded:
    """A built artifact loaded into this process; `handle` is whatever the backend's launcher needs."""

    built: Built
    handle: Any


class Launcher(Protocol):
    """What `ExecutionBackend.launcher` returns: launches every kernel of the artifact once.

    `args` follow `artifact.params` (an `ArrayArg` for a buffer, a number for a scalar), `dims` are the
    values of `artifact.symbolic_dims` in order; `stream` is the caller's, None for the default.
    """

    def __call__(self, args: Sequence[Any], dims: Sequence[int], stream: Any = None) -> Any: ...


@dataclass(frozen=True)
class FastPath:
    """What tilecraft.jit's generated fast path for torch tensors launches through.

    `launch(values, dims, stream)` takes raw values (a buffer's data pointer, a scalar's number) and a raw
    stream handle; `device` is the torch device index every tensor must be on; `stream(device)` is the
    handle of torch's current stream there. Every buffer's address needs the larger of the kernel's
    `LaunchPlan.alignment` (what codegen assumed) and `alignment`, what the backend's runtime needs
    itself (its `check_device` refuses the others on the checked path).
    """

    launch: Callable[[Sequence[Any], Sequence[int], Any], None]
    device: int
    stream: Callable[[int], Any]
    alignment: int = 1


@dataclass(frozen=True)
class NativeKernel:
    """One device kernel as the compiled launcher launches it (kind "kernel-params").

    `function` is the driver's function handle; `grid` three bytecode programs
    (`tilecraft.execution.native.program`) over the call's values; `slots` the kernel's parameters in
    ABI order, each (value index, struct code: "p" a pointer, "b".."Q" integers, "f" float, "d" double).
    A call's values are the function's parameters in order (a buffer's address, a scalar's number),
    then its symbolic dims.
    """

    function: int
    grid: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    block: tuple[int, int, int]
    dynamic_smem: int
    slots: tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class NativeLaunch:
    """How the compiled launcher (tilecraft/execution/native) launches a loaded artifact.

    `kind` "kernel-params": `address` is a `cuLaunchKernel`-shaped function, called for each of
    `kernels` on the stream `stream(device)` returns; a non-zero result calls `failed(k, rc, call)`,
    which retries or raises. `kind` "packed-call": `address` is `int32_t f(void **slots)` taking the
    addresses of `slots` (as in NativeKernel), run without the GIL; a non-zero result calls
    `failed(rc)`, which raises. `device` is the torch device index tensors must be on (-1: the host);
    `host_arrays`: numpy arrays are read too (host memory); `alignment`: the byte alignment every
    buffer needs; `keep_alive`: what must outlive the launcher (the loaded module).
    """

    kind: str
    address: int
    failed: Callable[..., None]
    device: int
    alignment: int = 1
    host_arrays: bool = False
    stream: Callable[[int], int] | None = None
    kernels: tuple[NativeKernel, ...] = ()
    slots: tuple[tuple[int, str], ...] = ()
    keep_alive: Any = None
