"""The shared, content-addressed kernel cache.

Layout: `<root>/<key[:2]>/<key>/` holds the entry's files and `index.json`, which lists every file with
its SHA-256 plus the entry's metadata. A writer builds the whole entry in a private temporary directory
(each file written to a temporary name and `os.replace`d, `index.json` last), then renames that
directory into place in one atomic step; so an entry is either absent or complete, and the presence of
its index defines a hit. When two writers race for one key, the first rename wins and the other writer
uses the winner's entry. `get` verifies every checksum; a missing, corrupt or unparseable entry is a
miss and is deleted, never a crash.

`TILECRAFT_DISABLE_CACHE` turns lookups off; an unwritable cache directory warns once and the process
runs uncached. Either way `put` still returns an entry, kept in a private temporary directory, because
callers need the files on disk (to load a shared library, say).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tilecraft.errors import BackendError

INDEX = "index.json"
FORMAT_VERSION = 1
_KEY = re.compile(r"[0-9a-f]{16,128}")
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


@functools.cache
def package_fingerprint() -> str:
    """A digest of the compiler's own code (every .py, .h and .c file of the package): part of the
    artifact key, so a changed pass or header never serves a lowering made by the old one, even when
    the version number did not change (a development checkout, a patched install)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".h", ".c") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(*parts: Any) -> str:
    """SHA-256 over a canonical rendering of `parts` (IR hash, target string, execution backend,
    toolchain version, options, package version...). Mappings are order-independent."""
    return hashlib.sha256(_canonical(parts).encode()).hexdigest()


def _canonical(value: Any) -> str:
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, Path):
        return f"path:{str(value)!r}"
    if isinstance(value, Mapping):
        items = sorted((_canonical(k), _canonical(v)) for k, v in value.items())
        return "{" + ",".join(f"{k}={v}" for k, v in items) + "}"
    if isinstance(value, (tuple, list)):
        return "[" + ",".join(_canonical(v) for v in value) + "]"
    if isinstance(value, (set, frozenset)):
        return "set[" + ",".join(sorted(_canonical(v) for v in value)) + "]"
    # A repr may contain object addresses, which would make keys differ between processes.
    raise TypeError(
        f"cache_key: cannot key on {type(value).__name__}; use str, bytes, numbers, bool, None, Path, "
        "tuples/lists/sets of them or mappings (convert objects to a canonical string first)"
    )


@dataclass(frozen=True)
class CacheEntry:
    """A complete entry: its directory, files (name -> SHA-256) and metadata."""

    key: str
    directory: Path
    files: Mapping[str, str]
    meta: Mapping[str, Any]

    def path(self, name: str) -> Path:
        if name not in self.files:
            raise BackendError(
                f"cache entry {self.key[:16]} has no file {name!r}; files: {', '.join(self.files)}"
            )
        return self.directory / name

    def read(self, name: str) -> bytes:
        return self.path(name).read_bytes()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_files(files: Mapping[str, bytes]) -> None:
    for name, data in files.items():
        if not _FILE_NAME.fullmatch(name) or name == INDEX:
            raise BackendError(
                f"cache file name {name!r} must match {_FILE_NAME.pattern} and not be {INDEX!r}"
            )
        if not isinstance(data, bytes):
            raise BackendError(f"cache file {name!r} must be bytes, got {type(data).__name__}")


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.urandom(8).hex()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_entry(directory: Path, key: str, files: Mapping[str, bytes], meta: Mapping[str, Any]) -> CacheEntry:
    """Write `files` and then the index into `directory` (which must exist); returns the entry."""
    _check_files(files)
    try:
        index = json.dumps({"version": FORMAT_VERSION, "key": key, "meta": dict(meta),
                            "files": {n: _sha256(d) for n, d in files.items()}}, sort_keys=True)  # fmt: skip
    except TypeError as err:
        raise BackendError(f"cache metadata must be JSON-serializable: {err}") from None
    for name, data in files.items():
        _atomic_write(directory / name, data)
    _atomic_write(directory / INDEX, index.encode())  # last: its presence defines a complete entry
    return read_entry(directory, key)


