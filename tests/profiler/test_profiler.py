"""`Kernel.get_profiler()`: inputs made from the kernel's parameters, the reference check, timing.

Kernels run on the C target (always available); torch cases skip without torch.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.profiler.kernels import scaled_add
from tilecraft.errors import ArgumentError
from tilecraft.profiler import Profiler, TensorSupplyType, get_tensor_supply
from tilecraft.profiler.supply import supply_numpy

N = 512


def dynamic_copy():
    m = T.dynamic("m")

    @T.prim_func
    def copy(X: T.Tensor((m, 4), "float32"), Y: T.Tensor((m, 4), "float32")):
        with T.Kernel(T.ceildiv(m, 8), threads=32) as bx:
            for i, j in T.Parallel(8, 4):
                if bx * 8 + i < m:
                    Y[bx * 8 + i, j] = X[bx * 8 + i, j]

    return tilecraft.compile(copy, out_idx=[-1], target="c")


@pytest.fixture(scope="module")
def kernel():
    return scaled_add(N)


def reference(a, b):
    return a * 2 + b


def test_get_profiler_supplies_one_array_per_input(kernel):
    profiler = kernel.get_profiler(library="numpy")
    assert isinstance(profiler, Profiler)
    inputs = profiler._get_inputs()
    assert [(x.shape, x.dtype) for x in inputs] == [((N,), np.float32)] * 2
    assert len(profiler._get_inputs(with_output=True)) == 3


def test_assert_allclose_accepts_a_matching_reference(kernel):
    kernel.get_profiler(library="numpy").assert_allclose(reference, atol=1e-5, rtol=1e-5)


def test_assert_allclose_names_the_output_and_the_mismatch(kernel):
    with pytest.raises(AssertionError, match=r"output 0: \d+ of 512 elements .* differ from the reference"):
        kernel.get_profiler(library="numpy").assert_allclose(lambda a, b: a + b)


def test_max_mismatched_ratio_allows_a_few_wrong_elements(kernel):
    def one_wrong(a, b):
        out = reference(a, b)
        out[7] += 100.0
        return out

    profiler = kernel.get_profiler(library="numpy")
    profiler.assert_allclose(one_wrong, max_mismatched_ratio=0.01)
    with pytest.raises(AssertionError, match="1 of 512 elements"):
        profiler.assert_allclose(one_wrong, max_mismatched_ratio=0.0)


def test_input_tensors_are_used_as_given(kernel):
    a = np.full(N, 1.5, np.float32)
    b = np.full(N, -1.0, np.float32)
    seen = []
    kernel.get_profiler().assert_allclose(
        lambda x, y: seen.append(x) or reference(x, y), input_tensors=[a, b]
    )
    assert seen[0] is a


def test_run_once_returns_the_kernels_output(kernel):
    out = kernel.get_profiler(TensorSupplyType.One, library="numpy").run_once()
    np.testing.assert_array_equal(out, np.full(N, 3.0, np.float32))


def test_do_bench_returns_milliseconds(kernel):
    profiler = kernel.get_profiler(library="numpy")
    assert profiler.do_bench(n_warmup=1, n_repeat=3) > 0.0
    assert profiler.do_bench(reference, n_warmup=1, n_repeat=3) > 0.0


def test_assert_consistent(kernel):
    kernel.get_profiler(library="numpy").assert_consistent(repeat=2)


def test_a_symbolic_dim_needs_a_size():
    profiler = dynamic_copy().get_profiler(library="numpy")
    with pytest.raises(
        ArgumentError, match=r"parameter 'X'.*symbolic dim.*dynamic_symbolic_constraints=\{'m'"
    ):
        profiler._get_inputs()
    inputs = profiler._get_inputs(dynamic_symbolic_constraints={"m": 20})
    assert inputs[0].shape == (20, 4)
    assert profiler.do_bench(n_warmup=1, n_repeat=2, dynamic_symbolic_constraints={"m": 20}) > 0.0
    profiler.assert_allclose(lambda x: x.copy(), dynamic_symbolic_constraints={"m": 20})


def test_a_scalar_parameter_cannot_be_supplied():
    @T.prim_func
    def scale(X: T.Tensor((8,), "float32"), alpha: T.float32, Y: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8) as _:
            for i in T.Parallel(8):
                Y[i] = X[i] * alpha

    profiler = tilecraft.compile(scale, out_idx=[-1], target="c").get_profiler(library="numpy")
    with pytest.raises(ArgumentError, match="scalar parameter 'alpha'.*input_tensors"):
        profiler._get_inputs()
    x = np.ones(8, np.float32)  # scalars come with the inputs

    assert profiler.do_bench(input_tensors=[x, 2.0], n_warmup=1, n_repeat=1) > 0.0


def test_a_bad_supply_type_names_the_choices(kernel):
    with pytest.raises(ArgumentError, match="Integer, Uniform, Normal"):
        kernel.get_profiler("Gaussian")


@pytest.mark.parametrize(
    ("kind", "dtype", "low", "high"),
    [
        (TensorSupplyType.Integer, "float32", -2, 2),
        (TensorSupplyType.Integer, "uint8", 0, 2),
        (TensorSupplyType.Integer, "bool", 0, 1),
        (TensorSupplyType.Uniform, "float16", -1, 1),
        (TensorSupplyType.Auto, "bfloat16", -1, 1),
        (TensorSupplyType.Auto, "int32", -2, 2),
        (TensorSupplyType.Zero, "float32", 0, 0),
        (TensorSupplyType.One, "int8", 1, 1),
        (TensorSupplyType.Uniform, "int8", 1, 1),  # TileLang's rule: random floats mean nothing in int8
    ],
)
def test_supply_types_draw_from_tilelangs_ranges(kind, dtype, low, high):
    from tilecraft.ir.dtype import as_dtype

    values = supply_numpy(as_dtype(dtype), (4096,), kind, np.random.default_rng(0)).astype(np.float64)
    assert values.min() >= low and values.max() <= high
    if low != high:
        assert len(np.unique(values)) > 1  # really random: never a constant array


def test_get_tensor_supply_fills_a_parameter(kernel):
    supply = get_tensor_supply(TensorSupplyType.Integer, library="numpy")
    array = supply(kernel.params[0])
    assert array.shape == (N,) and set(np.unique(array)) <= {-2, -1, 0, 1, 2}


def test_tensor_supply_type_is_a_top_level_name():
    assert tilecraft.TensorSupplyType is TensorSupplyType
    assert tilecraft.profiler.Profiler is Profiler
