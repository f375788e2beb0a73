"""Attacks on the kernel cache, end to end through `tilecraft.compile` on the C target: damaged and forged
entries, unusable and insecure cache directories, concurrent writers and killed processes. Whatever is
done to the cache, a compile either works (rebuilding what it cannot trust) or stops with an error that
names the directory and the fix; nothing in the cache is executed except the libraries it built."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import tilecraft
from tilecraft import settings
from tilecraft.errors import BackendError, ToolchainError
from tilecraft.execution import cache as cache_module
from tilecraft.execution.cache import INDEX, CacheSecurityError, read_entry
from tilecraft.execution.cc import toolchain
from tilecraft.jit.kernel import Kernel
from tilecraft.runtime.artifact import ARTIFACT_JSON, artifact_from_files
from tilecraft.testing.conformance import kernels as K

REPO = Path(__file__).resolve().parents[2]
AS_ROOT = os.geteuid() == 0

pytestmark = pytest.mark.skipif(toolchain.find_compiler_path() is None, reason="no C compiler installed")


def kernel_func():
    return K.elementwise_add(300, 64)


def compile_and_run(root: Path, disable: bool = False) -> tilecraft.Kernel:
    """Compile into cache `root` and check the kernel computes the right thing."""
    with settings.override(TILECRAFT_CACHE_DIR=root, TILECRAFT_DISABLE_CACHE=disable):
        kernel = tilecraft.compile(kernel_func(), target="c")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    c = np.full(300, np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    return kernel


def entries(root: Path) -> dict[str, Path]:
    """The cache's entries by role: 'artifact' (the lowering) and 'build' (the library)."""
    found = {}
    for index in root.glob(f"??/*/{INDEX}"):
        names = json.loads(index.read_text())["files"]
        found["artifact" if ARTIFACT_JSON in names else "build"] = index.parent
    return found


def junk(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.name.startswith((".tmp-", ".trash-")))


def forge(directory: Path, files: dict[str, bytes], version: int = cache_module.FORMAT_VERSION) -> None:
    """Replace an entry's content the way an attacker with write access would: index recomputed."""
    key = json.loads((directory / INDEX).read_text())["key"]
    for old in directory.iterdir():
        old.unlink()
    for name, data in files.items():
        (directory / name).write_bytes(data)
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    index = {"version": version, "key": key, "meta": {}, "files": digests}
    (directory / INDEX).write_text(json.dumps(index))


def assert_valid(root: Path) -> None:
    """Both entries are there and valid, the artifact decodes, and nothing half-written is left."""
    found = entries(root)
    assert set(found) == {"artifact", "build"}
    for directory in found.values():
        assert read_entry(directory) is not None, directory
    artifact_from_files(read_entry(found["artifact"]).read)
    assert junk(root) == []


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "cache"
    compile_and_run(root)
    assert_valid(root)
    return root


@pytest.fixture
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(cache_module, "_warned_roots", set())


# ---------------------------------------------------------------- damaged and forged entries


@pytest.mark.parametrize("role", ["artifact", "build"])
def test_truncated_files_are_rebuilt(root, role):
    for path in entries(root)[role].iterdir():
        # Replaced, not truncated in place: this process has the library mapped, and shrinking a mapped
        # file under it is a SIGBUS, whatever the cache does.
        half = path.with_name(path.name + ".half")
        half.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 2)])
        os.replace(half, path)
    compile_and_run(root)
    assert_valid(root)


WRONG_ARTIFACTS = {
    "garbage": b"\x00\x8f garbage {",
    "wrong-type-list": b"[]",
    "wrong-type-string": b'"artifact"',
    "wrong-shape": json.dumps(
        {
            "format": "tilecraft-artifact",
            "version": 1,
            "vars": [],
            "fields": {"params": 3},
            "device_sources": [],
            "device_binaries": [],
            "host_source": False,
        }
    ).encode(),  # fmt: skip
}


@pytest.mark.parametrize("content", WRONG_ARTIFACTS.values(), ids=WRONG_ARTIFACTS.keys())
def test_artifacts_of_the_wrong_type_with_a_matching_index_are_rebuilt(root, content):
    directory = entries(root)["artifact"]
    files = {p.name: p.read_bytes() for p in directory.iterdir() if p.name != INDEX}
    forge(directory, {**files, ARTIFACT_JSON: content})
    compile_and_run(root)
    assert_valid(root)  # the bad entry was replaced, so the next run hits


@pytest.mark.parametrize("role", ["artifact", "build"])
def test_an_index_listing_no_files_is_rebuilt(root, role):
    """Was a permanent "entry has no file 'kernel.so'" for the build entry."""
    forge(entries(root)[role], {})
    compile_and_run(root)
    assert_valid(root)


