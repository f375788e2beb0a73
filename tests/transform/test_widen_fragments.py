"""widen-fragments: a fragment that T.Parallel loops index past its shape is sized from those loops (as
TileLang sizes its registers), with a located warning; every other access past a shape stays an error."""

from __future__ import annotations

import linecache
import warnings

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.transform.helpers import assert_nvcc_compiles, run
from tilecraft import settings
from tilecraft.backend import create_backend_context
from tilecraft.errors import KernelWarning, SemanticError
from tilecraft.ir import IRModule
from tilecraft.ir.structural import structural_equal
from tilecraft.transform.check import check_semantics
from tilecraft.transform.widen_fragments import widen_fragments

HEADS, BM, N = 3, 16, 37


def _sinks(declared: int):
    @T.prim_func
    def sinks_rows(Sinks: T.Tensor((HEADS,), "float32"), Y: T.Tensor((HEADS, N), "float32")):
        with T.Kernel(T.ceildiv(N, BM), HEADS, threads=128) as (bx, by):
            sinks = T.alloc_fragment((declared,), "float32")
            for i in T.Parallel(BM):
                sinks[i] = Sinks[by] * 2.0
            for i in T.Parallel(BM):
                if bx * BM + i < N:
                    Y[by, bx * BM + i] = sinks[i] + i

    return sinks_rows


def _widened(func):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod = widen_fragments(IRModule.from_func(func))
    return mod.functions[0], [w for w in caught if issubclass(w.category, KernelWarning)]


def test_the_fragment_takes_the_extent_of_its_parallel_loop():
    """Before: sinks of shape (3,) indexed by T.Parallel(16); after: the same kernel allocating (16,)."""
    after, _ = _widened(_sinks(HEADS))
    assert structural_equal(after, _sinks(BM))
    check_semantics(after)


def test_the_warning_names_the_fragment_the_loop_and_both_shapes():
    func = _sinks(HEADS)
    _, caught = _widened(func)
    assert len(caught) == 1
    loop_line = caught[0].lineno
    assert caught[0].filename == __file__
    assert "for i in T.Parallel(BM):" in linecache.getline(__file__, loop_line)
    assert str(caught[0].message) == (
        f"fragment sinks [3] is indexed up to 16 by the T.Parallel loop at {__file__}:{loop_line}; "
        "as TileLang does, tilecraft sizes it from that loop ([16])"
    )


def test_verbose_output_repeats_the_warning(capsys):
    with settings.override(TILECRAFT_VERBOSE=True):
        _widened(_sinks(HEADS))
    assert "[tilecraft] warning: fragment sinks [3] is indexed up to 16" in capsys.readouterr().err


def test_a_cached_lowering_still_warns(tmp_path):
    """The second compile reads the artifact from the disk cache; the sized fragment is reported again."""
    with settings.override(TILECRAFT_CACHE_DIR=tmp_path):
        for _ in range(2):
            with pytest.warns(KernelWarning, match="fragment sinks \\[3\\] is indexed up to 16"):
                tilecraft.compile(_sinks(HEADS), target="c")


def test_a_fragment_that_fits_is_left_alone():
    func = _sinks(BM)
    after, caught = _widened(func)
    assert after is func and not caught


def _grid(rows: int, cols: int):
    """Two dims widened at once: `w` is declared (2, 3) and indexed over (8, 12) in both loops."""

    @T.prim_func
    def grid_sum(A: T.Tensor((rows, cols), "float32"), Y: T.Tensor((rows, cols), "float32")):
        with T.Kernel(T.ceildiv(cols, 12), T.ceildiv(rows, 8), threads=64) as (bx, by):
            w = T.alloc_fragment((2, 3), "float32")
            for i, j in T.Parallel(8, 12):
                w[i, j] = A[by * 8 + i, bx * 12 + j] * 3.0
            for i, j in T.Parallel(8, 12):
                Y[by * 8 + i, bx * 12 + j] = w[i, j] + w[i, 0]

    return grid_sum


def _grid_reference(a):
    a = np.asarray(a, np.float64)
    ref = np.empty_like(a)
    for r0 in range(0, a.shape[0], 8):
        tile = a[r0 : r0 + 8] * 3.0
        for c0 in range(0, a.shape[1], 12):
            ref[r0 : r0 + 8, c0 : c0 + 12] = tile[:, c0 : c0 + 12] + tile[:, c0 : c0 + 1]
    return ref


def test_every_dim_is_widened_and_named_in_the_warning():
    _, caught = _widened(_grid(20, 30))
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith(
        "fragment w [2, 3] is indexed up to 8 in dim 0 and 12 in dim 1 by the T.Parallel"
    )
    assert message.endswith("tilecraft sizes it from that loop ([8, 12])")


