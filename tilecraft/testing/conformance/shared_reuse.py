"""Shared tiles used one after the other share bytes: a GEMM's operand tiles are dead once its
epilogue stages C through a float32 shared tile, so the block needs the larger of the two, not their
sum (TileLang's flash-attention backward, example_gqa_bwd.py, needs that to fit in 227 KiB)."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

M, N, K = 200, 192, 160  # ragged for 64 x 64 x 32 tiles
BM, BN, BK = 64, 64, 32
OPERAND_BYTES = 2 * (BM * BK + BK * BN) * 2  # two pipeline stages of each float16 tile
EPILOGUE_BYTES = BM * BN * 4


def gemm_with_shared_epilogue():
    @T.prim_func
    def reuse_after_loop(
        A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")
    ):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=128) as (bx, by):
            A_s = T.alloc_shared((BM, BK), "float16")
            B_s = T.alloc_shared((BK, BN), "float16")
            acc = T.alloc_fragment((BM, BN), "float32")
            C_s = T.alloc_shared((BM, BN), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, BK), num_stages=2):
                T.copy(A[by * BM, k * BK], A_s)
                T.copy(B[k * BK, bx * BN], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C_s)
            for i, j in T.Parallel(BM, BN):  # reads other threads' elements; stores past the edge skipped
                C[by * BM + i, bx * BN + j] = C_s[i, j] * 2.0 + C_s[BM - 1 - i, j]

    return reuse_after_loop


def inputs(rng) -> list[np.ndarray]:
    return [rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16),
            np.full((M, N), np.nan, np.float32)]  # fmt: skip


def reference(arrays) -> dict[int, np.ndarray]:
    a, b = (np.asarray(x, np.float64) for x in arrays[:2])
    c = a @ b
    tiles_m = -(-M // BM)
    padded = np.zeros((tiles_m * BM, N))
    padded[:M] = c
    out = np.empty_like(padded)
    for t in range(tiles_m):
        tile = padded[t * BM : (t + 1) * BM]
        out[t * BM : (t + 1) * BM] = tile * 2.0 + tile[::-1]
    return {2: out[:M]}
