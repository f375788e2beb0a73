"""TileLang's reducer epochs: `T.reducer_init(r, seed)`, `T.reducer_update(r[i], x)` in `T.Parallel`
loops and `T.finalize_reducer(r, result)`, against float64 NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_located
from tilecraft.errors import ParseError

THREADS = 128


def row_reduction(m: int, n: int, op: str, seed: float):
    """Each row of A reduced by `op` into B, the epoch seeded from a tile overwritten after the init."""

    @T.prim_func
    def kernel(A: T.Tensor((m, n), "float32"), B: T.Tensor((m,), "float32")):
        with T.Kernel(1, threads=THREADS):
            a = T.alloc_fragment((m, n), "float32")
            T.copy(A, a)
            start = T.alloc_fragment((1,), "float32")
            start[0] = seed
            acc = T.alloc_reducer((m,), "float32", op=op)
            T.reducer_init(acc, start[0])
            start[0] = 1000.0  # the seed was taken at the init: this changes nothing
            for i, j in T.Parallel(m, n):
                T.reducer_update(acc[i], a[i, j])
            result = T.alloc_fragment((m,), "float32")
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    return kernel


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_row_reduction_with_a_seed_taken_at_the_init(op):
    m, n, seed = 13, 37, 0.75
    a = np.random.default_rng(3).standard_normal((m, n)).astype(np.float32)
    b = np.full(m, np.nan, np.float32)
    tilecraft.compile(row_reduction(m, n, op, seed), target="c")(a, b)
    x = a.astype(np.float64)
    ref = {"sum": x.sum(1) + seed, "max": np.maximum(x.max(1), seed), "min": np.minimum(x.min(1), seed)}[op]
    np.testing.assert_allclose(b, ref, rtol=1e-5, atol=1e-5)


def bitwise_rows(m: int, n: int, op: str, dtype: str):
    """Each row of A combined bitwise (`op`: bitand, bitor, bitxor) by a reducer epoch, into B."""

    @T.prim_func
    def kernel(A: T.Tensor((m, n), dtype), B: T.Tensor((m,), dtype)):
        with T.Kernel(1, threads=THREADS):
            src = T.alloc_fragment((m, n), dtype)
            T.copy(A, src)
            acc = T.alloc_reducer((m,), dtype, op=op)
            T.reducer_init(acc)
            for i, j in T.Parallel(m, n):
                T.reducer_update(acc[i], src[i, j])
            result = T.alloc_fragment((m,), dtype)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    return kernel


BITWISE = {"bitand": np.bitwise_and, "bitor": np.bitwise_or, "bitxor": np.bitwise_xor}


def bitwise_inputs(m: int, n: int, op: str, dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs whose combination keeps some bits set and some clear (random bits would leave a row's
    bitand all zeros and its bitor all ones, which a wrong identity also gives), and a poisoned output."""
    rng = np.random.default_rng(seed)
    bits = np.iinfo(dtype).bits
    sparse = np.zeros((m, n), np.uint64)
    for bit in range(bits):  # each bit set in about one element of 4n, so a row's or is mixed
        sparse |= (rng.random((m, n)) < 1 / (4 * n)).astype(np.uint64) << np.uint64(bit)
    raw = {"bitand": ~sparse, "bitor": sparse}.get(op, rng.integers(0, 2**63, (m, n), dtype=np.uint64))
    a = (raw & np.uint64(2**bits - 1)).astype(np.dtype(dtype).str.replace("i", "u")).view(dtype)
    return a, np.full(m, np.iinfo(dtype).max // 3, dtype)


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64"])
@pytest.mark.parametrize("op", sorted(BITWISE))
def test_bitwise_reducers(op, dtype):
    m, n = 13, 37
    a, b = bitwise_inputs(m, n, op, dtype, 5)
    tilecraft.compile(bitwise_rows(m, n, op, dtype), target="c")(a, b)
    ref = BITWISE[op].reduce(a, axis=1)
    assert len(np.unique(ref)) > 1 and 0 not in ref and -1 not in ref  # the rows differ, and none is trivial
    np.testing.assert_array_equal(b, ref)


def scalar_sum(extent: int):
    """A T.Parallel loop much smaller than the block: each iteration counts once, not once per thread."""

    @T.prim_func
    def kernel(A: T.Tensor((extent,), "int32"), B: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=THREADS):
            src = T.alloc_fragment((extent,), "int32")
            T.copy(A, src)
            acc = T.alloc_reducer((1,), "int32", op="sum")
            T.reducer_init(acc, 7)
            for i in T.Parallel(extent):
                T.reducer_update(acc[0], src[i])
            result = T.alloc_fragment((1,), "int32")
            T.finalize_reducer(acc, result)
            if T.get_thread_binding() == 0:
                B[0] = result[0]

    return kernel


def test_scalar_sum_counts_each_iteration_once():
    a = np.random.default_rng(4).integers(-1000, 1000, 9).astype(np.int32)
    b = np.full(1, -123456, np.int32)
    tilecraft.compile(scalar_sum(9), target="c")(a, b)
    assert b[0] == int(a.astype(np.int64).sum()) + 7


def online_logsumexp(k: int, block: int):
    """An epoch per tile of a serial loop, the max seeded from the running maximum; the sum unseeded and
    finalized in place."""

    @T.prim_func
    def kernel(A: T.Tensor((k,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=THREADS):
            a = T.alloc_fragment((block,), "float32")
            running_max = T.alloc_fragment((1,), "float32")
            running_sum = T.alloc_fragment((1,), "float32")
            running_max[0] = -T.infinity("float32")
            running_sum[0] = 0.0
            for t in T.serial(T.ceildiv(k, block)):
                T.copy(A[t * block], a)
                new_max = T.alloc_reducer((1,), "float32", op="max")
                T.reducer_init(new_max, running_max[0])
                for i in T.Parallel(block):
                    if t * block + i < k:
                        T.reducer_update(new_max[0], a[i])
                max_result = T.alloc_fragment((1,), "float32")
                T.finalize_reducer(new_max, max_result)
                new_sum = T.alloc_reducer((1,), "float32", op="sum")
                T.reducer_init(new_sum)
                for i in T.Parallel(block):
                    if t * block + i < k:
                        T.reducer_update(new_sum[0], T.exp(a[i] - max_result[0]))
                T.finalize_reducer(new_sum)
                running_sum[0] = T.exp(running_max[0] - max_result[0]) * running_sum[0] + new_sum[0]
                running_max[0] = max_result[0]
            if T.get_thread_binding() == 0:
                B[0] = T.log(running_sum[0]) + running_max[0]

    return kernel


def test_epochs_inside_a_serial_loop():
    k, block = 300, 64
    a = np.random.default_rng(5).standard_normal(k).astype(np.float32)
    b = np.full(1, np.nan, np.float32)
    tilecraft.compile(online_logsumexp(k, block), target="c")(a, b)
    x = a.astype(np.float64)
    ref = np.log(np.exp(x - x.max()).sum()) + x.max()
    np.testing.assert_allclose(b[0], ref, rtol=1e-5)


def update_before_init():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32")
            for i in T.Parallel(8):
                T.reducer_update(acc[0], A[i])  # <- error
            T.finalize_reducer(acc)

    return k


def double_init():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32")
            T.reducer_init(acc)
            T.reducer_init(acc)  # <- error
            T.finalize_reducer(acc)

    return k


def update_outside_parallel():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32")
            T.reducer_init(acc)
            T.reducer_update(acc[0], A[0])  # <- error
            T.finalize_reducer(acc)

    return k


def finalize_in_an_extra_loop():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32")
            T.reducer_init(acc)
            for _ in T.serial(4):
                for i in T.Parallel(8):
                    T.reducer_update(acc[0], A[i])
                T.finalize_reducer(acc)  # <- error

    return k


def seed_of_another_dtype():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32")
            T.reducer_init(acc, T.float16(1.0))  # <- error
            T.finalize_reducer(acc)

    return k


def bitwise_float_reducer():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32", op="bitand")  # <- error
            T.finalize_reducer(acc)

    return k


def never_finalized():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32", op="sum")
            T.reducer_init(acc)  # <- error
            for i in T.Parallel(8):
                T.reducer_update(acc[0], A[i])
            B[0] = 0.0

    return k


def ordinary_store_in_epoch():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32", op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(8):
                acc[0] += A[i]  # <- error
            T.finalize_reducer(acc)
            B[0] = acc[0]

    return k


def read_in_epoch():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32", op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(8):
                T.reducer_update(acc[0], A[i])
            B[0] = acc[0]  # <- error
            T.finalize_reducer(acc)

    return k


@pytest.mark.parametrize(
    "build, message",
    [
        (never_finalized, "reducer acc is never finalized"),
        (ordinary_store_in_epoch, "illegal store to reducer acc"),
        (read_in_epoch, "illegal read of reducer acc"),
        (bitwise_float_reducer, "op='bitand' needs an integer dtype, got float32"),
        (update_before_init, "before T.reducer_init"),
        (double_init, "double T.reducer_init"),
        (update_outside_parallel, "outside any T.Parallel loop"),
        (finalize_in_an_extra_loop, "not in the scope of its T.reducer_init"),
        (seed_of_another_dtype, "the starting value .* is float16, which does not match reducer"),
    ],
)
def test_misuse_is_refused_at_its_line(build, message):
    with pytest.raises(ParseError, match=message) as info:
        build()
    assert_located(info.value, build)


def finalize_with_batch(batch):
    def build():
        @T.prim_func
        def k(A: T.Tensor((64, 8), "float32"), B: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=128):
                acc = T.alloc_reducer((64,), "float32", op="sum")
                T.clear(acc)
                for i, j in T.Parallel(64, 8):
                    acc[i] += A[i, j]
                T.finalize_reducer(acc, batch=batch)  # <- error
                T.copy(acc, B)

        return k

    return build


@pytest.mark.parametrize("batch, message", [(0, "batch must be >= 1"), (-1, "batch must be >= 1"),
                                            (128, "exceeds total output elements"), (3, "must evenly divide")])  # fmt: skip
def test_a_batch_tilelang_refuses_is_a_located_value_error(batch, message):
    build = finalize_with_batch(batch)
    with pytest.raises(ValueError, match=message) as info:
        build()
    assert isinstance(info.value, ParseError)
    assert_located(info.value, build)


def test_a_bitwise_reducer_of_floats_is_also_an_assertion_error():
    with pytest.raises(AssertionError, match="integer dtype"):
        bitwise_float_reducer()