def _rel_error(out, ref) -> float:
    out = np.asarray(out, np.float64)
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref)) if not np.isnan(out).any() else np.inf


@pytest.mark.parametrize("target", ["c", "opencl"])
def test_widened_kernels_run_correctly(target, request, tmp_path):
    """Ragged sizes against float64 NumPy, on the CPU and on OpenCL where a device is present."""
    ctx = request.getfixturevalue("opencl") if target == "opencl" else create_backend_context("c")
    rng = np.random.default_rng(11)
    sinks, y = rng.standard_normal(HEADS).astype(np.float32), np.full((HEADS, N), np.nan, np.float32)
    with pytest.warns(KernelWarning):
        run(_sinks(HEADS), ctx, sinks, y)
    expected = np.asarray(sinks, np.float64)[:, None] * 2.0 + np.arange(N) % BM
    assert _rel_error(y, expected) <= 1e-6

    a, out = rng.standard_normal((20, 30)).astype(np.float32), np.full((20, 30), np.nan, np.float32)
    with pytest.warns(KernelWarning):
        run(_grid(20, 30), ctx, a, out)
    assert _rel_error(out, _grid_reference(a)) <= 1e-6


def test_widened_kernels_compile_for_cuda(nvcc, tmp_path):
    with pytest.warns(KernelWarning):
        assert_nvcc_compiles(_sinks(HEADS), tmp_path)
    with pytest.warns(KernelWarning):
        assert_nvcc_compiles(_grid(20, 30), tmp_path)


# ------------------------------------------------------------------ still refused


@T.prim_func
def _shared(Sinks: T.Tensor((2,), "float32"), Y: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=128):
        s = T.alloc_shared((2,), "float32")
        for i in T.Parallel(16):
            s[i] = Sinks[0]
        for i in T.Parallel(16):
            Y[i] = s[i]


@T.prim_func
def _local(Sinks: T.Tensor((2,), "float32"), Y: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=128):
        s = T.alloc_local((2,), "float32")
        for i in T.Parallel(16):
            s[i] = Sinks[0]
        for i in T.Parallel(16):
            Y[i] = s[i]


@T.prim_func
def _copied_whole(Sinks: T.Tensor((2,), "float32"), Y: T.Tensor((16,), "float32")):
    """T.copy would move the declared 2 elements, the loops use 16: no single shape serves both."""
    with T.Kernel(1, threads=128):
        s = T.alloc_fragment((2,), "float32")
        T.copy(Sinks, s)
        for i in T.Parallel(16):
            s[i] = s[i] * 2.0
        for i in T.Parallel(16):
            Y[i] = s[i]


@T.prim_func
def _serial(Sinks: T.Tensor((2,), "float32"), Y: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=128):
        s = T.alloc_fragment((2,), "float32")
        for i in T.serial(16):
            s[i] = Sinks[0]
        for i in T.Parallel(16):
            Y[i] = s[i]


@T.prim_func
def _two_extents(Sinks: T.Tensor((2,), "float32"), Y: T.Tensor((32,), "float32")):
    with T.Kernel(1, threads=128):
        s = T.alloc_fragment((2,), "float32")
        for i in T.Parallel(16):
            s[i] = Sinks[0]
        for i in T.Parallel(32):
            Y[i] = s[i]


@T.prim_func
def _only_read(Sinks: T.Tensor((2,), "float32"), Y: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=128):
        s = T.alloc_fragment((2,), "float32")
        for i in T.Parallel(2):
            s[i] = Sinks[i]
        for i in T.Parallel(16):
            Y[i] = s[i]


@T.prim_func
def _below_zero(Sinks: T.Tensor((2,), "float32"), Y: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=128):
        s = T.alloc_fragment((16,), "float32")
        for i in T.Parallel(16):
            s[i - 1] = Sinks[0]
        for i in T.Parallel(15):
            Y[i] = s[i]


@pytest.mark.parametrize(
    ("func", "what"),
    [
        (_shared, "shared buffer s of shape (2,)"),
        (_local, "local s of shape (2,)"),
        (_copied_whole, "fragment s of shape (2,)"),
        (_serial, "fragment s of shape (2,)"),
        (_two_extents, "fragment s of shape (2,)"),
        (_only_read, "fragment s of shape (2,)"),
        (_below_zero, "runs over -1..14"),
    ],
    ids=["shared", "local", "copied-whole", "serial-loop", "two-extents", "only-read", "below-zero"],
)
def test_accesses_widening_cannot_serve_stay_errors(func, what):
    with warnings.catch_warnings():
        warnings.simplefilter("error", KernelWarning)  # nothing is widened, so nothing is reported
        with pytest.raises(SemanticError, match="is indexed outside its shape") as info:
            tilecraft.lower(func, target="c")
    assert what in info.value.message
