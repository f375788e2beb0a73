"""T.max, T.min and the max/min reductions follow NumPy's maximum, minimum, max and min: a NaN operand or
element gives NaN, wherever it is (first, middle or last of a row; either operand), on every target
(docs/language.md, "NaN in max and min"). Integer max and min are unchanged (test_integer_semantics.py)."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft.language as T

M, N = 8, 256
FLOATS = ("float32", "float16", "float64")
# Row r holds a NaN at column WHERE[r] (None: no NaN): first, middle, last, two, none.
WHERE = (0, N // 2 - 1, N - 1, (3, N - 5), None, 17, None, N - 1)
REDUCTIONS = {
    "reduce_max": (T.reduce_max, lambda x: np.max(x, axis=1)),
    "reduce_min": (T.reduce_min, lambda x: np.min(x, axis=1)),
    "reduce_absmax": (T.reduce_absmax, lambda x: np.max(np.abs(x), axis=1)),
}


def _rows_with_nan(dtype: str, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((M, N)).astype(dtype)
    for row, where in enumerate(WHERE):
        if where is not None:
            x[row, where] = np.nan
    return x


def _run(backend_ctx, func, arrays, outputs):
    from tests.conformance.test_conformance import compile_or_skip

    kernel = compile_or_skip(func, backend_ctx)
    backend = backend_ctx.execution_backend()
    device = [backend.to_device(a) for a in arrays]
    kernel(*device)
    return [backend.to_host(device[i]) for i in outputs]


def _reduction(reduce, dtype: str, clear: bool):
    @T.prim_func
    def reduction(X: T.Tensor((M, N), dtype), Y: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=128) as _:
            x = T.alloc_fragment((M, N), dtype)
            y = T.alloc_fragment((M,), dtype)
            T.copy(X, x)
            T.copy(Y, y)
            reduce(x, y, dim=1, clear=clear)
            T.copy(y, Y)

    return reduction


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_a_nan_anywhere_in_a_row_gives_nan(backend_ctx, name, dtype):
    reduce, reference = REDUCTIONS[name]
    x = _rows_with_nan(dtype, len(name))
    (y,) = _run(backend_ctx, _reduction(reduce, dtype, True), [x, np.full(M, 7, dtype)], [1])
    np.testing.assert_array_equal(y, reference(x))  # NaN where NumPy gives NaN, exact elsewhere


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["reduce_max", "reduce_min"])
def test_a_nan_already_in_the_running_result_stays(backend_ctx, name, dtype):
    """clear=False combines with what the output holds (online softmax's running maximum)."""
    reduce, reference = REDUCTIONS[name]
    x = np.random.default_rng(3).standard_normal((M, N)).astype(dtype)
    x[5, 9] = np.nan
    running = np.random.default_rng(4).standard_normal(M).astype(dtype)
    running[[0, 2]] = np.nan
    (y,) = _run(backend_ctx, _reduction(reduce, dtype, False), [x, running.copy()], [1])
    both = np.concatenate([x, running[:, None]], axis=1)
    np.testing.assert_array_equal(y, reference(both))


@pytest.mark.parametrize("dtype", FLOATS)
def test_elementwise_max_and_min_give_nan_for_a_nan_on_either_side(backend_ctx, dtype):
    @T.prim_func
    def extrema(X: T.Tensor((M, N), dtype), W: T.Tensor((M, N), dtype), Hi: T.Tensor((M, N), dtype),
                Lo: T.Tensor((M, N), dtype)):  # fmt: skip
        with T.Kernel(1, threads=128) as _:
            for i, j in T.Parallel(M, N):
                Hi[i, j] = T.max(X[i, j], W[i, j])
                Lo[i, j] = T.min(X[i, j], W[i, j])

    x, w = _rows_with_nan(dtype, 1), _rows_with_nan(dtype, 2)[::-1].copy()  # NaNs on each side, some on both
    poison = np.full((M, N), 7, dtype)
    hi, lo = _run(backend_ctx, extrema, [x, w, poison, poison.copy()], [2, 3])
    np.testing.assert_array_equal(hi, np.maximum(x, w))
    np.testing.assert_array_equal(lo, np.minimum(x, w))


def test_max_and_min_of_python_numbers_give_nan_too():
    nan = float("nan")
    assert all(np.isnan(v) for v in (T.max(nan, 1.0), T.max(1.0, nan), T.min(2.0, nan), T.min(nan, 2.0)))
    assert T.max(1, 3, 2) == 3 and T.min(1.5, -2) == -2
