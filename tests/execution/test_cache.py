"""The content-addressed kernel cache: hits, misses, corruption, atomic commits and concurrent writers."""

import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import pytest

from tilecraft import settings
from tilecraft.errors import BackendError
from tilecraft.execution import cache as cache_module
from tilecraft.execution.cache import INDEX, CacheSecurityError, KernelCache, cache_key

KEY = cache_key("ir-hash", "toyk -arch=x", "echo", "1.0", {"opt": 2}, "0.1.0")
FILES = {"kernel.bin": b"\x7fELF binary", "kernel.src": b"source text"}


@pytest.fixture
def cache(tmp_path):
    with settings.override(TILECRAFT_DISABLE_CACHE=False):
        yield KernelCache(tmp_path / "cache")


def test_cache_key_is_stable_and_order_independent_for_mappings():
    assert cache_key("a", {"x": 1, "y": 2}) == cache_key("a", {"y": 2, "x": 1})
    assert cache_key("a", 1) != cache_key("a", "1")
    assert cache_key(("a", "b")) != cache_key("a", "b")
    assert len(KEY) == 64


def test_cache_key_refuses_objects_without_a_canonical_form():
    with pytest.raises(TypeError, match="cannot key on object"):
        cache_key(object())


def test_miss_then_hit(cache):
    assert cache.get(KEY) is None
    entry = cache.put(KEY, FILES, {"symbol": "scale"})
    assert entry.read("kernel.bin") == FILES["kernel.bin"]
    hit = cache.get(KEY)
    assert hit is not None
    assert hit.meta["symbol"] == "scale"
    assert hit.path("kernel.src").read_bytes() == b"source text"
    assert hit.directory == cache.root / KEY[:2] / KEY


def test_unknown_file_lists_the_entry_files(cache):
    entry = cache.put(KEY, FILES, {})
    with pytest.raises(BackendError, match="has no file 'x.so'; files: kernel.bin, kernel.src"):
        entry.path("x.so")


def test_index_is_written_last_and_lists_checksums(cache):
    entry = cache.put(KEY, FILES, {"n": 1})
    index = json.loads((entry.directory / INDEX).read_text())
    assert set(index["files"]) == set(FILES)
    newest = max(entry.directory.iterdir(), key=lambda p: p.stat().st_mtime_ns)
    assert newest.name == INDEX


def test_corrupt_file_is_a_miss_and_the_entry_is_rebuilt(cache):
    entry = cache.put(KEY, FILES, {})
    entry.path("kernel.bin").write_bytes(b"truncated")
    assert cache.get(KEY) is None
    assert not entry.directory.exists()  # deleted
    cache.put(KEY, FILES, {})
    assert cache.get(KEY).read("kernel.bin") == FILES["kernel.bin"]


def test_missing_index_is_a_miss(cache):
    entry = cache.put(KEY, FILES, {})
    (entry.directory / INDEX).unlink()
    assert cache.get(KEY) is None
    assert not entry.directory.exists()


@pytest.mark.parametrize(
    "garbage", [b"{not json", b"[]", b'{"version": 1}', b'{"version": 99, "key": "", "files": {}}']
)
def test_unparseable_index_is_a_miss(cache, garbage):
    entry = cache.put(KEY, FILES, {})
    (entry.directory / INDEX).write_bytes(garbage)
    assert cache.get(KEY) is None


def test_missing_file_is_a_miss(cache):
    entry = cache.put(KEY, FILES, {})
    entry.path("kernel.src").unlink()
    assert cache.get(KEY) is None


def test_put_replaces_a_broken_entry(cache):
    entry = cache.put(KEY, FILES, {})
    (entry.directory / INDEX).unlink()
    again = cache.put(KEY, {"kernel.bin": b"new"}, {})
    assert again.directory == entry.directory
    assert cache.get(KEY).read("kernel.bin") == b"new"


def test_first_writer_wins_and_later_writers_get_its_entry(cache):
    first = cache.put(KEY, {"kernel.bin": b"first"}, {"who": 1})
    second = cache.put(KEY, {"kernel.bin": b"second"}, {"who": 2})
    assert second.meta["who"] == 1 and second.read("kernel.bin") == b"first"
    assert first.directory == second.directory
    assert [p.name for p in first.directory.parent.iterdir()] == [KEY]  # no staging left behind


def test_concurrent_threads_writing_one_key(cache):
    results, errors = [], []

    def write(i):
        try:
            results.append(cache.put(KEY, {"kernel.bin": f"writer {i}".encode() * 1000}, {"who": i}))
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    final = cache.get(KEY)
    assert final is not None
    assert all(r.read("kernel.bin") == final.read("kernel.bin") for r in results)
    assert final.read("kernel.bin") == f"writer {final.meta['who']}".encode() * 1000


