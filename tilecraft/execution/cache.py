"""The shared, content-addressed kernel cache.

Layout: `<root>/<key[:2]>/<key>/` holds the entry's files and `index.json`, which lists every file with
its SHA-256 plus the entry's metadata. A writer builds the whole entry in a private staging directory
`.tmp-<key>-<host>-<pid>-*` (each file written to a temporary name and `os.replace`d, `index.json` last),
then renames that directory into place in one atomic step; so an entry is either absent or complete, and
the presence of its index defines a hit. When two writers race for one key, the first rename wins and
the other writer uses the winner's entry. `get` validates the index (exact keys and types, at least one
file) and verifies every checksum; anything else is a miss and the entry is deleted, never a crash.

Opening the cache (the first `get` or `put` of a process) sweeps what killed processes left behind:
`.trash-*` directories (entries half deleted) and `.tmp-*` staging directories whose writer is gone
(its pid is dead on this host, or it is older than an hour).

Trust: whoever can write into the cache can make this process load their code (a cached shared library
is loaded as it is). So the cache directory and each `<key[:2]>` directory must belong to this user (or
root) and must not be writable by others unless sticky; otherwise `CacheSecurityError` names the path and
the fix. Entries hold only data (JSON, sources, binaries); nothing in the cache is unpickled.

`TILECRAFT_DISABLE_CACHE=1` reads and writes nothing in the cache directory. A cache directory that
cannot be used (missing and not creatable, read-only, a regular file) warns once and the process runs
uncached. Either way `put` still returns an entry, kept in a private temporary directory, because
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
import socket
import stat
import tempfile
import threading
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tilecraft.errors import BackendError

INDEX = "index.json"
FORMAT_VERSION = 2  # 2: artifacts are stored as JSON, never pickled; version-1 entries are misses
STALE_AFTER_S = 3600.0  # a staging directory this old is abandoned even if its pid looks alive
_KEY = re.compile(r"[0-9a-f]{16,128}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_SHARD = re.compile(r"[0-9a-f]{2}")
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_INDEX_KEYS = {"version", "key", "meta", "files"}


class CacheSecurityError(BackendError):
    """The cache directory could be written by another user, who could then run code in this process."""


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


def is_cache_key(key: Any) -> bool:
    """Whether `key` has the form `cache_key` produces (safe to use as a path component)."""
    return isinstance(key, str) and _KEY.fullmatch(key) is not None


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
        if not isinstance(name, str) or not _FILE_NAME.fullmatch(name) or name == INDEX:
            raise BackendError(
                f"cache file name {name!r} must match {_FILE_NAME.pattern} and not be {INDEX!r}"
            )
        if not isinstance(data, bytes):
            raise BackendError(f"cache file {name!r} must be bytes, got {type(data).__name__}")
    if not files:
        raise BackendError("a cache entry needs at least one file")


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.urandom(8).hex()}.tmp")
    # O_EXCL never follows a planted link; 0o644 keeps the file unwritable by others whatever the umask.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, path)


def _index_bytes(key: str, files: Mapping[str, bytes], meta: Mapping[str, Any]) -> bytes:
    _check_files(files)
    try:
        index = json.dumps({"version": FORMAT_VERSION, "key": key, "meta": dict(meta),
                            "files": {n: _sha256(d) for n, d in files.items()}}, sort_keys=True)  # fmt: skip
    except (TypeError, ValueError) as err:
        raise BackendError(f"cache metadata must be JSON-serializable: {err}") from None
    return index.encode()


def write_entry(directory: Path, key: str, files: Mapping[str, bytes], meta: Mapping[str, Any]) -> CacheEntry:
    """Write `files` and then the index into `directory` (which must exist); returns the entry."""
    index = _index_bytes(key, files, meta)  # checked before anything is written
    for name, data in files.items():
        _atomic_write(directory / name, data)
    _atomic_write(directory / INDEX, index)  # last: its presence defines a complete entry
    entry = read_entry(directory, key)
    if entry is None:
        raise OSError(f"the entry written to {directory} does not read back")
    return entry


def _read_regular(path: Path) -> bytes:
    """The bytes of a regular file; a link, FIFO or device raises OSError instead of being read (a FIFO
    would block forever)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        return file.read()


