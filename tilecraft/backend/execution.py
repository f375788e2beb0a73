"""The execution-backend protocol: how one is selected (`ExecutionBackendSpec`) and every method the
JIT, the profiler and the autotuner call on it (`ExecutionBackend`). What it makes (`Built`, `Loaded`,
`FastPath`...) and the arrays and clocks it speaks in are runtime types (`tilecraft.runtime`).

The spec is cheap and declarative: a target backend lists the specs that can consume its output, in
`auto` order. Its availability probe runs lazily, once, and is cached. The implementation class is named
as "module.path:ClassName" and imported only when it is first used (`execution_registry.py`).

`ExecutionBackend` is the one interface the layers above talk to: `Kernel` (tilecraft/jit) checks, reads
and allocates arrays through it and launches through its launcher, the profiler asks it for a timer,
the autotuner for its toolchain version. Nothing is looked up by name or probed with `getattr`: a
member a backend does not need has a default here. The defaults fit a backend whose arrays are host
memory and whose launches return when their work is done; a device backend overrides what differs.
The shared base that builds through the content-addressed cache, and exports, is
`tilecraft.execution.CachedExecutionBackend`.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tilecraft.errors import ArgumentError, BackendError
from tilecraft.runtime.devices import DLPACK_HOST, BenchmarkDevice, host_device

if TYPE_CHECKING:
    from pathlib import Path

    from tilecraft.backend.context import BackendContext
    from tilecraft.backend.target import Target
    from tilecraft.ir.dtype import DataType
    from tilecraft.runtime.arrays import ArrayArg, ArrayReader
    from tilecraft.runtime.artifact import CompiledArtifact
    from tilecraft.runtime.launch import Built, FastPath, Launcher, Loaded, NativeLaunch
    from tilecraft.runtime.plan import LaunchPlan
    from tilecraft.runtime.timing import DeviceTimer, KernelClock

_NAME = re.compile(r"[a-z][a-z0-9_-]*")
_IMPLEMENTATION = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
# Guards every spec's cached probe result: a probe runs once even when threads ask at the same time.
# Reentrant, for a probe that asks another spec.
_PROBE_LOCK = threading.RLock()


# The array library of a new output when a call passes no array to take it from: "numpy", or "torch"
# (set by front ends whose programs expect torch tensors back; one process-wide setting).
OUTPUTS_WITHOUT_ARRAYS = ["numpy"]


@dataclass(frozen=True)
class Availability:
    """Whether an execution backend can run here; when not, why and what to do about it."""

    ok: bool
    reason: str = ""
    fix: str = ""

    def describe(self) -> str:
        if self.ok:
            return "available"
        return f"unavailable: {self.reason or 'no reason given'}" + (
            f" (fix: {self.fix})" if self.fix else ""
        )


def _probe(probe: Callable[[], Availability], name: str) -> Availability:
    try:
        result = probe()
    except Exception as err:  # a crashing probe means "unavailable", never a crash of selection
        return Availability(
            False, f"availability probe raised {type(err).__name__}: {err}", "report this bug"
        )
    if not isinstance(result, Availability):
        return Availability(
            False, f"availability probe of {name!r} returned {result!r}", "return an Availability"
        )
    return result


@dataclass(frozen=True)
class ExecutionBackendSpec:
    """How to select an execution backend and what it consumes; no toolchain is touched to make one.

    `device_types` are the DLPack device type codes (`runtime/devices.py`) of the arrays its launcher
    reads, host memory unless said otherwise; `ExecutionBackend.check_device` refuses arrays elsewhere.
    """

    name: str
    availability: Callable[[], Availability]
    implementation: str
    consumes: tuple[str, ...]
    needs_host_codegen: bool = False
    eager_device_compile: bool = False
    target_predicate: Callable[[Target], bool] | None = None
    device_types: tuple[int, ...] = (DLPACK_HOST,)
    doc: str = ""
    # The plugin API the spec was written for (tilecraft.backend.API_VERSION); required of a spec
    # installed through the `tilecraft.execution_backends` entry-point group, checked whenever given.
    api_version: int | None = None
    _cache: list[Availability] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from tilecraft.backend.formats import check_formats

        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise BackendError(f"execution backend name {self.name!r} must match {_NAME.pattern}")
        if not isinstance(self.implementation, str) or not _IMPLEMENTATION.fullmatch(self.implementation):
            raise BackendError(
                f"execution backend {self.name!r}: implementation {self.implementation!r} must be "
                "'module.path:ClassName'"
            )
        object.__setattr__(self, "consumes", check_formats(f"execution backend {self.name!r}", self.consumes))
        object.__setattr__(self, "device_types", _device_types(self.name, self.device_types))
        if not self.consumes:
            raise BackendError(f"execution backend {self.name!r} must consume at least one artifact format")
        if not callable(self.availability):
            raise BackendError(f"execution backend {self.name!r}: availability must be a callable probe")
        if self.api_version is not None:
            from tilecraft.backend.api import api_version_problem
            from tilecraft.backend.errors import PluginAPIError

            problem = api_version_problem(f"execution backend {self.name!r}", self.api_version)
            if problem:
                raise PluginAPIError(problem)

    def __hash__(self) -> int:
        return hash(self.name)

    def check(self) -> Availability:
        """The availability probe's result, computed on first call and cached."""
        with _PROBE_LOCK:
            if not self._cache:
                self._cache.append(_probe(self.availability, self.name))
            return self._cache[0]

    def reset_availability(self) -> None:
        """Forget the cached probe result (tests, or after installing a toolchain)."""
        with _PROBE_LOCK:
            self._cache.clear()

    def matches(self, target: Target) -> bool:
        """Whether this backend is declared for `target` (no predicate: every target of the manifest)."""
        return self.target_predicate is None or bool(self.target_predicate(target))


