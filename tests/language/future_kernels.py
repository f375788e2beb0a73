"""Kernels in a module with `from __future__ import annotations`: parameter annotations stay text."""

from __future__ import annotations

import tilecraft.language as T

ROWS = 256
DTYPE = "float16"


@T.prim_func
def scale_rows(A: T.Tensor((ROWS, 64), DTYPE), B: T.Tensor[[ROWS, 64], DTYPE], alpha: T.float32, n: T.int32):
    with T.Kernel(T.ceildiv(ROWS, 32), threads=128) as bx:
        for i, j in T.Parallel(32, 64):
            if bx * 32 + i < n:
                B[bx * 32 + i, j] = A[bx * 32 + i, j] * alpha


def make_add(n: int, dtype: str):
    """`dtype` appears only in the annotations, which are text here: no closure cell holds it."""

    @T.prim_func
    def add(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    B[bx * 128 + i] = A[bx * 128 + i] + B[bx * 128 + i]

    return add
