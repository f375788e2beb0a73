"""`v = T.int32()` then `T.let(v, value)`: TVMScript's binding of a variable for the rest of its block
(TileLang's alias test writes its copy offset so), and `T.let(v, value, body)` as an expression."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ParseError
from tilecraft.ir.arith.analyzer import simplify
from tilecraft.ir.expr import const_value


def row_sums(m: int, k: int, block_k: int):
    @T.prim_func
    def kernel(A: T.Tensor((m, k), "float32"), B: T.Tensor((m,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_fragment((m,), "float32")
            T.clear(acc)
            for ko in T.serial(T.ceildiv(k, block_k)):
                offset = T.int32()
                T.let(offset, ko * block_k)
                for i in T.Parallel(m):
                    for j in T.serial(block_k):
                        if offset + j < k:
                            acc[i] += A[i, offset + j]
            T.copy(acc, B)

    return kernel


@pytest.mark.parametrize("target", ["c", "opencl"])
def test_a_let_bound_offset_walks_a_ragged_row(target):
    if target == "opencl":
        pytest.importorskip("pyopencl")
    m, k = 40, 70
    a = np.random.default_rng(5).standard_normal((m, k)).astype(np.float32)
    b = np.full(m, np.nan, np.float32)
    tilecraft.compile(row_sums(m, k, 16), target=target)(a, b)
    np.testing.assert_allclose(b, a.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)


def test_a_dtype_called_without_a_value_is_a_new_variable_and_let_with_a_body_an_expression():
    v = T.int32()
    assert isinstance(v, T.Var) and v.dtype == "int32" and T.int32() is not v
    assert T.float16(1.5).dtype == "float16"  # with a value: a constant, as before
    e = T.let(v, 3, v * 2 + 1)
    assert const_value(simplify(e)) == 7


def test_let_of_something_else_than_a_variable_is_refused_at_its_line():
    with pytest.raises(ParseError, match="T.let binds a variable"):

        @T.prim_func
        def kernel(A: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=1):
                T.let(A[0], 1)
