"""A staged tile of a `T.Pipelined` loop read by a vector copy: `T.copy(A_s, B[...])` in the loop body
lowers to 16-byte copies on CUDA, which kept the unstaged tile's offsets and so read stage 0 whatever
the iteration (tiles 1 and 2 of every three came out wrong)."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

M, N, BM = 500, 64, 64  # ragged: the last tile's rows past M are not stored


def copy_through_stages():
    @T.prim_func
    def copy_through_stages(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((BM, N), "float16")
            for k in T.Pipelined(T.ceildiv(M, BM), num_stages=3):
                T.copy(A[k * BM, bx * N], A_s)
                T.copy(A_s, B[k * BM, bx * N])

    return copy_through_stages


def inputs(rng) -> list[np.ndarray]:
    return [rng.standard_normal((M, N)).astype(np.float16), np.full((M, N), np.nan, np.float16)]


def reference(arrays) -> dict[int, np.ndarray]:
    return {1: np.asarray(arrays[0], np.float64)}
