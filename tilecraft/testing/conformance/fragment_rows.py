"""A T.copy of one row of a 2-D fragment into a 1-D fragment, the row chosen by a loop variable
(the split combine of example_mha_inference.py:137-141): the two cannot share a layout. With 4 splits
each thread holds all of a column's splits (a reduction over that short dim keeps it in registers), so
the copy reads the thread's own register chosen by the loop variable; with 16 the rows other threads
hold are read through shared memory."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

SPLIT = (3, 4, 200)  # heads, splits, rows (ragged for 128-row blocks)
BLOCK = 128


def row_of_a_fragment(splits: int = SPLIT[1]):
    """lse[h, i] = log2(sum_k 2^(glse[h, k, i] - max_k)) + max_k over the splits k."""
    heads, _, rows = SPLIT

    @T.prim_func
    def combine_lse(G: T.Tensor((heads, splits, rows), "float32"), L: T.Tensor((heads, rows), "float32")):
        with T.Kernel(T.ceildiv(rows, BLOCK), heads, threads=128) as (bx, by):
            lse = T.alloc_fragment((splits, BLOCK), "float32")
            row = T.alloc_fragment((BLOCK,), "float32")
            logsum = T.alloc_fragment((BLOCK,), "float32")
            lse_max = T.alloc_fragment((BLOCK,), "float32")
            T.clear(logsum)
            T.copy(G[by, :, bx * BLOCK : (bx + 1) * BLOCK], lse)
            T.reduce_max(lse, lse_max, dim=0, clear=True)
            for k in T.Pipelined(splits):
                T.copy(lse[k, :], row)
                for i in T.Parallel(BLOCK):
                    logsum[i] += T.exp2(row[i] - lse_max[i])
            for i in T.Parallel(BLOCK):
                logsum[i] = T.log2(logsum[i]) + lse_max[i]
            T.copy(logsum, L[by, bx * BLOCK : (bx + 1) * BLOCK])

    return combine_lse


def row_inputs(rng, splits: int = SPLIT[1]) -> list[np.ndarray]:
    heads, _, rows = SPLIT
    return [
        rng.standard_normal((heads, splits, rows)).astype(np.float32),
        np.full((heads, rows), np.nan, np.float32),
    ]


def row_reference(arrays) -> dict[int, np.ndarray]:
    g = np.asarray(arrays[0], np.float64)
    top = g.max(axis=1, keepdims=True)
    return {1: (np.log2(np.exp2(g - top).sum(axis=1)) + top[:, 0])}