WRITER = """
import sys
from tilecraft.execution.cache import KernelCache
cache = KernelCache(sys.argv[1], enabled=True)
who = sys.argv[3]
for _ in range(20):
    entry = cache.put(sys.argv[2], {"kernel.bin": who.encode() * 50000}, {"who": who})
    assert entry.read("kernel.bin") == entry.meta["who"].encode() * 50000
"""


def test_concurrent_processes_writing_one_key(cache):
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(cache.root), KEY, f"p{i}"], cwd=root, stderr=subprocess.PIPE
        )
        for i in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err.decode()
    final = cache.get(KEY)
    assert final.read("kernel.bin") == final.meta["who"].encode() * 50000
    assert [p.name for p in final.directory.parent.iterdir()] == [KEY]


def test_disabled_cache_never_hits_but_still_returns_files(tmp_path):
    with settings.override(TILECRAFT_DISABLE_CACHE=True):
        cache = KernelCache(tmp_path / "cache")
        entry = cache.put(KEY, FILES, {})
        assert entry.read("kernel.bin") == FILES["kernel.bin"]
        assert cache.get(KEY) is None
    assert not (tmp_path / "cache").exists()


def test_unwritable_cache_dir_warns_once_and_runs_uncached(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "_warned_roots", set())
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    cache = KernelCache(blocker / "cache", enabled=True)
    with pytest.warns(
        RuntimeWarning, match="not a writable directory.*running uncached.*TILECRAFT_CACHE_DIR"
    ):
        entry = cache.put(KEY, FILES, {})
    assert entry.read("kernel.bin") == FILES["kernel.bin"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache.put(KEY, FILES, {})  # no second warning
    assert cache.get(KEY) is None


def test_bad_keys_and_file_names_are_rejected(cache):
    with pytest.raises(BackendError, match="must be a hex digest"):
        cache.get("../../etc")
    with pytest.raises(BackendError, match="cache file name '../x'"):
        cache.put(KEY, {"../x": b""}, {})
    with pytest.raises(BackendError, match="must be bytes"):
        cache.put(KEY, {"x": "text"}, {})
    with pytest.raises(BackendError, match="JSON-serializable"):
        cache.put(KEY, FILES, {"obj": object()})


def test_default_root_follows_settings(tmp_path):
    with settings.override(TILECRAFT_CACHE_DIR=tmp_path / "elsewhere"):
        assert KernelCache().root == tmp_path / "elsewhere"


def test_size_counts_entries(cache):
    cache.put(KEY, FILES, {})
    entries, size = cache.size()
    assert entries == 1 and size >= sum(len(d) for d in FILES.values())


def rewrite_index(directory, edit):
    """Change an entry's index the way a forger would: valid JSON, checksums recomputed where kept."""
    index = json.loads((directory / INDEX).read_text())
    edit(index)
    (directory / INDEX).write_text(json.dumps(index))


@pytest.mark.parametrize(
    "edit",
    [
        lambda i: i.update(files={}),
        lambda i: i.update(files=[[n, d] for n, d in i["files"].items()]),
        lambda i: i.update(meta=[]),
        lambda i: i.update(files={"../../x": "0" * 64}),
        lambda i: i.update(files={n: d.upper() for n, d in i["files"].items()}),
        lambda i: i.update(extra="key"),
    ],
    ids=[
        "no-files",
        "files-as-pairs",
        "meta-as-list",
        "escaping-name",
        "digest-not-lowercase-hex",
        "extra-key",
    ],
)
def test_index_of_the_wrong_shape_is_a_miss_and_rebuilt(cache, edit):
    entry = cache.put(KEY, FILES, {})
    rewrite_index(entry.directory, edit)
    assert cache.get(KEY) is None
    assert cache.put(KEY, FILES, {}).read("kernel.bin") == FILES["kernel.bin"]
    assert cache.get(KEY) is not None


def test_a_linked_file_is_a_miss_even_with_the_right_content(cache, tmp_path):
    entry = cache.put(KEY, FILES, {})
    outside = tmp_path / "outside"
    outside.write_bytes(FILES["kernel.bin"])
    entry.path("kernel.bin").unlink()
    entry.path("kernel.bin").symlink_to(outside)
    assert cache.get(KEY) is None


def test_a_fifo_in_an_entry_is_a_miss_not_a_hang(cache):
    entry = cache.put(KEY, FILES, {})
    fifo = entry.path("kernel.bin")
    fifo.unlink()
    os.mkfifo(fifo)
    results = []
    reader = threading.Thread(target=lambda: results.append(cache.get(KEY)), daemon=True)
    reader.start()
    reader.join(5)
    hung = reader.is_alive()
    if hung:  # unblock the reader before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(5)
    assert not hung and results == [None]


def test_bad_files_fail_before_anything_is_staged(cache):
    with pytest.raises(BackendError, match="cache file name"):
        cache.put(KEY, {"../x": b""}, {})
    with pytest.raises(BackendError, match="at least one file"):
        cache.put(KEY, {}, {})
    assert not cache.root.exists() or not any(cache.root.rglob(".tmp-*"))


def test_evict_deletes_an_entry(cache):
    entry = cache.put(KEY, FILES, {})
    cache.evict(KEY)
    assert not entry.directory.exists() and cache.get(KEY) is None


def test_directories_and_files_are_private_whatever_the_umask(cache):
    old = os.umask(0o002)  # a usergroups umask: new files and directories are group-writable by default
    try:
        entry = cache.put(KEY, FILES, {})
    finally:
        os.umask(old)
    for path in (cache.root, entry.directory.parent):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    for path in entry.directory.iterdir():
        assert not path.stat().st_mode & 0o022, path


def staging_name(pid, host=None, key=KEY):
    return f".tmp-{key[:16]}-{host or cache_module._host_tag()}-{pid}-abc_12"


def dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", ""])
    proc.wait()
    return proc.pid


def test_opening_sweeps_trash_and_abandoned_staging_but_not_live_writers(tmp_path):
    root = tmp_path / "cache"
    shard = root / KEY[:2]
    shard.mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    leftovers = [shard / ".trash-0123456789abcdef", shard / staging_name(dead_pid()),
                 shard / staging_name(os.getpid(), host="ffffffff")]  # fmt: skip
    live = [shard / staging_name(os.getpid()), shard / staging_name(os.getpid(), host="eeeeeeee")]
    for path in leftovers + live:
        path.mkdir()
        (path / "kernel.bin").write_bytes(b"half written")
    old = time.time() - cache_module.STALE_AFTER_S - 60
    os.utime(leftovers[2], (old, old))  # another host's writer, silent for over an hour
    with settings.override(TILECRAFT_DISABLE_CACHE=False):
        assert KernelCache(root).get(KEY) is None
    assert sorted(p.name for p in shard.iterdir()) == sorted(p.name for p in live)


def test_a_cache_directory_others_can_write_is_refused(tmp_path):
    root = tmp_path / "cache"
    root.mkdir(mode=0o777)
    root.chmod(0o777)
    cache = KernelCache(root, enabled=True)
    for call in (lambda: cache.get(KEY), lambda: cache.put(KEY, FILES, {})):
        with pytest.raises(
            CacheSecurityError, match=rf"{root} is writable by other users.*chmod go-w {root}"
        ):
            call()
    root.chmod(0o1777)  # sticky, as /tmp: others may add but not replace what is ours
    assert cache.put(KEY, FILES, {}).read("kernel.bin") == FILES["kernel.bin"]


def test_an_entry_parent_others_can_write_is_refused(cache):
    entry = cache.put(KEY, FILES, {})
    entry.directory.parent.chmod(0o775)
    with pytest.raises(CacheSecurityError, match=f"{entry.directory.parent} is writable by other users"):
        cache.get(KEY)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a directory to another user")
def test_a_cache_directory_of_another_user_is_refused(tmp_path):
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    os.chown(root, 12345, 12345)
    with pytest.raises(CacheSecurityError, match=rf"{root} belongs to another user \(uid 12345\).*chown"):
        KernelCache(root, enabled=True).get(KEY)


def test_a_disabled_cache_touches_nothing_not_even_a_bad_directory(tmp_path):
    insecure = tmp_path / "insecure"
    insecure.mkdir(mode=0o777)
    insecure.chmod(0o777)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for root in (insecure, blocker, blocker / "cache"):
        cache = KernelCache(root, enabled=False)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert cache.get(KEY) is None
            assert cache.put(KEY, FILES, {}).read("kernel.bin") == FILES["kernel.bin"]
            assert not cache.failure_dir(KEY).is_relative_to(root)
    assert list(insecure.iterdir()) == [] and blocker.read_text() == "x"


def test_failure_dir_is_in_the_cache_only_when_the_cache_is_usable(cache, tmp_path, monkeypatch):
    assert cache.failure_dir(KEY) == cache.root / "failed" / KEY[:16]
    monkeypatch.setattr(cache_module, "_warned_roots", set())
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.warns(RuntimeWarning, match="not a writable directory"):
        away = KernelCache(blocker, enabled=True).failure_dir(KEY)
    assert away.parent.parent == Path(tempfile.gettempdir()) and not away.parent.exists()
    with pytest.raises(BackendError, match="must be a hex digest"):
        cache.failure_dir("../../etc")
