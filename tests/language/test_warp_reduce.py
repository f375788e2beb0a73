"""`T.warp_reduce_sum / max / min / bitand / bitor / bitxor(value)`: each thread's value combined over its
thread group (32 consecutive threads where the target has no lockstep groups, as on the CPU), read by
every thread of the group, against float64 NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_located
from tilecraft.errors import LoweringError, ParseError

REFERENCES = {
    "sum": np.sum, "max": np.max, "min": np.min, "bitand": np.bitwise_and.reduce,
    "bitor": np.bitwise_or.reduce, "bitxor": np.bitwise_xor.reduce,
}  # fmt: skip


def group_reduce(threads: int, kind: str, dtype: str):
    """Y[t] = 2 * warp_reduce_kind(X[t]) + X[t]: the result used inside a larger expression."""
    reduce = getattr(T, f"warp_reduce_{kind}")

    @T.prim_func
    def kernel(X: T.Tensor((threads,), dtype), Y: T.Tensor((threads,), dtype)):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding(0)
            v = T.alloc_local([1], dtype)
            v[0] = X[tx]
            Y[tx] = reduce(v[0]) * 2 + v[0]

    return kernel


def inputs(threads: int, kind: str, dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(threads).astype(dtype)
    elif kind == "bitand":  # mostly-set bits, so the and of a group is neither 0 nor all ones
        x = (~(rng.integers(0, 2**10, threads) << rng.integers(0, 20, threads))).astype(dtype)
    elif kind == "bitor":
        x = (rng.integers(0, 2, threads) << rng.integers(0, 40, threads)).astype(dtype)
    else:
        x = rng.integers(-(2**40), 2**40, threads).astype(dtype)
    return x, np.full(threads, 12345, dtype)


def reference(x: np.ndarray, kind: str, width: int) -> np.ndarray:
    wide = x.astype(np.float64) if x.dtype.kind == "f" else x
    groups = wide.reshape(-1, width)
    return np.repeat([REFERENCES[kind](g) for g in groups], width) * 2 + wide


def check(y: np.ndarray, x: np.ndarray, kind: str, width: int) -> None:
    ref = reference(x, kind, width)
    if x.dtype.kind == "f":
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(y, ref.astype(x.dtype))


@pytest.mark.parametrize(
    "kind, dtype",
    [("sum", "float32"), ("max", "float32"), ("min", "float32"), ("sum", "int64"), ("max", "int64"),
     ("bitand", "int32"), ("bitor", "int64"), ("bitxor", "int32")],
)  # fmt: skip
def test_each_group_of_32_threads_gets_its_own_result(kind, dtype):
    x, y = inputs(96, kind, dtype, 3)
    tilecraft.compile(group_reduce(96, kind, dtype), target="c")(x, y)
    check(y, x, kind, 32)


def reduce_in_a_branch():
    @T.prim_func
    def kernel(X: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding(0)
            if tx < 16:
                X[tx] = T.warp_reduce_sum(X[tx])  # <- error

    return kernel


def test_a_reduce_that_only_some_threads_reach_is_refused_at_its_line():
    with pytest.raises(LoweringError, match="differs between threads; every thread of the block must reach it") as err:
        tilecraft.compile(reduce_in_a_branch(), target="c")
    assert "test_warp_reduce.py" in str(err.value) and "X[tx] = T.warp_reduce_sum(X[tx])  # <- error" in str(err.value)


def test_a_block_of_partial_groups_is_refused_at_the_call():
    with pytest.raises(LoweringError, match="combines the 32 threads of each thread group") as err:
        tilecraft.compile(group_reduce(48, "sum", "float32"), target="c")
    assert "test_warp_reduce.py" in str(err.value) and "launch a multiple of 32 threads" in str(err.value)


def bitwise_of_a_float():
    @T.prim_func
    def kernel(X: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding(0)
            X[tx] = T.warp_reduce_bitor(X[tx])  # <- error

    return kernel


def test_a_bitwise_reduce_of_a_float_is_refused_at_its_line():
    with pytest.raises(ParseError, match="T.warp_reduce_bitor needs an integer value, got float32") as err:
        bitwise_of_a_float()
    assert_located(err.value, bitwise_of_a_float)
