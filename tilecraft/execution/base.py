"""The execution-backend interface: a spec to select by, and an implementation that builds, loads and
launches a `CompiledArtifact`.

The spec (`ExecutionBackendSpec`) is cheap and declarative: a target backend lists the specs that can
consume its output, in `auto` order. Its availability probe runs lazily, once, and is cached. The
implementation class is named as "module.path:ClassName" and imported only when it is first used.

An implementation subclasses `ExecutionBackend` and provides `compile` (artifact -> files), `load` and
`launcher`; `build` (through the shared cache), `export` and `import_built` come from the base class.
An export holds the built files, the artifact as JSON plus source/binary files (`artifact_files`), and
`export.json`; nothing in it is unpickled.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tilecraft.errors import BackendError

if TYPE_CHECKING:
    from pathlib import Path

    from tilecraft.backend.artifact import CompiledArtifact
    from tilecraft.backend.context import BackendContext
    from tilecraft.backend.target import Target
    from tilecraft.execution.cache import CacheEntry, KernelCache
    from tilecraft.execution.timing import DeviceTimer

_NAME = re.compile(r"[a-z][a-z0-9_-]*")
_IMPLEMENTATION = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
EXPORT_FILE = "export.json"
LEGACY_ARTIFACT_FILE = "artifact.pickle"  # exports before JSON; refused, never loaded
# Guards every spec's cached probe result: a probe runs once even when threads ask at the same time.
# Reentrant, for a probe that asks another spec.
_PROBE_LOCK = threading.RLock()


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
    """How to select an execution backend and what it consumes; no toolchain is touched to make one."""

    name: str
    availability: Callable[[], Availability]
    implementation: str
    consumes: tuple[str, ...]
    needs_host_codegen: bool = False
    eager_device_compile: bool = False
    target_predicate: Callable[[Target], bool] | None = None
    device_types: tuple[str, ...] = ()
    doc: str = ""
    # The plugin API the spec was written for (tilecraft.backend.API_VERSION); required of a spec
    # installed through the `tilecraft.execution_backends` entry-point group, checked whenever given.
    api_version: int | None = None
    _cache: list[Availability] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Imported here: tilecraft.backend imports this module, so a module-level import would be circular.
        from tilecraft.backend.api import api_version_problem
        from tilecraft.backend.errors import PluginAPIError
        from tilecraft.backend.formats import check_formats

        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise BackendError(f"execution backend name {self.name!r} must match {_NAME.pattern}")
        if not isinstance(self.implementation, str) or not _IMPLEMENTATION.fullmatch(self.implementation):
            raise BackendError(
                f"execution backend {self.name!r}: implementation {self.implementation!r} must be "
                "'module.path:ClassName'"
            )
        object.__setattr__(self, "consumes", check_formats(f"execution backend {self.name!r}", self.consumes))
        object.__setattr__(self, "device_types", tuple(self.device_types))
        if not self.consumes:
            raise BackendError(f"execution backend {self.name!r} must consume at least one artifact format")
        if not callable(self.availability):
            raise BackendError(f"execution backend {self.name!r}: availability must be a callable probe")
        if self.api_version is not None:
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


@dataclass(frozen=True, eq=False)
class Built:
    """A built artifact: the files an execution backend produced, kept in a (cache) entry on disk."""

    execution_backend: str
    key: str
    artifact: CompiledArtifact
    entry: CacheEntry

    def path(self, name: str) -> Path:
        return self.entry.path(name)

    def read(self, name: str) -> bytes:
        return self.entry.read(name)


@dataclass(frozen=True, eq=False)
class Loaded:
    """A built artifact loaded into this process; `handle` is whatever the backend's launcher needs."""

    built: Built
    handle: Any


def artifact_content_hash(artifact: CompiledArtifact) -> str:
    """A hash of everything codegen produced, so options that change the code change the build."""
    import hashlib

    digest = hashlib.sha256()
    for fmt in sorted(artifact.device_sources):
        digest.update(fmt.encode() + b"\0" + artifact.device_sources[fmt].encode() + b"\0")
    for fmt in sorted(artifact.device_binaries):
        digest.update(fmt.encode() + b"\0" + artifact.device_binaries[fmt] + b"\0")
    digest.update((artifact.host_source or "").encode() + b"\0" + repr(artifact.extra).encode())
    return digest.hexdigest()


