"""The C toolchain fails clearly: compiler settings are command lines, failed sources are kept only on
failure (and anywhere writable), and no build directory outlives a killed process."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft import settings
from tilecraft.errors import ToolchainError
from tilecraft.execution.cc import toolchain
from tilecraft.execution.cc.spec import CC

ROOT = Path(__file__).resolve().parents[2]
GOOD_SOURCE = "int f(void) { return 0; }\n"
REAL_CC = shutil.which("gcc") or shutil.which("clang") or shutil.which("cc")
needs_cc = pytest.mark.skipif(REAL_CC is None, reason="no C compiler on PATH")


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def failing_compiler(tmp_path: Path) -> Path:
    return script(tmp_path / "badcc", "echo 'kernel.c:1: error: planted failure' >&2\nexit 1\n")


def scale_kernel():
    @T.prim_func
    def scale(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(2, threads=1) as bx:
            for i in T.Parallel(64):
                Y[bx * 64 + i] = X[bx * 64 + i] * 2.0

    return scale


def run_scale(**overrides):
    x = np.random.default_rng(0).standard_normal(128).astype(np.float32)
    y = np.empty_like(x)
    with settings.override(**overrides):
        kernel = tilecraft.compile(scale_kernel(), target="cpu")
        kernel(x, y)
    np.testing.assert_allclose(y, x * 2.0, rtol=1e-6)
    return kernel


# Item 14: the keep directory is made only when a compile fails, and an unwritable one hides nothing.


@needs_cc
def test_a_successful_compile_creates_no_keep_directory(tmp_path):
    keep = tmp_path / "failed" / "key"
    toolchain.compile_shared(GOOD_SOURCE, [], False, keep)
    assert not (tmp_path / "failed").exists()


def test_unwritable_keep_directory_still_shows_the_compiler_output(tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache directory should be")
    keep = blocker / "failed" / "key"
    with (
        settings.override(TILECRAFT_CC=str(failing_compiler(tmp_path))),
        pytest.raises(ToolchainError) as info,
    ):
        toolchain.compile_shared(GOOD_SOURCE, [], False, keep)
    text = str(info.value)
    assert "planted failure" in text and "command:" in text
    assert f"could not write {keep}" in text
    kept = Path(text.split("generated source: ")[1].split(" (")[0])
    assert kept.read_text() == GOOD_SOURCE and not kept.is_relative_to(blocker)
    shutil.rmtree(kept.parent)


@needs_cc
def test_a_kernel_compiles_with_an_unwritable_cache_directory(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cache says once that it runs uncached
        run_scale(TILECRAFT_CACHE_DIR=blocker / "cache", TILECRAFT_CC=REAL_CC)


# Item 15: a process killed mid-compile leaves nothing behind for long.

_KILLED_CHILD = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from tilecraft.execution.cc import toolchain
toolchain.compile_shared("int f(void) {{ return 0; }}", [], False, Path({keep!r}))
"""