def test_a_cached_library_that_does_not_load_is_evicted_and_named(root, tmp_path):
    """An object file where the library should be, its index recomputed (what `TILECRAFT_CC="gcc -c"`
    left in the cache before builds were checked): a ToolchainError naming the file, and the entry is
    evicted so that the next compile builds a library that loads."""
    root = shutil.copytree(root, tmp_path / "copy")  # a path this process never loaded a library from
    directory = entries(root)["build"]
    files = {p.name: p.read_bytes() for p in directory.iterdir() if p.name != INDEX}
    forge(directory, {**files, "kernel.so": toolchain.compile_object("int f(void) { return 0; }\n")})
    with pytest.raises(
        ToolchainError, match=r"(?s)kernel\.so of .* does not load: .*\n.*removed from the cache"
    ):
        compile_and_run(root)
    assert "build" not in entries(root)
    compile_and_run(root)
    assert_valid(root)


class Payload:
    """Unpickling this runs a shell command that creates `marker`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_forged_pickle_in_an_entry_is_never_loaded(root, tmp_path):
    marker = tmp_path / "pwned"
    directory = entries(root)["artifact"]
    forge(directory, {"artifact.pickle": pickle.dumps(Payload(marker))})
    compile_and_run(root)
    assert not marker.exists()
    assert_valid(root)


def test_a_forged_pickle_in_an_export_is_never_loaded(root, tmp_path):
    marker = tmp_path / "pwned"
    kernel = compile_and_run(root)
    exported = kernel.export(tmp_path / "export")
    files = {p.name: p.read_bytes() for p in exported.iterdir() if not p.name.startswith(("artifact", INDEX))}
    forge(exported, {**files, "artifact.pickle": pickle.dumps(Payload(marker))})
    with pytest.raises(
        BackendError, match="older tilecraft that pickled the artifact.*export the kernel again"
    ):
        kernel._backend.import_built(exported)
    assert not marker.exists()


def test_an_export_of_the_pickle_era_is_refused_with_what_to_do(root, tmp_path):
    marker = tmp_path / "pwned"
    kernel = compile_and_run(root)
    exported = kernel.export(tmp_path / "export")
    files = {p.name: p.read_bytes() for p in exported.iterdir() if not p.name.startswith(("artifact", INDEX))}
    forge(exported, {**files, "artifact.pickle": pickle.dumps(Payload(marker))}, version=1)
    with pytest.raises(
        BackendError, match="export format 1; this one reads format 2; export the kernel again"
    ):
        kernel._backend.import_built(exported)
    assert not marker.exists()


def test_an_export_loads_without_compiling_and_a_damaged_one_is_refused(root, tmp_path, monkeypatch):
    kernel = compile_and_run(root)
    exported = kernel.export(tmp_path / "export")
    backend = kernel._backend
    monkeypatch.setattr(toolchain, "compile_shared", lambda *a, **k: pytest.fail("import compiled"))
    built = backend.import_built(exported)
    again = Kernel(backend.load(built), kernel.context)
    a = np.arange(300, dtype=np.float32)
    c = np.zeros(300, np.float32)
    again(a, a, c)
    np.testing.assert_array_equal(c, 2 * a)
    files = {p.name: p.read_bytes() for p in exported.iterdir() if p.name != INDEX}
    forge(exported, {**files, ARTIFACT_JSON: b'{"format": "tilecraft-artifact", "version": 1}'})
    with pytest.raises(BackendError, match="is not valid.*export the kernel again"):
        backend.import_built(exported)


# ---------------------------------------------------------------- unusable and insecure cache directories


def snapshot(path: Path) -> list[tuple[str, int]]:
    if not path.exists():
        return []
    if path.is_file():
        return [(path.name, path.stat().st_size)]
    return sorted((str(p.relative_to(path)), p.stat().st_mode) for p in path.rglob("*"))


def unusable_root(tmp_path: Path, kind: str) -> Path:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    if kind == "under-a-file":  # mkdir fails with NotADirectoryError, for root too
        return blocker / "cache"
    if kind == "a-file":
        return blocker
    if kind == "read-only":
        if AS_ROOT:  # root ignores permission bits; /proc refuses new entries to everyone
            if not Path("/proc").is_dir():
                pytest.skip("running as root, which ignores permission bits, and there is no /proc")
            return Path("/proc")
        path = tmp_path / "read-only"
        path.mkdir(mode=0o500)
        return path
    if AS_ROOT:
        pytest.skip("running as root, which ignores permission bits (mode 000 does not stop root)")
    path = tmp_path / "no-access"
    path.mkdir(mode=0o000)
    return path


@pytest.mark.parametrize("kind", ["under-a-file", "a-file", "read-only", "no-access"])
def test_an_unusable_cache_directory_warns_once_and_compiles_uncached(tmp_path, kind, fresh_warnings):
    path = unusable_root(tmp_path, kind)
    before = snapshot(tmp_path)
    with pytest.warns(RuntimeWarning, match=f"{path}.* not a writable directory.*running uncached"):
        compile_and_run(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile_and_run(path)  # one warning per directory and process
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("kind", ["fresh", "insecure", "a-file", "populated"])
def test_a_disabled_cache_reads_and_writes_nothing(tmp_path, kind, monkeypatch):
    path = tmp_path / "cache"
    if kind == "insecure":
        path.mkdir(mode=0o777)
        path.chmod(0o777)
    elif kind == "a-file":
        path.write_text("x")
    elif kind == "populated":
        compile_and_run(path)
    before = snapshot(tmp_path)
    real_read = cache_module._read_regular

    def read(file: Path) -> bytes:
        assert not file.is_relative_to(path), f"read {file} from a disabled cache"
        return real_read(file)

    monkeypatch.setattr(cache_module, "_read_regular", read)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile_and_run(path, disable=True)
    assert snapshot(tmp_path) == before


def test_a_cache_others_can_write_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "cache"
    path.mkdir(mode=0o777)
    path.chmod(0o777)
    with pytest.raises(CacheSecurityError, match=rf"{path} is writable by other users.*chmod go-w {path}"):
        compile_and_run(path)
    path.chmod(0o700)
    compile_and_run(path)
    shard = entries(path)["build"].parent
    shard.chmod(0o777)
    with pytest.raises(CacheSecurityError, match=f"{shard} is writable by other users"):
        compile_and_run(path)


@pytest.mark.skipif(not AS_ROOT, reason="only root can give a directory to another user")
def test_a_cache_of_another_user_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "cache"
    path.mkdir(mode=0o700)
    os.chown(path, 4321, 4321)
    with pytest.raises(
        CacheSecurityError, match=rf"{path} belongs to another user \(uid 4321\).*chown 0 {path}"
    ):
        compile_and_run(path)


# ---------------------------------------------------------------- other processes: writers and kills

COMPILE = """
import sys
import numpy as np
import tilecraft
from tilecraft.testing.conformance import kernels as K
kernel = tilecraft.compile(K.elementwise_add(300, 64), target="c")
a = np.arange(300, dtype=np.float32); c = np.zeros(300, np.float32)
kernel(a, a, c)
assert np.array_equal(c, 2 * a), "wrong result"
print("ok")
"""

# Dies by SIGKILL in the middle of writing the library's entry: the staging directory stays behind.
KILLED_MID_WRITE = (
    """
