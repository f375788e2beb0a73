"""`T.Var`, TVM's name for the class of symbolic variables: `isinstance(NN, T.Var)` tells a T.dynamic dim
from a Python int (TileLang's test_tilelang_copy_with_stride), and `T.Var(name, dtype)` makes one."""

from __future__ import annotations

import numpy as np

import tilecraft
import tilecraft.language as T
from tilecraft.ir import dtype as dt
from tilecraft.ir.expr import Var


def test_symbolic_dims_are_t_var_and_python_values_are_not():
    assert isinstance(T.dynamic("NN"), T.Var)
    assert not isinstance(4, T.Var) and not isinstance(T.int32(4), T.Var)
    assert issubclass(Var, T.Var) and not issubclass(int, T.Var)


def test_t_var_takes_tvms_argument_order():
    n = T.Var("n", "int64")
    assert isinstance(n, Var) and n.name == "n" and n.dtype == dt.int64
    assert T.Var("m").dtype == dt.int32


def strided_copy(m: int, n: int, row_stride, block: int):
    @T.prim_func
    def main(A: T.StridedTensor((m, n), (row_stride, 1), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=128) as (bx, by):
            tile = T.alloc_shared((block, block), "float32")
            T.copy(A[by * block, bx * block], tile)
            T.copy(tile, B[by * block, bx * block])

    return main


def test_a_t_var_row_stride_binds_from_the_array():
    m, n = 45, 37
    a = np.random.default_rng(3).standard_normal((m, 2 * n + 5)).astype(np.float32)
    b = np.full((m, n), np.nan, np.float32)
    tilecraft.compile(strided_copy(m, n, T.Var("NN"), 16), target="c")(a[:, :n], b)
    assert np.array_equal(b, a[:, :n])