def _device_types(name: str, codes: Any) -> tuple[int, ...]:
    found = tuple(codes) if isinstance(codes, (tuple, list)) else None
    if not found or not all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in found):
        raise BackendError(
            f"execution backend {name!r}: device_types must be a non-empty tuple of DLPack device type "
            f"codes (positive ints, e.g. ({DLPACK_HOST},) for host memory), got {codes!r}"
        )
    return found


class ExecutionBackend(ABC):
    """Build -> Load -> Launch of artifacts of the formats its spec consumes, and what a `Kernel` needs
    around a launch: reading, checking and allocating its device's arrays, copies, waiting, timing.

    A subclass implements `build`, `load` and `launcher`; everything else has a default for host
    arrays and launches that return when done. One object exists per registered spec
    (`execution_registry.implementation`), shared by every kernel and thread.
    """

    array_readers: tuple[ArrayReader, ...] = ()
    """Readers of this backend's own device arrays, tried before tilecraft's numpy, torch, DLPack and
    array-interface readers (each returns an ArrayArg, or None for an object it does not know)."""

    def __init__(self, spec: ExecutionBackendSpec) -> None:
        self.spec = spec

    def available(self) -> Availability:
        """Whether it can run here (the spec's cached probe)."""
        return self.spec.check()

    def toolchain_version(self) -> str:
        """The compiler or runtime version that what it builds depends on (part of cache keys)."""
        return ""

    @abstractmethod
    def build(self, artifact: CompiledArtifact, ctx: BackendContext) -> Built:
        """The built files for `artifact` (from a cache when it keeps one)."""

    @abstractmethod
    def load(self, built: Built) -> Loaded:
        """Load built files into this process."""

    @abstractmethod
    def launcher(self, loaded: Loaded) -> Launcher:
        """A callable that launches the loaded kernels (see `Launcher` for its arguments)."""

    def fast_path(self, loaded: Loaded) -> FastPath | None:
        """A raw launcher for torch tensors on one device, or None (the default: calls take the full path)."""
        return None

    def native_launch(self, loaded: Loaded) -> NativeLaunch | None:
        """How the compiled launcher launches `loaded`, or None (the default: calls take the Python path)."""
        return None

    def compiled_launcher(self, loaded: Loaded, plan: LaunchPlan, miss: Any) -> Callable[..., Any] | None:
        """`call(*args)`: checks a call against `plan` (its outputs allocated, or every parameter given),
        allocates, launches and returns the outputs, or returns `miss` for any call the plan's rules do
        not accept; None when this backend has no compiled launcher (the default) or the kernel cannot
        have one. (The compiled launcher, tilecraft/execution/native, makes one from `plan` and
        `native_launch(loaded)`: `native.compiled_launcher`.)"""
        return None

    def synchronize(self, loaded: Loaded) -> None:  # noqa: B027 - a no-op is right for synchronous launches
        """Wait for the kernels launched through `loaded` (launches that return only when done need nothing)."""

    def timer(self, target: Target, flush_bytes: int) -> DeviceTimer:
        """How the profiler times launches on `target`'s device, and makes its caches cold between
        repetitions (writing `flush_bytes`). The default, the host's wall clock without a flush, is right
        for launches that return when their work is done; a backend whose launches are asynchronous must
        return a timer that waits for them (or reads device-side clocks)."""
        from tilecraft.runtime.timing import DeviceTimer

        return DeviceTimer()

    def kernel_clock(self, target: Target, flush_bytes: int) -> KernelClock:
        """The device's own record of how long each kernel ran, for `do_bench(backend="cupti")`. The
        default: none, which is an error saying to time with `backend="event"` (the timer above)."""
        from tilecraft.runtime.timing import KernelClockUnavailable

        raise KernelClockUnavailable(
            f"execution backend {self.spec.name!r} keeps no record of its kernels' run times, so "
            f"do_bench(backend='cupti') cannot time {target}; use backend='event' (this device's timer, "
            "which counts the launch too)"
        )

    benchmark_resource: str | None = None
    """The cluster resource, as schedulers such as Ray name it ("GPU"), of which a process timing this
    backend's kernels holds one unit; None: it needs a processor core only."""

    def benchmark_devices(self, target: Target) -> tuple[BenchmarkDevice, ...]:
        """The devices an autotuning of `target` times candidates on, one benchmark worker process each
        (all of one model, so their latencies compare). The default: the host, once."""
        return (host_device(),)

    def accepts_device(self, arg: ArrayArg) -> bool:
        """Whether the launcher reads memory of `arg`'s DLPack device type (the spec's `device_types`)."""
        return arg.device_type in self.spec.device_types

    def check_device(self, arg: ArrayArg, name: str) -> None:
        """Refuse parameter `name`'s array when the launcher cannot read where it lives (the device index,
        where it matters, is the launcher's to check); the error says what to pass."""
        if not self.accepts_device(arg):
            accepted = ", ".join(str(code) for code in self.spec.device_types)
            raise ArgumentError(
                f"parameter {name!r} is on {arg.device}, but execution backend {self.spec.name!r} reads arrays "
                f"of DLPack device type {accepted} only; pass an array there"
            )

    def empty(self, reference: ArrayArg | None, shape: tuple[int, ...], dtype: DataType) -> Any:
        """A new output array beside `reference` (the first array of the call, None if there is none):
        by default host memory from the same library (torch or numpy). With no array in the call, numpy;
        a torch tensor once OUTPUTS_WITHOUT_ARRAYS says so (the TileLang import hook does: TileLang's
        kernels return torch tensors and its programs call torch methods on them)."""
        if reference is None:
            import importlib.util

            torch_wanted = OUTPUTS_WITHOUT_ARRAYS[0] == "torch" and importlib.util.find_spec("torch") is not None
        else:
            torch_wanted = reference.library == "torch"
        if torch_wanted:
            import torch

            return torch.empty(shape, dtype=getattr(torch, dtype.torch_name))
        import numpy as np

        from tilecraft.ir import dtype as dt

        return np.empty(shape, dtype=dt.numpy_dtype(dtype))

    def to_device(self, array: Any) -> Any:
        """A copy of a host (numpy) array where this backend's kernels can read it (tests and tools)."""
        return array

    def to_host(self, array: Any) -> Any:
        """A numpy copy of an array this backend's kernels wrote."""
        import numpy as np

        return np.asarray(array)

    def c_api(self, built: Built) -> Mapping[str, bytes]:
        """Files an export adds so a C program can load and call the kernel without Python (a header and
        a loader source); none by default."""
        return {}

    def export(self, built: Built, path: str | Path, out_idx: Sequence[int] = ()) -> Path:
        """Write a self-contained copy of `built` to directory `path`, loadable by `import_built`
        (`out_idx`: the outputs a Kernel loaded from it allocates, kept for `tilecraft.load`)."""
        raise BackendError(f"execution backend {self.spec.name!r} cannot export built kernels")

    def import_built(self, path: str | Path) -> Built:
        """Read an export written by `export`, without compiling anything."""
        raise BackendError(f"execution backend {self.spec.name!r} cannot import exported kernels")
