"""The shared base of execution backends that keep what they build in the content-addressed cache.

`CachedExecutionBackend` implements the protocol's `build` (`tilecraft/backend/execution.py`) through
the `KernelCache`: the key holds the IR hash, the artifact's content, the targets, the execution backend,
its toolchain version and build options, and the package version; a miss calls `compile` (artifact ->
files). It also writes and reads exports: the built files, the artifact as JSON plus source/binary files
(`artifact_files`), and `export.json`; nothing in it is unpickled. A subclass provides `compile`, `load`
and `launcher`, and overrides what the protocol's defaults do not fit.
"""

from __future__ import annotations

import sys
import threading
import time
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tilecraft import settings
from tilecraft.backend.execution import ExecutionBackend, ExecutionBackendSpec
from tilecraft.errors import BackendError
from tilecraft.runtime.launch import Built

if TYPE_CHECKING:
    from pathlib import Path

    from tilecraft.backend.context import BackendContext
    from tilecraft.execution.cache import CacheEntry, KernelCache
    from tilecraft.runtime.artifact import CompiledArtifact

EXPORT_FILE = "export.json"
LEGACY_ARTIFACT_FILE = "artifact.pickle"  # exports before JSON; refused, never loaded


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


class CachedExecutionBackend(ExecutionBackend):
    """An `ExecutionBackend` whose `build` goes through the shared `KernelCache` (`compile` on a miss),
    and that exports what it built and imports it back without a compiler."""

    def __init__(self, spec: ExecutionBackendSpec, cache: KernelCache | None = None) -> None:
        from tilecraft.execution.cache import KernelCache

        super().__init__(spec)
        self.cache = cache if cache is not None else KernelCache()
        self._build_lock = threading.Lock()

    def build_options(self, artifact: CompiledArtifact, ctx: BackendContext) -> Mapping[str, Any]:
        """Part of the cache key: options that change what `compile` produces (flags, ...)."""
        return {}

    @abstractmethod
    def compile(
        self, artifact: CompiledArtifact, ctx: BackendContext
    ) -> tuple[Mapping[str, bytes], Mapping[str, Any]]:
        """Produce the files to keep (name -> bytes) and JSON-able metadata; called on a cache miss."""

    def cache_key(self, artifact: CompiledArtifact, ctx: BackendContext) -> str:
        """Where `build` keeps the files of `artifact`: a hash of everything they depend on."""
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
                    files, meta = self._compile_telling(artifact, ctx)
                    entry = self.cache.put(key, files, meta)
        return Built(self.spec.name, key, artifact, entry)

    def _compile_telling(
        self, artifact: CompiledArtifact, ctx: BackendContext
    ) -> tuple[Mapping[str, bytes], Mapping[str, Any]]:
        """`compile`, said on stderr under TILECRAFT_VERBOSE before it starts (a device compiler may take
        minutes over a large kernel, with nothing else to show) and when it is done."""
        if not settings.get("TILECRAFT_VERBOSE"):
            return self.compile(artifact, ctx)
        what = f"{artifact.function_name} for {artifact.target} with {self.spec.name}"
        print(f"[tilecraft] building {what} (not in the cache) ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        files, meta = self.compile(artifact, ctx)
        print(f"[tilecraft] built {what} in {time.perf_counter() - start:.2f} s", file=sys.stderr, flush=True)
        return files, meta

    def export(self, built: Built, path: str | Path, out_idx: Sequence[int] = ()) -> Path:
        """Write a self-contained copy of `built` (its files, the artifact, metadata, the backend's C API
        and the `out_idx` a loaded Kernel allocates) to directory `path`."""
        import json
        from pathlib import Path

        from tilecraft.execution.cache import write_export
        from tilecraft.runtime.artifact import artifact_files

        files = {name: built.read(name) for name in built.entry.files}
        stored = {**artifact_files(built.artifact), **self.c_api(built)}
        clash = sorted(set(files) & {*stored, EXPORT_FILE})
        if clash:
            raise BackendError(
                f"execution backend {self.spec.name!r} keeps files named {clash}, which exports reserve for the "
                "artifact; rename them in its compile()"
            )
        files.update(stored)
        info = {"execution_backend": self.spec.name, "key": built.key, "out_idx": [int(i) for i in out_idx]}
        files[EXPORT_FILE] = json.dumps(info).encode()
        return write_export(Path(path), built.key, files, built.entry.meta)

    def import_built(self, path: str | Path) -> Built:
        """Load an export written by `export`, without compiling anything.

        The artifact is plain data (JSON), checked as it is read. The built files are loaded as they are:
        open exports only from sources you trust, as with any shared library.
        """
        from pathlib import Path

        from tilecraft.execution.cache import read_export
        from tilecraft.runtime.artifact import ArtifactDecodeError, artifact_from_files

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
    if not (isinstance(info, dict) and set(info) - {"out_idx"} == {"execution_backend", "key"}
            and isinstance(info["execution_backend"], str) and is_cache_key(info["key"])
            and all(type(i) is int for i in info.get("out_idx", ()))):  # fmt: skip
        raise BackendError(f"export at {path} has no valid {EXPORT_FILE}; export the kernel again")
    return info


def export_info(path: str | Path) -> dict[str, Any]:
    """What an export's `export.json` says: the execution backend that wrote it, its key and `out_idx`
    (verified with the rest of the export)."""
    from pathlib import Path

    from tilecraft.execution.cache import read_export

    return _export_info(read_export(Path(path)), path)
