"""The language features of tests/language's reducer-epoch, scan, atomic-form, predicate and fragment-constructor tests, lowered
for a SIMT target (HIP, gfx942) and run in the CPU emulator: the cross-thread parts (a reducer's copies
combined over lanes and LDS, each T.Parallel iteration counted once, one atomic per element) checked
against the same float64 references."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
from tests.hip.conftest import emulated_context
from tests.language import test_atomic_forms as atomics
from tests.language import test_fnuz_float8 as fnuz
from tests.language import test_fragment_constructors as fragments
from tests.language import test_packed_x2 as packed
from tests.language import test_random as random
from tests.language import test_reduce_nan_propagate as nan_semantics
from tests.language import test_reducer_epochs as epochs
from tests.language import test_scans as scans
from tests.language import test_select_any_all as predicates
from tests.language import test_warp_reduce as warp
from tilecraft.errors import LoweringError


@pytest.fixture(scope="module")
def hip(fake_library_path, emulator_compiler, emulator_build_dir):
    monkeypatch = pytest.MonkeyPatch()
    try:
        ctx, emulation = emulated_context(monkeypatch, "gfx942", fake_library_path, emulator_compiler,
                                          emulator_build_dir)  # fmt: skip
        yield ctx, emulation
    finally:
        monkeypatch.undo()


def run(hip, func, *arrays):
    """Compile `func` for the emulated target, run it on `arrays` and copy them back in place."""
    ctx, emulation = hip
    backend = ctx.execution_backend()
    launches = emulation.launches
    device = [backend.to_device(a) if isinstance(a, np.ndarray) else a for a in arrays]
    tilecraft.compile(func, ctx=ctx)(*device)
    assert emulation.launches > launches, "nothing ran in the emulator"
    for host, dev in zip(arrays, device):
        if isinstance(host, np.ndarray):
            host[...] = backend.to_host(dev)


@pytest.mark.parametrize("op", ["sum", "max"])
def test_reducer_epoch_with_a_seed(hip, op):
    m, n, seed = 13, 37, 0.75
    a = np.random.default_rng(3).standard_normal((m, n)).astype(np.float32)
    b = np.full(m, np.nan, np.float32)
    run(hip, epochs.row_reduction(m, n, op, seed), a, b)
    x = a.astype(np.float64)
    ref = x.sum(1) + seed if op == "sum" else np.maximum(x.max(1), seed)
    np.testing.assert_allclose(b, ref, rtol=1e-5, atol=1e-5)


def test_reducer_epoch_counts_each_iteration_once(hip):
    a = np.random.default_rng(4).integers(-1000, 1000, 9).astype(np.int32)
    b = np.full(1, -123456, np.int32)
    run(hip, epochs.scalar_sum(9), a, b)
    assert b[0] == int(a.astype(np.int64).sum()) + 7


@pytest.mark.parametrize("kind", ["max", "min"])
def test_scan_of_shared_tiles(hip, kind):
    m, n, block = 45, 37, 16
    a = np.random.default_rng(7).standard_normal((m, n)).astype(np.float32)
    b = np.full((m, n), np.nan, np.float32)
    run(hip, scans.tile_scan(m, n, block, kind, 1, True, False), a, b)
    np.testing.assert_allclose(b, scans.reference(a.astype(np.float64), block, kind, 1, True), rtol=1e-5)


def test_paired_atomic_adds(hip):
    m, n = 37, 24
    rng = np.random.default_rng(11)
    a = rng.standard_normal((m, n)).astype(np.float32)
    b = rng.standard_normal((m, n)).astype(np.float32)
    ref = b.astype(np.float64) + a
    run(hip, atomics.lanes_add(m, n, 16, 2, False), a, b)
    np.testing.assert_allclose(b, ref, rtol=1e-6, atol=1e-6)


def test_paired_adds_give_their_previous_values_under_contention(hip):
    atomics.check_contended_quads(lambda f, *a: run(hip, f, *a))


def test_a_scalar_atomic_into_a_ragged_region(hip):
    m, n = 45, 37
    rng = np.random.default_rng(12)
    a, c = rng.standard_normal((2, m, n)).astype(np.float32)
    s = rng.standard_normal(1).astype(np.float32)
    ref_a, ref_c = a.astype(np.float64) + 2.0 * s[0], np.maximum(c.astype(np.float64), 0.25)
    run(hip, atomics.scalar_into_region(m, n, 16), a, c, s)
    np.testing.assert_allclose(a, ref_a, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c, ref_c, rtol=1e-6, atol=1e-6)


def test_any_of_all_of_select(hip):
    rows, cols = 9, 7
    rng = np.random.default_rng(21)
    m = rng.random((rows, cols)) < 0.2
    m[3], m[4] = True, False
    f = np.where(rng.random((rows, cols)) < 0.3, rng.random((rows, cols)), 0).astype(np.float32)
    out = np.full((rows, 5), -99, np.int32)
    run(hip, predicates.predicates(rows, cols), m, f, out, 5)
    np.testing.assert_array_equal(out[:, 0], m.any(1))
    np.testing.assert_array_equal(out[:, 1], m.all(1))
    np.testing.assert_array_equal(out[:, 3], -(-(5 + np.arange(rows)) // 8) * 8)


def test_a_reduction_through_forward_fn_fragments(hip):
    """The user's fragments are the layout here: each row's sum combined over the threads forward_fn
    names (the block's 8: a SIMT fragment covers its block, and its map must be linear over GF(2))."""
    rows, width = fragments.ROWS, fragments.WIDTH
    x = np.random.default_rng(11).uniform(0.5, 2.0, (rows, width)).astype(np.float32)
    out = np.full_like(x, np.nan)
    run(hip, fragments.grouped_row_sums(0, threads=width // fragments.VECTOR), x, out)
    ref = x.astype(np.float64) / x.astype(np.float64).sum(1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_a_fragment_on_part_of_the_block_is_refused_at_its_annotation(hip):
    with pytest.raises(LoweringError, match="spreads it over 8 threads, but the kernel has 32") as err:
        run(hip, fragments.grouped_row_sums(0, threads=32), np.ones((4, 64), np.float32), np.ones((4, 64), np.float32))
    assert "test_fragment_constructors.py" in str(err.value) and "hip" in str(err.value)


def test_a_kernel_through_a_repeated_transposed_8x8_fragment(hip):
    a = np.random.default_rng(12).integers(-40, 40, (16, 8)).astype(np.int8)
    b = np.full((16, 8), -777, np.int32)
    run(hip, fragments.transposed_8x8_tiles(), a, b)
    np.testing.assert_array_equal(b, a.astype(np.int64) * 3 + 1)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("op", sorted(epochs.BITWISE))
def test_bitwise_reducers(hip, op, dtype):
    """The finalize combines each row's copies over lanes and LDS with the bitwise op."""
    m, n = 13, 37
    a, b = epochs.bitwise_inputs(m, n, op, dtype, 5)
    run(hip, epochs.bitwise_rows(m, n, op, dtype), a, b)
    np.testing.assert_array_equal(b, epochs.BITWISE[op].reduce(a, axis=1))


@pytest.mark.parametrize("kind, dtype", [("sum", "float32"), ("min", "float32"), ("bitxor", "int32")])
def test_warp_reduce_over_each_wavefront(hip, kind, dtype):
    """gfx942's thread group is a wavefront of 64: each of the block's two gets its own result."""
    x, y = warp.inputs(128, kind, dtype, 4)
    run(hip, warp.group_reduce(128, kind, dtype), x, y)
    warp.check(y, x, kind, 64)


@pytest.mark.parametrize("kind", ["add", "max"])
def test_atomic_expressions(hip, kind):
    from tests.language import test_atomic_expressions as expressions

    expressions.check_fetch_update(lambda f, *a: run(hip, f, *a), kind, "float32", "acq_rel")
    expressions.check_store_loaded(lambda f, *a: run(hip, f, *a))
    expressions.check_contended_counter(lambda f, *a: run(hip, f, *a))


@pytest.mark.parametrize("helper, n, args", [("get_lane_idx", 256, ()), ("get_warp_idx", 320, (20,)),
                                             ("get_warp_group_idx", 512, ()), ("shuffle_elect", 256, (64,))])
def test_lane_helpers(hip, helper, n, args):
    from tests.language import test_lane_helpers as lanes
    from tilecraft.transform.allreduce import group_width

    width = group_width(hip[0].target)
    lanes.check(lambda f, *a: run(hip, f, *a), width, helper, n, args)


def test_random_draws_per_thread(hip):
    """cuRAND's XORWOW per thread (subsequence tx + bx * threads) across a barrier and a branch."""
    a = np.full((3, 128, 2), 7, np.uint32)
    run(hip, random.per_thread(128, 3), a, 2)
    np.testing.assert_array_equal(a, random.per_thread_expected(128, 3, 2))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_packed_fma2(hip, dtype):
    a, b, c = packed._inputs(dtype, packed.PAIRS * 2, 3, seed=5)
    d = np.full(packed.PAIRS * 2, np.nan, packed._np(dtype))
    run(hip, packed._fma(dtype), a, b, c, d)
    want = [packed._round_once(packed.Fraction(float(x)) * packed.Fraction(float(y)) + packed.Fraction(float(z)),
                               dtype) for x, y, z in zip(a, b, c)]  # fmt: skip
    np.testing.assert_array_equal(d.astype(np.float64), np.array(want, np.float64))


@pytest.mark.parametrize("nan_propagate", [True, False])
@pytest.mark.parametrize("kind", ["max", "min", "absmax"])
def test_nan_ignoring_and_propagating_reductions_across_lanes(hip, kind, nan_propagate):
    """The row spread over lanes (a butterfly of exchanges) and over wavefronts (LDS): fmax / fmin on
    both, NaN ignored or propagated, all-NaN rows NaN, dst's value taking part with clear=False."""
    m, n = 6, 200
    a = nan_semantics.nan_rows(m, n, "float32", seed=11)
    start = np.random.default_rng(12).standard_normal(m).astype(np.float32)
    start[2] = np.nan
    for clear in (True, False):
        b = start.copy() if not clear else np.full(m, 12345.0, np.float32)
        run(hip, nan_semantics.row_reduce(m, n, kind, "float32", nan_propagate, clear, threads=256), a, b)
        nan_semantics.check(b, nan_semantics.reference(a, kind, nan_propagate, None if clear else start))


@pytest.mark.parametrize("dtype", ["float8_e4m3fnuz", "float8_e5m2fnuz"])
def test_fnuz_float8_conversions_through_lds(hip, dtype):
    """The shared conversions in the HIP source, run: bit for bit ml_dtypes' (tests/language)."""
    import ml_dtypes

    n = 128 * 6 - 5
    a = fnuz.every_float32_kind(n, seed=9)
    b = np.full(n, 0x55, np.uint8).view(getattr(ml_dtypes, dtype))
    c = np.full(n, 12345.0, np.float32)
    run(hip, fnuz.round_trip(n, dtype), a, b, c)
    want = a.astype(getattr(ml_dtypes, dtype))
    np.testing.assert_array_equal(b.view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(c, want.astype(np.float32) * 2)
