"""Atomics as expressions: `T.atomic_load`, `T.atomic_store` and `return_prev=True` of `T.atomic_add` /
`max` / `min`, against float64 NumPy references with fresh random inputs, outputs poisoned before the
run and ragged sizes; memory orders checked at the call; targets without them refuse at lowering."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import LoweringError


def fetch_update(m: int, n: int, block: int, kind: str, dtype: str = "float32", order: str | None = None):
    """Each element of B updated with A's; P gets B's value before the update, L reads A atomically."""
    atom = {"add": T.atomic_add, "max": T.atomic_max, "min": T.atomic_min}[kind]

    @T.prim_func
    def kernel(A: T.Tensor((m, n), dtype), B: T.Tensor((m, n), dtype), P: T.Tensor((m, n), dtype),
               L: T.Tensor((m, n), dtype)):  # fmt: skip
        with T.Kernel(T.ceildiv(m, block), T.ceildiv(n, block), threads=32) as (bx, by):
            for i, j in T.Parallel(block, block):
                r = bx * block + i
                c = by * block + j
                if r < m and c < n:
                    P[r, c] = atom(B[r, c], A[r, c], memory_order=order, return_prev=True)
                    L[r, c] = T.atomic_load(A[r, c], memory_order="acquire")

    return kernel


def store_loaded(m: int, n: int, block: int, dtype: str = "float32"):
    """B = 2 * A through an atomic load and an atomic store, elements past the edge left alone."""

    @T.prim_func
    def kernel(A: T.Tensor((m, n), dtype), B: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(m, block), T.ceildiv(n, block), threads=32) as (bx, by):
            for i, j in T.Parallel(block, block):
                r = bx * block + i
                c = by * block + j
                if r < m and c < n:
                    T.atomic_store(B[r, c], T.atomic_load(A[r, c]) * 2, memory_order="release")

    return kernel


def contended_counter(n: int, block: int):
    """Every element adds 1 to one counter and keeps the count it saw: the previous values are a
    permutation of 0..n-1, whatever the order of the updates."""

    @T.prim_func
    def kernel(C: T.Tensor((1,), "int32"), P: T.Tensor((n,), "int32")):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    P[bx * block + i] = T.atomic_add(C[0], 1, return_prev=True)

    return kernel


def _inputs(m: int, n: int, dtype: str, seed: int):
    rng = np.random.default_rng(seed)
    np_dtype = {"float32": np.float32, "float16": np.float16, "float64": np.float64}[dtype]
    a = rng.uniform(-2, 2, (m, n)).astype(np_dtype)
    b = rng.uniform(-2, 2, (m, n)).astype(np_dtype)
    return a, b, np.full((m, n), np.nan, np_dtype), np.full((m, n), np.nan, np_dtype)


def check_fetch_update(run, kind: str, dtype: str, order: str | None) -> None:
    m, n = 37, 45
    a, b, p, lo = _inputs(m, n, dtype, {"add": 1, "max": 2, "min": 3}[kind])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    run(fetch_update(m, n, 16, kind, dtype, order), a, b, p, lo)
    ref = {"add": b64 + a64, "max": np.maximum(b64, a64), "min": np.minimum(b64, a64)}[kind]
    tol = 1e-6 if dtype != "float16" else 2e-3
    np.testing.assert_allclose(p, b64, rtol=0, atol=0)
    np.testing.assert_allclose(lo, a64, rtol=0, atol=0)
    np.testing.assert_allclose(b, ref, rtol=tol, atol=tol)


def check_store_loaded(run) -> None:
    m, n = 29, 41
    a, b, _, _ = _inputs(m, n, "float32", 4)
    run(store_loaded(m, n, 8), a, b)
    np.testing.assert_allclose(b, a.astype(np.float64) * 2, rtol=0, atol=0)


def check_contended_counter(run) -> None:
    n = 77
    c = np.zeros(1, np.int32) + 0  # the count starts at zero: the previous values are 0..n-1
    p = np.full(n, -1, np.int32)
    run(contended_counter(n, 32), c, p)
    assert c[0] == n
    assert sorted(p.tolist()) == list(range(n))


def run_c(func, *arrays) -> None:
    tilecraft.compile(func, target="c")(*arrays)


@pytest.mark.parametrize("kind", ["add", "max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_return_prev_gives_the_value_before_the_update(kind, dtype):
    check_fetch_update(run_c, kind, dtype, None)


@pytest.mark.parametrize("order", ["relaxed", "acquire", "release", "acq_rel", "seq_cst"])
def test_return_prev_takes_every_memory_order(order):
    check_fetch_update(run_c, "add", "float32", order)


def test_atomic_load_and_store_move_each_element_once():
    check_store_loaded(run_c)


def test_previous_values_of_a_contended_counter_are_distinct():
    check_contended_counter(run_c)


@pytest.mark.parametrize("what, order", [("atomic_load", "release"), ("atomic_load", "acq_rel"),
                                         ("atomic_store", "acquire"), ("atomic_store", "consume"),
                                         ("atomic_add", "invalid")])  # fmt: skip
def test_a_memory_order_the_access_cannot_have_is_refused(what, order):
    with pytest.raises(ValueError, match=f"{what} does not support memory_order"):

        @T.prim_func
        def kernel(A: T.Tensor((4,), "int32"), B: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=1):
                if what == "atomic_load":
                    B[0] = T.atomic_load(A[0], memory_order=order)
                elif what == "atomic_store":
                    T.atomic_store(A[0], 1, memory_order=order)
                else:
                    T.atomic_add(A[0], 1, memory_order=order)


def test_an_atomic_expression_on_a_shared_buffer_is_refused():
    with pytest.raises(Exception, match="needs an element of global memory"):

        @T.prim_func
        def kernel(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                s = T.alloc_shared((4,), "float32")
                A[0] = T.atomic_add(s[0], 1.0, return_prev=True)


@pytest.mark.parametrize("target, backend, source", [("opencl", "opencl", "opencl-source"),
                                                     ("webgpu", "wgpu", "wgsl-source"),
                                                     ("metal -family=apple8", None, "metal-source")])  # fmt: skip
def test_targets_without_atomic_expressions_refuse_at_lowering(target, backend, source):
    func = fetch_update(8, 8, 8, "add")
    options = {} if backend is None else {"execution_backend": backend}
    with pytest.raises(LoweringError, match="as an expression") as info:
        tilecraft.lower(func, target=target, **options).source(source)
    assert "test_atomic_expressions.py" in str(info.value)


def test_cuda_source_of_atomic_expressions_compiles(tmp_path):
    from tests.transform.helpers import assert_nvcc_compiles

    for func in (fetch_update(37, 45, 16, "max", "float16", "acq_rel"), store_loaded(29, 41, 8),
                 contended_counter(77, 32)):  # fmt: skip
        assert "tc_atomic_" in assert_nvcc_compiles(func, tmp_path)