class ExecutionBackend(ABC):
    """Build -> Load -> Launch for artifacts of the formats its spec consumes."""

    def __init__(self, spec: ExecutionBackendSpec, cache: KernelCache | None = None) -> None:
        from tilecraft.execution.cache import KernelCache

        self.spec = spec
        self.cache = cache if cache is not None else KernelCache()
        self._build_lock = threading.Lock()

    def available(self) -> Availability:
        return self.spec.check()

    def toolchain_version(self) -> str:
        """Part of the cache key: the compiler/runtime version whose output `compile` depends on."""
        return ""

    def build_options(self, artifact: CompiledArtifact, ctx: BackendContext) -> Mapping[str, Any]:
        """Part of the cache key: options that change what `compile` produces (flags, ...)."""
        return {}

    @abstractmethod
    def compile(
        self, artifact: CompiledArtifact, ctx: BackendContext
    ) -> tuple[Mapping[str, bytes], Mapping[str, Any]]:
        """Produce the files to keep (name -> bytes) and JSON-able metadata; called on a cache miss."""

    @abstractmethod
    def load(self, built: Built) -> Loaded:
        """Load built files into this process."""

    @abstractmethod
    def launcher(self, loaded: Loaded) -> Callable[..., Any]:
        """A callable that launches the kernel with the user's arguments."""

    def synchronize(self, loaded: Loaded) -> None:  # noqa: B027 - a no-op is right for synchronous launches
        """Wait for the kernels launched through `loaded` (launches that return only when done need nothing)."""

    def timer(self, target: Target, flush_bytes: int) -> DeviceTimer:
        """How the profiler times launches on `target`'s device, and makes its caches cold between
        repetitions (writing `flush_bytes`). The default, the host's wall clock without a flush, is right
        for launches that return when their work is done; a backend whose launches are asynchronous must
        return a timer that waits for them (or reads device-side clocks)."""
        from tilecraft.execution.timing import DeviceTimer

        return DeviceTimer()

    def to_device(self, array: Any) -> Any:
        """A copy of a host (numpy) array where this backend's kernels can read it (tests and tools)."""
        return array

    def to_host(self, array: Any) -> Any:
        """A numpy copy of an array this backend's kernels wrote."""
        import numpy as np

        return np.asarray(array)

    def cache_key(self, artifact: CompiledArtifact, ctx: BackendContext) -> str:
        from tilecraft import __version__
        from tilecraft.execution.cache import cache_key

        return cache_key(
            artifact.ir_hash, artifact_content_hash(artifact), str(artifact.target), str(ctx.target_host),
            self.spec.name, self.toolchain_version(), dict(self.build_options(artifact, ctx)), __version__,
        )  # fmt: skip

    def build(self, artifact: CompiledArtifact, ctx: BackendContext) -> Built:
        """The built files for `artifact`: from the cache on a hit, else compiled and stored."""
        key = self.cache_key(artifact, ctx)
        entry = self.cache.get(key)
        if entry is None:
            with self._build_lock:
                entry = self.cache.get(key)
                if entry is None:
                    files, meta = self.compile(artifact, ctx)
                    entry = self.cache.put(key, files, meta)
        return Built(self.spec.name, key, artifact, entry)

    def export(self, built: Built, path: str | Path) -> Path:
        """Write a self-contained copy of `built` (its files, the artifact, metadata) to directory `path`."""
        import json
        from pathlib import Path

        from tilecraft.backend.artifact import artifact_files
        from tilecraft.execution.cache import write_export

        files = {name: built.read(name) for name in built.entry.files}
        stored = artifact_files(built.artifact)
        clash = sorted(set(files) & {*stored, EXPORT_FILE})
        if clash:
            raise BackendError(
                f"execution backend {self.spec.name!r} keeps files named {clash}, which exports reserve for the "
                "artifact; rename them in its compile()"
            )
        files.update(stored)
        files[EXPORT_FILE] = json.dumps({"execution_backend": self.spec.name, "key": built.key}).encode()
        return write_export(Path(path), built.key, files, built.entry.meta)

    def import_built(self, path: str | Path) -> Built:
        """Load an export written by `export`, without compiling anything.

        The artifact is plain data (JSON), checked as it is read. The built files are loaded as they are:
        open exports only from sources you trust, as with any shared library.
        """
        from pathlib import Path

        from tilecraft.backend.artifact import ArtifactDecodeError, artifact_from_files
        from tilecraft.execution.cache import read_export

        entry = read_export(Path(path))
        info = _export_info(entry, path)
        if info["execution_backend"] != self.spec.name:
            raise BackendError(
                f"export at {path} was built by execution backend {info['execution_backend']!r}, "
                f"not {self.spec.name!r}; import it with that execution backend"
            )
        try:
            artifact = artifact_from_files(entry.read)
        except ArtifactDecodeError as err:
            if LEGACY_ARTIFACT_FILE in entry.files:
                raise BackendError(
                    f"export at {path} was written by an older tilecraft that pickled the artifact; pickles are "
                    "no longer loaded (unpickling can run any code); export the kernel again"
                ) from None
            raise BackendError(f"export at {path} is not valid ({err}); export the kernel again") from None
        return Built(self.spec.name, info["key"], artifact, entry)


def _export_info(entry: CacheEntry, path: Any) -> dict[str, str]:
    """The checked content of an export's `export.json`."""
    import json

    from tilecraft.execution.cache import is_cache_key

    try:
        info = json.loads(entry.read(EXPORT_FILE))
    except (BackendError, OSError, ValueError):
        info = None
    if not (isinstance(info, dict) and set(info) == {"execution_backend", "key"}
            and isinstance(info["execution_backend"], str) and is_cache_key(info["key"])):  # fmt: skip
        raise BackendError(f"export at {path} has no valid {EXPORT_FILE}; export the kernel again")
    return info
