"""The compiled launcher on the CPU target: it runs the calls its rules accept (numpy arrays and torch
CPU tensors, outputs allocated or given), refuses nothing itself (every other call gets the Python
path's error, word for word), is built once into the cache and loaded thereafter, and falls back to
the Python path with one warning where it cannot be built."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft import settings
from tilecraft.execution import native

ROOT = Path(__file__).resolve().parents[2]
BLOCK = 64


def _affine():
    n = T.dynamic("n")

    @T.prim_func
    def affine(X: T.Tensor((n, 3), "float32"), W: T.Tensor((3,), "float32"), k: T.int16, alpha: T.float64,
               Y: T.Tensor((n, 3), "float32"), Cnt: T.Tensor((n,), "int32")):  # fmt: skip
        with T.Kernel(T.ceildiv(n, BLOCK), threads=1) as bx:
            for i, j in T.Parallel(BLOCK, 3):
                if bx * BLOCK + i < n:
                    Y[bx * BLOCK + i, j] = X[bx * BLOCK + i, j] * W[j] * alpha + k
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    Cnt[bx * BLOCK + i] = n + k

    return affine


FUNC = _affine()


def kernel_for(mode: str):
    with settings.override(TILECRAFT_LAUNCHER=mode):
        kernel = tilecraft.compile(FUNC, out_idx=[4, 5], target="c")
        kernel._plan = kernel._native_plan()
    return kernel


@pytest.fixture(scope="module")
def kernels():
    return {mode: kernel_for(mode) for mode in ("python", "compiled")}


def reference(x, w, k, alpha):
    x64 = np.asarray(x, np.float64)
    return x64 * np.asarray(w, np.float64) * alpha + k, np.full(len(x64), len(x64) + k, np.int32)


def inputs(n, library="numpy", seed=0):
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((n, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    if library == "torch":
        torch = pytest.importorskip("torch")
        return torch.from_numpy(x), torch.from_numpy(w)
    return x, w


def test_the_plan_exists_and_the_python_launcher_is_not_used(kernels):
    kernel = kernels["compiled"]
    assert type(kernel._plan).__name__ == "Plan"
    assert kernels["python"]._plan is False
    python_launch, kernel._launch = kernel._launch, None  # calling None would raise
    try:
        y, cnt = kernel(*inputs(70), 3, 0.5)
    finally:
        kernel._launch = python_launch
    np.testing.assert_allclose(y, reference(*inputs(70), 3, 0.5)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("library", ["numpy", "torch"])
@pytest.mark.parametrize("n", [1, 63, 64, 65, 200])
def test_allocated_outputs_match_the_reference(kernels, library, n):
    x, w = inputs(n, library, seed=n)
    for mode, kernel in kernels.items():
        y, cnt = kernel(x, w, -2, 1.25)
        assert type(y).__module__.split(".")[0] == library, mode
        ref_y, ref_cnt = reference(np.asarray(x), np.asarray(w), -2, 1.25)
        np.testing.assert_allclose(np.asarray(y), ref_y, rtol=1e-5, atol=1e-6, err_msg=mode)
        np.testing.assert_array_equal(np.asarray(cnt), ref_cnt, err_msg=mode)


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_given_outputs_are_written_in_place(kernels, library):
    x, w = inputs(130, library)
    for mode, kernel in kernels.items():
        y = np.full((130, 3), np.nan, np.float32)
        cnt = np.full(130, -7, np.int32)
        if library == "torch":
            import torch

            y, cnt = torch.from_numpy(y), torch.from_numpy(cnt)
        assert kernel(x, w, 5, -0.5, y, cnt) is None
        np.testing.assert_allclose(np.asarray(y), reference(np.asarray(x), np.asarray(w), 5, -0.5)[0], rtol=1e-5, atol=1e-6)
        assert (np.asarray(cnt) == 135).all(), mode


def _bad_calls():
    """(id, library, call maker) of calls the kernel must refuse; each maker gets (x, w, y, cnt)."""
    calls = {
        "dtype": lambda x, w, y, c: (x.astype(np.float64), w, 1, 1.0),
        "rank": lambda x, w, y, c: (x.reshape(-1), w, 1, 1.0),
        "static-dim": lambda x, w, y, c: (x, np.zeros(4, np.float32), 1, 1.0),
        "dims-disagree": lambda x, w, y, c: (x, w, 1, 1.0, y[:-1], c),
        "non-contiguous": lambda x, w, y, c: (np.asfortranarray(x), w, 1, 1.0),
        "read-only-output": lambda x, w, y, c: (x, w, 1, 1.0, _frozen(y), c),
        "byte-swapped": lambda x, w, y, c: (x.astype(x.dtype.newbyteorder("S")), w, 1, 1.0),
        "scalar-kind": lambda x, w, y, c: (x, w, 1.5, 1.0),
        "scalar-range": lambda x, w, y, c: (x, w, 40000, 1.0),
        "bool-for-int": lambda x, w, y, c: (x, w, True, 1.0),
        "float-kind": lambda x, w, y, c: (x, w, 1, "1.0"),
        "arity": lambda x, w, y, c: (x, w, 1),
        "not-an-array": lambda x, w, y, c: (x.tolist(), w, 1, 1.0),
    }
    return list(calls.items())


def _frozen(a):
    a = a.copy()
    a.flags.writeable = False
    return a


def _error_of(kernel, args):
    try:
        kernel(*args)
    except Exception as err:  # noqa: BLE001 - the type and text are what is compared
        return type(err), str(err)
    return None


@pytest.mark.parametrize("case, make", _bad_calls(), ids=[c for c, _ in _bad_calls()])
def test_refused_calls_get_the_same_error_from_both_launchers(kernels, case, make):
    x, w = inputs(20)
    y, cnt = np.zeros((20, 3), np.float32), np.zeros(20, np.int32)
    errors = {mode: _error_of(kernel, make(x, w, y, cnt)) for mode, kernel in kernels.items()}
    assert errors["python"] is not None, f"{case} was accepted"
    assert errors["compiled"] == errors["python"]


TORCH_BAD = {
    "dtype": lambda t, x, w: (x.double(), w, 1, 1.0),
    "every-other-row": lambda t, x, w: (x[::2], w, 1, 1.0),
    "transposed": lambda t, x, w: (t.randn(3, 20).t(), w, 1, 1.0),
    "dims": lambda t, x, w: (x[:, :2].contiguous(), w, 1, 1.0),
    "meta-device": lambda t, x, w: (x.to("meta"), w, 1, 1.0),
}


@pytest.mark.parametrize("case", list(TORCH_BAD))
def test_refused_torch_calls_get_the_same_error_from_both_launchers(kernels, case):
    torch = pytest.importorskip("torch")
    x, w = inputs(20, "torch")
    errors = {mode: _error_of(kernel, TORCH_BAD[case](torch, x, w)) for mode, kernel in kernels.items()}
    assert errors["python"] is not None, f"{case} was accepted"
    assert errors["compiled"] == errors["python"]


def test_a_bounds_check_failure_is_raised_through_the_compiled_launcher():
    @T.prim_func
    def overrun(X: T.Tensor((100,), "float32"), Y: T.Tensor((100,), "float32")):
        with T.Kernel(1, threads=32) as _:
            for i in T.serial(128):
                Y[i] = X[i] + 1.0

    messages = []
    for mode in ("python", "compiled"):
        with settings.override(TILECRAFT_LAUNCHER=mode):
            kernel = tilecraft.compile(overrun, target="c", pass_configs={"tilecraft.bounds_check": True})
            x = np.random.default_rng(0).standard_normal(100).astype(np.float32)
            with pytest.raises(Exception, match=r"out-of-bounds access to buffer [XY]") as info:
                kernel(x, np.full(100, np.nan, np.float32))
            messages.append((type(info.value), str(info.value)))
            assert bool(kernel._plan) == (mode == "compiled")
    assert messages[0] == messages[1]


def test_concurrent_calls_from_threads_do_not_share_slots(kernels):
    kernel = kernels["compiled"]
    failures = []

    def work(seed):
        for trial in range(50):
            n = 10 + (seed * 7 + trial) % 90
            x, w = inputs(n, seed=seed * 100 + trial)
            y, cnt = kernel(x, w, seed, 2.0)
            if not np.allclose(y, reference(x, w, seed, 2.0)[0], rtol=1e-5, atol=1e-5) or (cnt != n + seed).any():
                failures.append((seed, trial))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


# ---------------------------------------------------------------------- building and loading


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A cache of its own and no loaded launcher; both restored afterwards."""
    native.reset()
    with settings.override(TILECRAFT_CACHE_DIR=tmp_path / "cache"):
        yield tmp_path / "cache"
    native.reset()