def _wait_for(path: Path, child: subprocess.Popen, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


@needs_cc
def test_build_directories_of_a_killed_process_are_swept_at_the_next_compile(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    started = tmp_path / "started"
    # Answers --version, has no OpenMP, and hangs on the real compile until killed.
    slow = script(
        tmp_path / "slowcc",
        f"""case "$1" in --version) echo "slowcc 1.0"; exit 0;; -fopenmp) exit 1;; esac
echo $$ > {started}.tmp && mv {started}.tmp {started}
exec sleep 120
""",
    )
    code = _KILLED_CHILD.format(root=str(ROOT), keep=str(tmp_path / "keep"))
    env = {**os.environ, "TMPDIR": str(scratch), "TILECRAFT_CC": str(slow)}
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    try:
        _wait_for(started, child)
        leftovers = [p for p in scratch.iterdir() if p.name.startswith("tilecraft-cc-")]
        assert len(leftovers) == 1
        with settings.override(TILECRAFT_CC=REAL_CC):
            toolchain.compile_object(GOOD_SOURCE)
        assert leftovers[0].exists(), "a running compile's directory was swept"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
        if started.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(started.read_text()), signal.SIGKILL)  # the orphaned fake compiler
    assert leftovers[0].exists(), "the kill itself should leave the directory behind"
    with settings.override(TILECRAFT_CC=REAL_CC):
        toolchain.compile_object(GOOD_SOURCE)
    assert not leftovers[0].exists(), "the killed process's build directory was not swept"
    assert not [p for p in scratch.iterdir() if p.name.startswith(("tilecraft-cc-", "tilecraft-omp-"))]


def test_unlocked_directories_of_a_dead_pid_wait_out_the_grace_period(tmp_path):
    """No lock file (the owner died before taking it): swept only once old, never while fresh."""
    dead = _dead_pid()
    fresh = tmp_path / f"tilecraft-cc-{dead}-abcdefgh"
    old = tmp_path / f"tilecraft-omp-{dead}-ijklmnop"
    legacy = tmp_path / "tilecraft-cc-qrstuvwx"
    unrelated = tmp_path / "tilecraft-cache-abcdefgh"
    for directory in (fresh, old, legacy, unrelated):
        directory.mkdir()
    long_ago = time.time() - toolchain.UNLOCKED_STALE_AFTER_S - 10
    for directory in (old, legacy, unrelated):
        os.utime(directory, (long_ago, long_ago))
    assert sorted(toolchain.sweep_stale_build_dirs(tmp_path)) == sorted([old, legacy])
    assert fresh.exists() and unrelated.exists()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# Item 17: a compiler setting is a command line.


@needs_cc
def test_compiler_setting_with_options_builds_and_keys_separately():
    plain = run_scale(TILECRAFT_CC=REAL_CC)
    unoptimized = run_scale(TILECRAFT_CC=f"{REAL_CC} -O0")
    assert plain.built.key != unoptimized.built.key
    flags = unoptimized.built.entry.meta["flags"]
    # The setting's options come after tilecraft's own, so -O0 wins over -O3.
    assert flags.index("-O0") > flags.index("-O3")
    assert "-O0" not in plain.built.entry.meta["flags"]


@needs_cc
def test_a_launcher_word_runs_the_compiler_through_it(tmp_path, monkeypatch):
    calls = tmp_path / "calls"
    (tmp_path / "bin").mkdir()
    script(tmp_path / "bin" / "mylauncher", f'echo "$@" >> {calls}\nexec "$@"\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    kernel = run_scale(TILECRAFT_CC=f"mylauncher {REAL_CC}")
    assert kernel.built.entry.meta["compiler"] == [str(tmp_path / "bin" / "mylauncher"), REAL_CC]
    assert any(line.startswith(f"{REAL_CC} -O3") for line in calls.read_text().splitlines())


@pytest.mark.parametrize("variable", ["TILECRAFT_CC", "CC"])
def test_a_missing_named_compiler_says_which_and_where_it_looked(variable, monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv(variable, "no-such-compiler-xyz -O2")
    with settings.override(TILECRAFT_CC=None if variable == "CC" else "no-such-compiler-xyz -O2"):
        with pytest.raises(ToolchainError) as info:
            toolchain.compiler()
        CC.reset_availability()
        status = CC.check()
    CC.reset_availability()
    for text in (str(info.value), status.reason):
        assert f"{variable}='no-such-compiler-xyz -O2'" in text
        assert "'no-such-compiler-xyz' was not found on PATH" in text
    assert not status.ok and variable in status.fix


def test_an_unreadable_command_line_names_the_setting():
    with settings.override(TILECRAFT_CC="gcc '-O2"), pytest.raises(ToolchainError) as info:
        toolchain.compiler()
    assert "TILECRAFT_CC" in str(info.value) and "cannot be read as a command line" in str(info.value)


def test_a_compiler_that_writes_nothing_is_a_toolchain_error_with_its_command(tmp_path):
    silent = script(tmp_path / "silentcc", "exit 0\n")
    with settings.override(TILECRAFT_CC=str(silent)), pytest.raises(ToolchainError) as info:
        toolchain.compile_shared(GOOD_SOURCE, [], False, tmp_path / "keep")
    text = str(info.value)
    assert "exited 0 but wrote no kernel.so" in text and f"command: {silent} -O3" in text
    assert (tmp_path / "keep" / "kernel.c").read_text() == GOOD_SOURCE
    with settings.override(TILECRAFT_CC=str(silent)):
        assert toolchain.compiler().openmp is False, "a compiler that writes nothing cannot build OpenMP"
        with pytest.raises(ToolchainError, match="wrote no kernel.o"):
            toolchain.compile_object(GOOD_SOURCE)


# Issue 31, item 10: a compiler command that makes no shared library is refused before anything is cached.

NOT_A_LIBRARY = {"-c": "a relocatable object file", "-E": "a text file", "-S": "a text file"}


def libraries(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.so") if p.is_file()]


@needs_cc
@pytest.mark.parametrize("option", NOT_A_LIBRARY)
def test_a_compiler_command_that_makes_no_library_is_named_and_nothing_is_cached(tmp_path, option):
    root = tmp_path / "cache"
    command = f"{REAL_CC} {option}"
    with pytest.raises(ToolchainError) as info:
        run_scale(TILECRAFT_CACHE_DIR=root, TILECRAFT_CC=command)
    text = str(info.value)
    assert f"TILECRAFT_CC={command!r} made {NOT_A_LIBRARY[option]}" in text
    assert "not a shared library this process can load (nothing was cached)" in text
    assert f"command: {REAL_CC} -O3" in text and f" {option} " in text and "from TILECRAFT_CC" in text
    assert libraries(root) == []
    with pytest.raises(ToolchainError, match="nothing was cached"):  # the same error again, not a cached file
        run_scale(TILECRAFT_CACHE_DIR=root, TILECRAFT_CC=command)
    run_scale(TILECRAFT_CACHE_DIR=root, TILECRAFT_CC=REAL_CC)


@needs_cc
def test_the_compiled_launcher_is_not_cached_when_the_compiler_makes_no_library(tmp_path):
    """The launcher's key does not hold the compiler, so a cached object file would stay after the setting
    was fixed: it must never be cached, and one an older version cached is rebuilt."""
    from tilecraft.execution import native

    root = tmp_path / "cache"
    native.reset()
    try:
        with (
            settings.override(
                TILECRAFT_CACHE_DIR=root, TILECRAFT_CC=f"{REAL_CC} -c", TILECRAFT_LAUNCHER="compiled"
            ),
            pytest.raises(native.LauncherUnavailable, match=r"TILECRAFT_CC=.* made a relocatable object"),
        ):
            native.launcher_module()
        assert libraries(root) == []
        native.reset()
        with settings.override(TILECRAFT_CACHE_DIR=root, TILECRAFT_CC=REAL_CC, TILECRAFT_LAUNCHER="compiled"):
            assert native.launcher_module() is not None
            (library,) = libraries(root)
            library.unlink()  # what an older version left: an object file under a valid index
            library.write_bytes(toolchain.compile_object(GOOD_SOURCE))
            index = library.parent / "index.json"
            data = json.loads(index.read_text())
            data["files"][library.name] = hashlib.sha256(library.read_bytes()).hexdigest()
            index.write_text(json.dumps(data))
            native.reset()
            assert native.launcher_module() is not None  # evicted and built again
    finally:
        native.reset()


@needs_cc
@pytest.mark.skipif(Path(sys.executable).read_bytes()[:4] != b"\x7fELF", reason="reads ELF headers")
def test_the_library_check_tells_what_an_elf_file_is(tmp_path):
    from tilecraft.execution.system_cc.library import shared_library_problem

    library = toolchain.compile_shared(GOOD_SOURCE, [], False, tmp_path / "keep")
    assert shared_library_problem(library) is None
    order = "little" if library[5] == 1 else "big"
    machine = int.from_bytes(library[18:20], order)
    other = library[:18] + (machine ^ 0x40).to_bytes(2, order) + library[20:]
    assert "a shared object for another machine" in shared_library_problem(other)
    narrow = library[:4] + bytes([3 - library[4]]) + library[5:]
    assert "another word size or byte order" in shared_library_problem(narrow)
    assert "truncated ELF file" in shared_library_problem(library[:40])
    assert shared_library_problem(b"") == "an empty file"
    assert "unknown format" in shared_library_problem(b"\x00\x01\x02\x03garbage")
    assert "relocatable object" in shared_library_problem(toolchain.compile_object(GOOD_SOURCE))


@tilecraft.jit(out_idx=[-1])
def _scaled(N, factor):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(N):
                Y[i] = X[i] * factor

    return main


@needs_cc
def test_verbose_says_what_is_built_before_the_compiler_runs(capsys):
    """A C build of a large kernel takes a while: TILECRAFT_VERBOSE says so before the compiler starts (with
    its command line) and when it is done; a kernel found in the cache is not built, and not reported."""
    factor = float(np.random.default_rng().integers(1, 2**20)) + 0.5  # a kernel no cache holds
    with settings.override(TILECRAFT_VERBOSE=True, TILECRAFT_TARGET="cpu"):
        kernel = _scaled(64, factor)
        err = capsys.readouterr().err
        # A second JIT function of the same factory compiles it again: from the cache this time.
        again = tilecraft.jit(out_idx=[-1])(_scaled.__wrapped__)(64, factor)
        err_again = capsys.readouterr().err
    x = np.random.rand(64).astype(np.float32)
    np.testing.assert_allclose(kernel(x), x * np.float32(factor), rtol=1e-6)
    np.testing.assert_allclose(again(x), x * np.float32(factor), rtol=1e-6)
    lines = [line for line in err.splitlines() if line.startswith("[tilecraft] ")]
    building = next(i for i, line in enumerate(lines) if line.startswith("[tilecraft] building main for c"))
    assert lines[building].endswith("with cc (not in the cache) ..."), lines
    assert lines[building + 1].startswith("[tilecraft] cc: ") and " lines of C)" in lines[building + 1], lines
    assert lines[building + 2].startswith("[tilecraft] built main for c") and " in " in lines[building + 2], (
        lines
    )
    assert "[tilecraft] building" not in err_again and "[tilecraft] cc:" not in err_again, err_again