import os, signal
from tilecraft.execution import cache
real = cache._atomic_write
def write(path, data):
    if path.name == cache.INDEX and not path.parent.name.startswith("tmp"):
        os.kill(os.getpid(), signal.SIGKILL)
    real(path, data)
cache._atomic_write = write
"""
    + COMPILE
)


def spawn(code: str, root: Path, **env: str) -> subprocess.Popen:
    environ = {**os.environ, "PYTHONPATH": str(REPO), "TILECRAFT_CACHE_DIR": str(root), **env}
    environ.pop("TILECRAFT_DISABLE_CACHE", None)
    return subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=environ, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def finish(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    return out.decode()


def test_concurrent_processes_compile_one_kernel_into_one_cache(tmp_path):
    root = tmp_path / "cache"
    procs = [spawn(COMPILE, root) for _ in range(3)]
    assert [finish(p).strip() for p in procs] == ["ok"] * 3
    assert_valid(root)
    kernels = [i for i in root.glob(f"??/*/{INDEX}") if not list(i.parent.glob("_tclaunch*"))]
    assert len(kernels) == 2  # beside the compiled launcher's entry, when it was built


def test_killed_mid_compile_then_a_fresh_process_compiles(tmp_path):
    root = tmp_path / "cache"
    ready = tmp_path / "compiling"
    slow_cc = tmp_path / "slow-cc"
    real = toolchain.find_compiler_path()
    # The real compiler for probes (--version, the OpenMP test); a compile of the kernel hangs until killed.
    slow_cc.write_text(
        f'#!/bin/sh\ncase "$*" in *kernel.c*) touch {ready}; exec sleep 60;; esac\nexec {real} "$@"\n'
    )
    slow_cc.chmod(0o755)
    proc = spawn(COMPILE, root, TILECRAFT_CC=str(slow_cc))
    deadline = time.time() + 60
    while not ready.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert ready.exists(), proc.communicate()[1].decode()
    os.killpg(proc.pid, signal.SIGKILL)  # the session spawn() started: python and its compiler
    proc.communicate()
    assert finish(spawn(COMPILE, root)).strip() == "ok"
    assert_valid(root)


def test_killed_mid_write_leaves_staging_that_the_next_open_sweeps(tmp_path):
    root = tmp_path / "cache"
    proc = spawn(KILLED_MID_WRITE, root)
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert any(name.startswith(".tmp-") for name in junk(root)), "the kill left no staging directory"
    assert finish(spawn(COMPILE, root)).strip() == "ok"
    assert_valid(root)