def _valid_index(index: Any, key: str | None) -> bool:
    """Whether `index` has exactly the expected keys and types (and the expected key, when given)."""
    if not isinstance(index, dict) or set(index) != _INDEX_KEYS:
        return False
    files, entry_key = index["files"], index["key"]
    if type(index["version"]) is not int or index["version"] != FORMAT_VERSION:
        return False
    if (
        not isinstance(entry_key, str)
        or not _KEY.fullmatch(entry_key)
        or (key is not None and entry_key != key)
    ):
        return False
    if not isinstance(index["meta"], dict) or not isinstance(files, dict) or not files:
        return False
    return all(
        isinstance(d, str) and _DIGEST.fullmatch(d) and _FILE_NAME.fullmatch(n) and n != INDEX
        for n, d in files.items()
    )


def read_entry(directory: Path, key: str | None = None) -> CacheEntry | None:
    """The entry in `directory` if its index is valid and every checksum matches, else None."""
    try:
        index = json.loads(_read_regular(directory / INDEX))
        if not _valid_index(index, key):
            return None
        files = dict(index["files"])
        for name, digest in files.items():
            if _sha256(_read_regular(directory / name)) != digest:
                return None
        return CacheEntry(index["key"], directory, MappingProxyType(files), MappingProxyType(index["meta"]))
    except (OSError, ValueError, RecursionError):  # RecursionError: absurdly nested JSON
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
_swept_roots: set[Path] = set()