def test_it_is_built_once_into_the_cache_and_loaded_without_a_compiler(fresh):
    assert native.launcher_module() is not None
    built = list(fresh.rglob(native.FILE_NAME))
    assert len(built) == 1
    native.reset()
    with settings.override(TILECRAFT_CC="/nonexistent/cc"), warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: nothing needs a compiler
        module = native.launcher_module()
    assert module is not None and Path(module.__file__) == built[0]


def test_without_a_compiler_calls_take_the_python_path_after_one_warning(fresh):
    kernel = tilecraft.compile(FUNC, out_idx=[4, 5], target="c")
    again = tilecraft.compile(FUNC, out_idx=[4, 5], target="c")  # compiled while the compiler is there
    with settings.override(TILECRAFT_CC="/nonexistent/cc"):
        with pytest.warns(RuntimeWarning, match=r"no C compiler for the compiled launcher.*Python launch path"):
            y, _ = kernel(*inputs(30), 1, 1.0)
        assert kernel._plan is False
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once per process
            again(*inputs(30), 1, 1.0)
    np.testing.assert_allclose(y, reference(*inputs(30), 1, 1.0)[0], rtol=1e-5, atol=1e-6)


def test_compiled_mode_without_a_compiler_is_an_error(fresh):
    unavailable = pytest.raises(native.LauncherUnavailable, match="no C compiler for the compiled launcher")
    with settings.override(TILECRAFT_CC="/nonexistent/cc", TILECRAFT_LAUNCHER="compiled"), unavailable:
        native.launcher_module()


