"""`T.Persistent`: a kernel of a few blocks walks the tiles of a GEMM in waves (TileLang's
examples/gemm/example_gemm_persistent.py). The sizes make the last wave partly empty, the tile columns
ragged (N is not a multiple of the tile) and the row groups uneven (three tile rows in groups of two),
and the K loop's trip count not a multiple of its stages, so a pipeline that runs on across tiles (the
warp-specialized one on sm_90a) changes stage and phase in the middle of a ring round."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

M, N, K = 192, 160, 448
BM, BN, BK, BLOCKS, GROUP = 64, 64, 64, 4, 2


def persistent_gemm(staged: bool = False, shape=(M, N, K), tile=(BM, BN, BK), threads=128, stages=3):
    """`staged`: the same walk with TileLang's C_shared epilogue (a float16 result staged through a shared
    tile, rewritten by every tile of the block): on sm_90a a TMA store whose boxes the ragged N clips, and
    which the next tile must wait for before it overwrites the tile."""
    out = "float16" if staged else "float32"
    (m, n, k_), (bm, bn, bk) = shape, tile

    @T.prim_func
    def persistent_gemm(
        A: T.Tensor((m, k_), "float16"), B: T.Tensor((k_, n), "float16"), C: T.Tensor((m, n), out)
    ):
        with T.Kernel(BLOCKS, threads=threads) as block:
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            if staged:
                C_s = T.alloc_shared((bm, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            for bx, by in T.Persistent([T.ceildiv(m, bm), T.ceildiv(n, bn)], BLOCKS, block, GROUP):
                T.clear(C_l)
                for k in T.Pipelined(T.ceildiv(k_, bk), num_stages=stages):
                    T.copy(A[bx * bm, k * bk], A_s)
                    T.copy(B[k * bk, by * bn], B_s)
                    T.gemm(A_s, B_s, C_l)
                if staged:
                    T.copy(C_l, C_s)
                    T.copy(C_s, C[bx * bm, by * bn])
                else:
                    T.copy(C_l, C[bx * bm, by * bn])

    return persistent_gemm


def persistent_gemm_staged():
    return persistent_gemm(staged=True)


# Hopper-sized tiles whose C_shared epilogue does not fit beside 4 stages (48 KiB each) in 227 KiB:
# split-staging-tiles stores it in four column blocks of 256x32 through two tiles taken in turn. Ragged N
# (the last tile column's later blocks are past the edge), a K loop of 9 (not a multiple of the stages),
# 3 waves.
BIG_M, BIG_N, BIG_K = 768, 400, 576
BIG_BM, BIG_BN, BIG_BK, BIG_STAGES = 256, 128, 64, 4


def persistent_gemm_in_column_blocks():
    """TileLang's persistent example at its sm_90a tile (256x128x64, 256 threads, 4 stages) with the
    C_shared epilogue."""
    return persistent_gemm(True, (BIG_M, BIG_N, BIG_K), (BIG_BM, BIG_BN, BIG_BK), 256, BIG_STAGES)


def big_inputs(rng) -> list[np.ndarray]:
    return [rng.standard_normal((BIG_M, BIG_K)).astype(np.float16),
            rng.standard_normal((BIG_K, BIG_N)).astype(np.float16),
            np.full((BIG_M, BIG_N), np.nan, np.float16)]  # fmt: skip


def staged_inputs(rng) -> list[np.ndarray]:
    return [*inputs(rng)[:2], np.full((M, N), np.nan, np.float16)]


def inputs(rng) -> list[np.ndarray]:
    return [rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16),
            np.full((M, N), np.nan, np.float32)]  # fmt: skip


def reference(arrays) -> dict[int, np.ndarray]:
    return {2: np.asarray(arrays[0], np.float64) @ np.asarray(arrays[1], np.float64)}