def check_private(path: Path) -> None:
    """Raise CacheSecurityError unless directory `path` belongs to this user (or root) and no other
    user can write into it (no group/other write bit, or the sticky bit as on /tmp)."""
    if not hasattr(os, "geteuid"):  # no POSIX owners and modes to check (Windows)
        return
    info = os.stat(path)
    me = os.geteuid()
    if info.st_uid not in (me, 0):
        raise CacheSecurityError(
            f"kernel cache directory {path} belongs to another user (uid {info.st_uid}), who could make this "
            f"process run their code; `chown {me} {path}`, or set TILECRAFT_CACHE_DIR to a directory of "
            "your own (TILECRAFT_DISABLE_CACHE=1 runs uncached)"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
        raise CacheSecurityError(
            f"kernel cache directory {path} is writable by other users (mode {stat.filemode(info.st_mode)}), "
            f"who could make this process run their code; `chmod go-w {path}`, or set TILECRAFT_CACHE_DIR "
            "to a private directory (TILECRAFT_DISABLE_CACHE=1 runs uncached)"
        )


@functools.cache
def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _staging_prefix(key: str) -> str:
    return f".tmp-{key[:16]}-{_host_tag()}-{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, owned by someone else
        return True
    return True


def _writer_dead(name: str) -> bool:
    """Whether the staging directory `name` (`.tmp-<key>-<host>-<pid>-<random>`) was made by a process
    of this host that no longer runs."""
    parts = name.split("-")
    if len(parts) != 5 or parts[2] != _host_tag() or not re.fullmatch(r"[0-9]{1,10}", parts[3]):
        return False
    pid = int(parts[3])
    return 0 < pid < 2**31 and not _pid_alive(pid)  # pid 0 would mean "my process group" to kill()


def _is_stale(staging: Path) -> bool:
    """Whether a `.tmp-*` staging directory was abandoned: its writer's pid is dead on this host, or it
    is older than STALE_AFTER_S (a writer on another host, or a name of another form)."""
    if _writer_dead(staging.name):
        return True
    try:
        return time.time() - staging.lstat().st_mtime > STALE_AFTER_S
    except OSError:
        return False


def sweep(root: Path) -> None:
    """Remove what killed processes left in `root`: `.trash-*` and abandoned `.tmp-*` directories."""
    try:
        shards = [p for p in root.iterdir() if _SHARD.fullmatch(p.name) and not p.is_symlink() and p.is_dir()]
    except OSError:
        return
    for shard in shards:
        try:
            children = list(shard.iterdir())
        except OSError:
            continue
        for child in children:
            if child.name.startswith(".trash-") or (child.name.startswith(".tmp-") and _is_stale(child)):
                shutil.rmtree(child, ignore_errors=True)


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
        if not is_cache_key(key):
            raise BackendError(f"cache key {key!r} must be a hex digest from cache_key()")
        return self.root / key[:2] / key

    def open(self) -> Path | None:
        """The root, created (private to this user) if missing, checked and swept once per process;
        None, after a one-time warning, when it cannot be used. CacheSecurityError if others could write it."""
        root = self.root
        try:
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
            check_private(root)
        except OSError as err:
            self._warn_unusable(root, err)
            return None
        if root not in _swept_roots:
            _swept_roots.add(root)
            sweep(root)
        return root

    def get(self, key: str) -> CacheEntry | None:
        """The entry for `key`, or None on a miss (a broken entry counts as a miss and is deleted)."""
        directory = self.entry_dir(key)
        if not self.enabled or self.open() is None:
            return None
        try:
            if not directory.parent.is_dir():
                return None
            check_private(directory.parent)
        except OSError as err:  # a root we may not look into (mode 000, say)
            self._warn_unusable(self.root, err)
            return None
        entry = read_entry(directory, key)
        if entry is None:
            _remove(directory)
        return entry

    def evict(self, key: str) -> None:
        """Delete the entry for `key` (a reader found its content unusable), so that it is rebuilt."""
        directory = self.entry_dir(key)
        if self.enabled and self.open() is not None:
            _remove(directory)

    def put(self, key: str, files: Mapping[str, bytes], meta: Mapping[str, Any]) -> CacheEntry:
        """Store an entry atomically and return it; uncached (a private temporary entry) when disabled
        or when the cache directory is not writable."""
        final = self.entry_dir(key)
        _index_bytes(key, files, meta)  # bad names or metadata fail before anything touches the disk
        if not self.enabled or self.open() is None:
            return write_entry(_SCRATCH.new_dir(), key, files, meta)
        try:
            final.parent.mkdir(mode=0o700, exist_ok=True)
            check_private(final.parent)
            staging = Path(tempfile.mkdtemp(prefix=_staging_prefix(key), dir=final.parent))
        except OSError as err:
            self._warn_unusable(self.root, err)
            return write_entry(_SCRATCH.new_dir(), key, files, meta)
        try:
            staged = write_entry(staging, key, files, meta)
        except BaseException as err:
            shutil.rmtree(staging, ignore_errors=True)
            if not isinstance(err, OSError):
                raise
            self._warn_unusable(self.root, err)
            return write_entry(_SCRATCH.new_dir(), key, files, meta)
        return self._commit(staged, final)

    def failure_dir(self, key: str) -> Path:
        """Where a build that fails keeps its source for the user to read (the directory is not created):
        `<root>/failed/<key[:16]>` when the cache is in use and writable, else a fresh, unguessable name
        under the system temporary directory (so a disabled cache stays untouched)."""
        self.entry_dir(key)  # validates the key, which becomes a path component
        if self.enabled and (root := self.open()) is not None:
            try:  # trying is the only test of writability that holds for root and read-only mounts
                (root / "failed").mkdir(mode=0o700, exist_ok=True)
                return root / "failed" / key[:16]
            except OSError:
                pass
        return Path(tempfile.gettempdir()) / f"tilecraft-failed-{os.urandom(8).hex()}" / key[:16]

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

    def _warn_unusable(self, root: Path, err: OSError) -> None:
        if root in _warned_roots:
            return
        _warned_roots.add(root)
        warnings.warn(
            f"kernel cache directory {root} is not a writable directory ({err}); running uncached. "
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
    _index_bytes(key, files, meta)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        write_entry(staging, key, files, meta)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if path.exists():
        _remove(path)
    os.rename(staging, path)
    return path


def read_export(path: Path) -> CacheEntry:
    """The export at `path`, verified; the error says what is wrong with it."""
    entry = read_entry(path)
    if entry is None:
        version = _index_version(path)
        if version is not None and version != FORMAT_VERSION:
            raise BackendError(
                f"{path} was exported by a tilecraft with export format {version}; this one reads format "
                f"{FORMAT_VERSION}; export the kernel again with this version"
            )
        raise BackendError(
            f"{path} is not a valid tilecraft export (missing or corrupt {INDEX} or files); "
            "export the kernel again"
        )
    return entry


def _index_version(directory: Path) -> int | None:
    """The format version an index claims, if it can be read at all."""
    try:
        version = json.loads(_read_regular(directory / INDEX)).get("version")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return version if type(version) is int else None