def test_python_mode_never_builds_it(fresh):
    with settings.override(TILECRAFT_LAUNCHER="python"):
        assert native.launcher_module() is None
    assert not list(fresh.parent.rglob(native.FILE_NAME))


def test_a_disabled_or_unusable_cache_still_gets_a_launcher(fresh, tmp_path):
    with settings.override(TILECRAFT_DISABLE_CACHE=True):
        assert native.launcher_module() is not None
    assert not fresh.exists()
    native.reset()
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    with settings.override(TILECRAFT_CACHE_DIR=blocked / "cache"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cache's own warning about the unusable directory
        assert native.launcher_module() is not None


def test_processes_building_at_once_all_load_one_entry(tmp_path):
    script = ("from tilecraft.execution import native; m = native.launcher_module(); "
              "print(m.__file__ if m else 'none')")  # fmt: skip
    env = {**os.environ, "TILECRAFT_CACHE_DIR": str(tmp_path / "cache"), "TILECRAFT_LAUNCHER": "compiled",
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(3)]  # fmt: skip
    results = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), results
    assert all(out.strip().endswith(native.FILE_NAME) for out, _ in results)
    assert len(list((tmp_path / "cache").rglob(native.FILE_NAME))) == 1


def test_an_output_numpy_cannot_export_is_allocated_by_the_python_path():
    n = T.dynamic("n")

    @T.prim_func
    def to_bf16(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "bfloat16")):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=1) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    Y[bx * BLOCK + i] = T.cast(X[bx * BLOCK + i], "bfloat16")

    with settings.override(TILECRAFT_LAUNCHER="compiled"):
        kernel = tilecraft.compile(to_bf16, out_idx=[1], target="c")
        x = np.random.default_rng(3).standard_normal(77).astype(np.float32)
        y = kernel(x)
    assert type(kernel._plan).__name__ == "Plan"
    np.testing.assert_allclose(y.astype(np.float32), x, rtol=1e-2)


def test_a_kernel_without_a_plan_says_so_under_verbose(capsys):
    n = T.dynamic("n")

    @T.prim_func
    def strided(X: T.StridedTensor((n,), (2,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                Y[i] = X[i] + 1.0

    kernel = tilecraft.compile(strided, target="c")
    x = np.random.default_rng(3).standard_normal(20).astype(np.float32)
    y = np.full(10, np.nan, np.float32)
    with settings.override(TILECRAFT_VERBOSE=True, TILECRAFT_LAUNCHER="auto"):
        kernel(x[::2], y)
    np.testing.assert_allclose(y, x[::2] + 1.0, rtol=1e-6)
    assert kernel._plan is False
    assert "strided: no compiled launch plan" in capsys.readouterr().err
