"""The CPU backend end to end: rejection of thread-dependent code, bounds checks, T.print, the cache."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft import settings
from tilecraft.errors import LoweringError, ToolchainError

ROOT = Path(__file__).resolve().parents[2]


def scale_kernel(n=256, block=64):
    @T.prim_func
    def scale(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                Y[bx * block + i] = X[bx * block + i] * 3.0

    return scale


def test_per_thread_code_runs_for_every_thread():
    @T.prim_func
    def per_thread(X: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            X[tx] = T.cast(tx, "float32") * 2.0

    x = np.full(128, np.nan, np.float32)
    tilecraft.compile(per_thread, target="cpu")(x)
    np.testing.assert_array_equal(x, np.arange(128, dtype=np.float32) * 2)


def test_a_barrier_some_threads_skip_is_rejected_with_the_kernel_line():
    @T.prim_func
    def skipped(X: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            if tx < 64:  # the offending line
                X[tx] = 1.0
                T.sync_threads()

    with pytest.raises(LoweringError) as info:
        tilecraft.compile(skipped, target="cpu")
    err = info.value
    assert err.span is not None and err.span.file == __file__
    assert "if tx < 64:" in str(err)
    assert "some threads would skip" in str(err) and "target: c" in str(err)


def test_bounds_check_reports_the_kernel_line():
    @T.prim_func
    def overrun(X: T.Tensor((100,), "float32"), Y: T.Tensor((100,), "float32")):
        with T.Kernel(1, threads=32) as _:
            for i in T.serial(128):
                Y[i] = X[i] + 1.0  # reads and writes past 100

    kernel = tilecraft.compile(
        overrun, target="cpu", pass_configs={tilecraft.PassConfigKey.BOUNDS_CHECK: True}
    )
    x = np.random.default_rng(0).standard_normal(100).astype(np.float32)
    y = np.full(100, np.nan, np.float32)
    with pytest.raises(
        Exception, match=r"out-of-bounds access to buffer [XY] at .*test_cpu_backend.py:\d+"
    ) as info:
        kernel(x, y)
    assert "Y[i] = X[i] + 1.0" in str(info.value)
    np.testing.assert_allclose(y, x + 1.0, rtol=1e-6)


def test_bounds_check_passes_clean_kernels():
    kernel = tilecraft.compile(scale_kernel(), target="cpu", pass_configs={"tilecraft.bounds_check": True})
    x = np.random.default_rng(1).standard_normal(256).astype(np.float32)
    y = np.empty_like(x)
    kernel(x, y)
    np.testing.assert_allclose(y, x * 3.0, rtol=1e-6)


@pytest.mark.parametrize("launcher", ["python", "compiled"])
def test_bounds_check_reports_stay_with_their_call_across_threads(launcher):
    """Each call keeps its own out-of-bounds report: six threads call one checked kernel at once, one
    clean and five failing at different offsets, and each gets exactly its own call's outcome (the
    report once lived in statics of the library, and calls overwrote each other's)."""
    n, quarter = 1 << 16, 1 << 14

    @T.prim_func
    def shifted(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), shift: T.int32):
        with T.Kernel(4, threads=32) as bx:
            for i in T.serial(quarter):
                Y[bx * quarter + i] = X[bx * quarter + i - shift] + 1.0  # block 0 starts at -shift

    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    wrong = []

    def expected(shift, outcome):
        if shift == 0:
            return outcome == "clean"
        where = f"out-of-bounds access to buffer X at {__file__}"
        return outcome.startswith(where) and outcome.endswith(f"(element offset {-shift})")

    def calls(shift):
        y = np.full(n, np.nan, np.float32)
        for _ in range(60):
            try:
                kernel(x, y, shift)
                outcome = "clean"
            except Exception as err:  # noqa: BLE001 - the outcome is compared below
                outcome = str(err)
            if not expected(shift, outcome):
                wrong.append((shift, outcome))
        if shift == 0 and not np.array_equal(y, x + np.float32(1.0)):
            wrong.append((shift, "wrong values"))  # an assertion here would be lost with the thread

    with settings.override(TILECRAFT_LAUNCHER=launcher):
        kernel = tilecraft.compile(shifted, target="cpu", pass_configs={"tilecraft.bounds_check": True})
        threads = [threading.Thread(target=calls, args=(shift,)) for shift in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not wrong, f"{len(wrong)} calls got another call's outcome, first: {wrong[0]}"


def test_print_shows_values(capfd):
    @T.prim_func
    def show(X: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32) as _:
            T.print(X[2], msg="third")
            T.print(X)

    kernel = tilecraft.compile(show, target="cpu")
    kernel(np.arange(4, dtype=np.float32) + 0.5)
    out = capfd.readouterr().out
    assert "third: 2.5" in out
    assert "X[3] = 3.5" in out


def test_threads_do_not_change_results():
    x = np.random.default_rng(2).standard_normal(256).astype(np.float32)
    results = []
    for threads in (1, 128):

        @T.prim_func
        def scale(X: T.Tensor((256,), "float32"), Y: T.Tensor((256,), "float32")):
            with T.Kernel(4, threads=threads) as bx:  # noqa: B023 - parsed right here
                for i in T.Parallel(64):
                    Y[bx * 64 + i] = X[bx * 64 + i] * 3.0

        y = np.empty_like(x)
        tilecraft.compile(scale, target="cpu")(x, y)
        results.append(y)
    np.testing.assert_array_equal(results[0], results[1])


def test_missing_compiler_is_an_actionable_error(tmp_path):
    from tilecraft.execution.cc import toolchain

    with settings.override(TILECRAFT_CC=str(tmp_path / "no-such-cc")), pytest.raises(ToolchainError) as info:
        toolchain.compiler()
    assert "install a C compiler" in str(info.value)


def test_compiler_failure_shows_command_and_source(tmp_path):
    fake = tmp_path / "badcc"
    fake.write_text("#!/bin/sh\necho 'kernel.c:1: error: planted failure' >&2\nexit 1\n")
    fake.chmod(0o755)
    from tilecraft.execution.cc import toolchain

    with settings.override(TILECRAFT_CC=str(fake)), pytest.raises(ToolchainError) as info:
        toolchain.compile_shared("int f(void) { return 0; }", [], False, tmp_path / "keep")
    text = str(info.value)
    assert "planted failure" in text and str(fake) in text
    assert str(tmp_path / "keep" / "kernel.c") in text and (tmp_path / "keep" / "kernel.c").exists()


_SECOND_PROCESS = textwrap.dedent(
    """
    import importlib, sys
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {here!r})
    import numpy as np
    from test_cpu_backend import scale_kernel
    import tilecraft
    if {warm!r}:
        # A warm process loads the cached artifact and library: lowering or compiling again fails it.
        def refuse(what):
            def call(*args, **kwargs):
                raise AssertionError(f"the warm process {{what}}")
            return call
        importlib.import_module("tilecraft.jit.lower").lower_uncached = refuse("lowered the kernel again")
        importlib.import_module("tilecraft.execution.cc.toolchain").compile_shared = refuse("ran the compiler")
    kernel = tilecraft.compile(scale_kernel(), target="cpu")
    x = np.arange(256, dtype=np.float32); y = np.empty_like(x)
    kernel(x, y)
    assert np.allclose(y, x * 3)
    """
)


def _compile_in_subprocess(cache_dir: Path, warm: bool = False) -> None:
    """Compile and run the scale kernel in a fresh process on `cache_dir`; `warm`: it must come from the
    cache, neither lowered nor compiled (how fast that is: benchmarks/startup.py)."""
    env = {**os.environ, "TILECRAFT_CACHE_DIR": str(cache_dir), "TILECRAFT_VERBOSE": "0"}
    code = _SECOND_PROCESS.format(root=str(ROOT), here=str(Path(__file__).parent), warm=warm)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr


def _libraries(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.rglob("kernel.so"))


def test_second_process_loads_from_the_cache(tmp_path):
    _compile_in_subprocess(tmp_path)
    libs = _libraries(tmp_path)
    assert len(libs) == 1
    stamp = libs[0].stat().st_mtime_ns
    _compile_in_subprocess(tmp_path, warm=True)
    assert _libraries(tmp_path)[0].stat().st_mtime_ns == stamp, "the library was rebuilt"


@pytest.mark.parametrize("damage", ["delete", "corrupt"])
def test_damaged_cache_entry_is_rebuilt(tmp_path, damage):
    _compile_in_subprocess(tmp_path)
    lib = _libraries(tmp_path)[0]
    if damage == "delete":
        lib.unlink()
    else:
        lib.write_bytes(b"not a shared library")
    _compile_in_subprocess(tmp_path)
    rebuilt = _libraries(tmp_path)
    assert len(rebuilt) == 1 and rebuilt[0].read_bytes()[:4] == b"\x7fELF"


def test_a_changed_compiler_does_not_reuse_old_lowerings(tmp_path, monkeypatch):
    """The artifact key covers the compiler's own code, not only the version number."""
    from tilecraft.execution import cache as cache_module
    from tilecraft.jit.lower import artifact_key

    ctx = tilecraft.create_backend_context("cpu")
    func = scale_kernel()
    before = artifact_key(func, ctx, None, None)
    assert artifact_key(func, ctx, None, None) == before
    monkeypatch.setattr(cache_module, "package_fingerprint", lambda: "an edited pass")
    assert artifact_key(func, ctx, None, None) != before


def test_float8_runs_on_the_cpu():
    """float8 used to be rejected by check-block-model, when the conformance tests still skipped on every
    LoweringError; this one makes sure the CPU target compiles and runs it (numbers: test_float8.py)."""
    import ml_dtypes

    from tests.conformance.test_float8 import _cast_kernel, reference_bits

    x = np.linspace(-500, 500, 300, dtype=np.float32)
    y, z = np.zeros(300, ml_dtypes.float8_e4m3fn), np.zeros(300, np.float32)
    tilecraft.compile(_cast_kernel(300, "float32", "float8_e4m3fn"), target="c")(x, y, z)
    assert np.array_equal(y.view(np.uint8), reference_bits(x, "float8_e4m3fn"))
