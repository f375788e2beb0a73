"""The wgpu execution backend on a real adapter (lavapipe in CI): the code paths the adapter's features
select, grid folding, arrays in and out, and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.webgpu.conftest import BARE
from tilecraft.backend import create_backend_context
from tilecraft.errors import ArgumentError, LoweringError
from tilecraft.testing import conformance as kit

# Without shader-f16, subgroups or f32 atomics: float16 widened on the host, reductions through
# workgroup memory, atomic adds by compare-exchange. The device has them; the code does not use them.
WITHOUT_FEATURES = BARE.replace("-workgroup_memory=16384", "-workgroup_memory=32768").replace(
    "-max_workgroup_size=256", "-max_workgroup_size=1024"
)
CASES = ("cast_scale_f16_to_f32_bf16", "int16_through_a_fragment", "row_sum_ragged", "abs_and_min_reductions",
         "softmax_f16", "layer_norm_row_stats_bf16", "gemm_bf16_out_ragged", "split_k_gemm_atomic",
         "cumsum", "while_data_dependent_trip_counts")  # fmt: skip


@pytest.fixture(scope="module")
def bare_ctx(adapter_runtime):
    return create_backend_context(WITHOUT_FEATURES, execution_backend="wgpu")


@pytest.mark.parametrize("name", CASES)
def test_the_code_without_optional_features_runs_correctly(bare_ctx, name):
    kit.check_case(next(c for c in kit.CASES if c.name == name), bare_ctx)


def _copy(n: int, block: int = 64):
    @T.prim_func
    def copy(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Y[bx * block + i] = X[bx * block + i] + 1.0

    return copy


def test_a_grid_past_65535_workgroups_per_dim_is_folded(adapter_runtime):
    n = 70001 * 64 + 5  # 70002 workgroups in one dim
    kernel = tilecraft.compile(_copy(n), target="webgpu", execution_backend="wgpu")
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    y = np.full(n, np.nan, np.float32)
    kernel(x, y)
    np.testing.assert_array_equal(y, x + 1.0)


def test_read_only_inputs_are_accepted_and_outputs_must_be_writable(adapter_runtime):
    kernel = tilecraft.compile(_copy(300), target="webgpu", execution_backend="wgpu")
    x = np.random.default_rng(1).standard_normal(300).astype(np.float32)
    x.flags.writeable = False
    y = np.full(300, np.nan, np.float32)
    kernel(x, y)
    np.testing.assert_array_equal(y, x + 1.0)
    y.flags.writeable = False
    with pytest.raises(ArgumentError, match="read-only memory, but the kernel writes it"):
        kernel(x, y)


def test_torch_cpu_tensors_in_and_out(adapter_runtime):
    torch = pytest.importorskip("torch")
    kernel = tilecraft.compile(_copy(300), target="webgpu", execution_backend="wgpu")
    x = torch.randn(300)
    y = torch.full((300,), float("nan"))
    kernel(x, y)
    assert torch.equal(y, x + 1.0)


def test_a_scalar_out_of_its_range_names_the_parameter(adapter_runtime):
    @T.prim_func
    def fill(Y: T.Tensor((64,), "int32"), value: T.int32):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                Y[i] = value

    kernel = tilecraft.compile(fill, target="webgpu", execution_backend="wgpu")
    y = np.zeros(64, np.int32)
    kernel(y, -7)
    assert (y == -7).all()
    with pytest.raises(ArgumentError, match="'value'"):
        kernel(y, 2**40)


def test_64_bit_comparisons_and_uint32_to_int64_are_exact(adapter_runtime):
    """lavapipe (Mesa 22.3) gets `i64(1) > 200li` wrong and sign-extends `i64(x)` of a u32 >= 2**31;
    the fuzz suite found both. The printer compares 64-bit halves and converts u32 -> i64 through u64."""
    n = 256

    @T.prim_func
    def order(X: T.Tensor((n,), "uint32"), V: T.Tensor((n,), "int64"), Y: T.Tensor((n,), "int32")):
        with T.Kernel(T.ceildiv(n, 64), threads=64) as bx:
            for i in T.Parallel(64):
                w = T.cast(X[bx * 64 + i], "int64")
                Y[bx * 64 + i] = (T.if_then_else(w > T.int64(200), 1, 0) + T.if_then_else(V[bx * 64 + i] < w, 2, 0)
                                  + T.if_then_else(V[bx * 64 + i] >= T.int64(-3), 4, 0))  # fmt: skip

    kernel = tilecraft.compile(order, target="webgpu", execution_backend="wgpu")
    rng = np.random.default_rng(7)
    x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    x[:4] = [1, 200, 201, 2**31]
    v = rng.integers(-(2**40), 2**40, n, dtype=np.int64)
    v[:4] = [-3, -4, 2**33, 0]
    y = np.full(n, -1, np.int32)
    kernel(x, v, y)
    w = x.astype(np.int64)
    expected = (w > 200) * 1 + (v < w) * 2 + (v >= -3) * 4
    np.testing.assert_array_equal(y, expected.astype(np.int32))


def _llvmpipe(runtime) -> bool:
    return "llvmpipe" in runtime.description.lower()


def test_the_adapter_s_loop_limit_is_on_the_target(adapter_runtime):
    expected = 65535 if _llvmpipe(adapter_runtime) else 0
    assert tilecraft.Target.parse("webgpu").attr("max_loop_iterations") == expected


def _gemm_inputs(m: int, n: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b, np.full((m, n), np.nan, np.float32)


def test_a_long_k_gemm_is_right_or_refused_never_cut_short(adapter_runtime):
    """The reported bug: a float16 GEMM of 128x128 blocks on 128 threads came back NaN on lavapipe from
    K = 512 on (llvmpipe ends every loop once an invocation has run 65535 loop passes). It is refused
    there now; with 64x64 blocks K = 1024 fits and is right."""
    square = kit.kernels.gemm(256, 256, 512, block_m=128, block_n=128, block_k=32)
    if _llvmpipe(adapter_runtime):
        with pytest.raises(LoweringError, match="loop passes") as info:
            tilecraft.compile(square, target="webgpu", execution_backend="wgpu")
        assert info.value.unsupported == "resource:loop-iterations"
    else:
        a, b, c = _gemm_inputs(256, 256, 512, 11)
        tilecraft.compile(square, target="webgpu", execution_backend="wgpu")(a, b, c)
        reference = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(c, reference, rtol=0, atol=1e-4 * np.abs(reference).max())
    kernel = tilecraft.compile(kit.kernels.gemm(128, 128, 1024), target="webgpu", execution_backend="wgpu")
    a, b, c = _gemm_inputs(128, 128, 1024, 12)
    kernel(a, b, c)
    reference = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, reference, rtol=0, atol=1e-4 * np.abs(reference).max())


def _counting(outer: int, inner: int):
    @T.prim_func
    def counting(X: T.Tensor((32,), "int32"), Y: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(32):
                total = T.alloc_var("int32")
                total = 0
                for _p in T.serial(outer):
                    for _q in T.serial(inner):
                        total += X[i]
                Y[i] = total

    return counting


def test_llvmpipe_still_cuts_loops_short_where_the_count_says(adapter_runtime):
    """Where the count is at most 65535 the loops run whole; one outer iteration more and, with the check
    turned off, llvmpipe cuts them short (so the limit is still there); with the check, that is refused."""
    if not _llvmpipe(adapter_runtime):
        pytest.skip(f"the loop limit is llvmpipe's; this adapter is {adapter_runtime.description}")
    unchecked = "webgpu -max_loop_iterations=0"
    x = np.ones(32, np.int32)
    results = {}
    for outer in (992, 993):  # 64-iteration inner loops: 65475 and 65541 passes counted
        y = np.full(32, -1, np.int32)
        tilecraft.compile(_counting(outer, 64), target=unchecked, execution_backend="wgpu")(x, y)
        results[outer] = int(y[0])
    assert results == {992: 992 * 64, 993: 992 * 64 + 63}
    tilecraft.compile(_counting(992, 64), target="webgpu", execution_backend="wgpu")
    with pytest.raises(LoweringError, match="runs 65,541 loop passes"):
        tilecraft.compile(_counting(993, 64), target="webgpu", execution_backend="wgpu")