def read_entry(directory: Path, key: str | None = None) -> CacheEntry | None:
    """The entry in `directory` if its index parses and every checksum matches, else None."""
    try:
        index = json.loads((directory / INDEX).read_bytes())
        if index["version"] != FORMAT_VERSION or (key is not None and index["key"] != key):
            return None
        files = dict(index["files"])
        for name, digest in files.items():
            if _sha256((directory / name).read_bytes()) != digest:
                return None
        return CacheEntry(
            index["key"], directory, MappingProxyType(files), MappingProxyType(dict(index["meta"]))
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _remove(directory: Path) -> None:
    """Move a directory out of sight first (atomic), then delete it at leisure."""
    trash = directory.with_name(f".trash-{os.urandom(8).hex()}")
    try:
        os.rename(directory, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)


class _Scratch:
    """A per-process temporary directory for entries when the cache is off; removed at exit."""

    def __init__(self) -> None:
        self.root: Path | None = None
        self.lock = threading.Lock()

    def new_dir(self) -> Path:
        with self.lock:
            if self.root is None:
                self.root = Path(tempfile.mkdtemp(prefix="tilecraft-uncached-"))
                atexit.register(shutil.rmtree, self.root, True)
        return Path(tempfile.mkdtemp(dir=self.root))


_SCRATCH = _Scratch()
_warned_roots: set[Path] = set()


class KernelCache:
    """The disk cache. `root` and `enabled` default to the settings, read at each call."""

    def __init__(self, root: str | Path | None = None, enabled: bool | None = None) -> None:
        self._root = Path(root) if root is not None else None
        self._enabled = enabled

    @property
    def root(self) -> Path:
        from tilecraft import settings

        return self._root if self._root is not None else settings.get("TILECRAFT_CACHE_DIR")

    @property
    def enabled(self) -> bool:
        from tilecraft import settings

        return self._enabled if self._enabled is not None else not settings.get("TILECRAFT_DISABLE_CACHE")

    def entry_dir(self, key: str) -> Path:
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise BackendError(f"cache key {key!r} must be a hex digest from cache_key()")
        return self.root / key[:2] / key

    def get(self, key: str) -> CacheEntry | None:
        """The entry for `key`, or None on a miss (a broken entry counts as a miss and is deleted)."""
        directory = self.entry_dir(key)
        if not self.enabled or not directory.exists():
            return None
        entry = read_entry(directory, key)
        if entry is None:
            _remove(directory)
        return entry

    def put(self, key: str, files: Mapping[str, bytes], meta: Mapping[str, Any]) -> CacheEntry:
        """Store an entry atomically and return it; uncached (a private temporary entry) when disabled
        or when the cache directory is not writable."""
        final = self.entry_dir(key)
        if not self.enabled:
            return write_entry(_SCRATCH.new_dir(), key, files, meta)
        staging = None
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".tmp-{key[:16]}-", dir=final.parent))
            staged = write_entry(staging, key, files, meta)
        except OSError as err:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            self._warn_unwritable(err)
            return write_entry(_SCRATCH.new_dir(), key, files, meta)
        return self._commit(staged, final)

    def _commit(self, staged: CacheEntry, final: Path) -> CacheEntry:
        for _ in range(3):
            try:
                os.rename(staged.directory, final)
                return replace(staged, directory=final)
            except OSError:
                pass  # `final` exists: another writer won the race, or a broken entry is in the way
            existing = read_entry(final, staged.key)
            if existing is not None:
                shutil.rmtree(staged.directory, ignore_errors=True)
                return existing
            _remove(final)
        # A persistent conflict: the staged entry is complete, so use it where it is.
        return staged

    def _warn_unwritable(self, err: OSError) -> None:
        if self.root in _warned_roots:
            return
        _warned_roots.add(self.root)
        warnings.warn(
            f"kernel cache directory {self.root} is not writable ({err}); running uncached. "
            "Set TILECRAFT_CACHE_DIR to a writable directory, or TILECRAFT_DISABLE_CACHE=1 to silence this.",
            RuntimeWarning,
            stacklevel=3,
        )

    def size(self) -> tuple[int, int]:
        """(number of entries, total bytes) under the root, for `tilecraft doctor`."""
        entries = total = 0
        if not self.root.is_dir():
            return 0, 0
        for index in self.root.glob(f"??/*/{INDEX}"):
            entries += 1
            total += sum(f.stat().st_size for f in index.parent.iterdir() if f.is_file())
        return entries, total


def write_export(path: Path, key: str, files: Mapping[str, bytes], meta: Mapping[str, Any]) -> Path:
    """Write an export directory (the entry format); replaces an earlier export at `path`."""
    if path.exists() and not (path / INDEX).exists():
        raise BackendError(
            f"cannot export to {path}: it exists and is not a tilecraft export; choose a new path"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    write_entry(staging, key, files, meta)
    if path.exists():
        _remove(path)
    os.rename(staging, path)
    return path


def read_export(path: Path) -> CacheEntry:
    """The export at `path`, verified; the error says what is wrong with it."""
    entry = read_entry(path)
    if entry is None:
        raise BackendError(
            f"{path} is not a valid tilecraft export (missing or corrupt {INDEX} or files); "
            "export the kernel again"
        )
    return entry
