"""Software pipelines of `T.Pipelined` loops that a GPU backend once miscompiled.

- A staged tile read by a vector copy: `T.copy(A_s, B[...])` in the loop body lowers to 16-byte
  copies, which kept the unstaged tile's offsets and so read stage 0 whatever the iteration (tiles 1
  and 2 of every three came out wrong).
- Two copies into one tile per iteration (half of K, a gemm, the other half, a gemm): both halves
  were loaded into the iteration's stage before either gemm read it, so both gemms read the second.
- An accumulator promoted into a second one every other iteration (fp8 GEMM's "2xAcc"): on sm_90a the
  consumers leave the wgmma in flight on the iterations that do not promote and complete it inside the
  promoting branch (in_flight.py); the K loop's odd count leaves a tail for the code after the loop.
"""

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


GM, GN, GK, TILE, HALF = 256, 192, 320, 128, 32  # every iteration covers 2 * HALF of K


def two_copies_per_tile():
    @T.prim_func
    def two_copies_per_tile(
        A: T.Tensor((GM, GK), "float16"), B: T.Tensor((GK, GN), "float16"), C: T.Tensor((GM, GN), "float32")
    ):
        with T.Kernel(T.ceildiv(GN, TILE), T.ceildiv(GM, TILE), threads=128) as (bx, by):
            A_s = T.alloc_shared((TILE, HALF), "float16")
            B_s = T.alloc_shared((HALF, TILE), "float16")
            C_l = T.alloc_fragment((TILE, TILE), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(GK, 2 * HALF), num_stages=2):
                T.copy(A[by * TILE, ko * 2 * HALF], A_s)
                T.copy(B[ko * 2 * HALF, bx * TILE], B_s)
                T.gemm(A_s, B_s, C_l)
                T.copy(A[by * TILE, ko * 2 * HALF + HALF], A_s)
                T.copy(B[ko * 2 * HALF + HALF, bx * TILE], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * TILE, bx * TILE])

    return two_copies_per_tile


def gemm_inputs(rng) -> list[np.ndarray]:
    return [rng.standard_normal((GM, GK)).astype(np.float16), rng.standard_normal((GK, GN)).astype(np.float16),
            np.full((GM, GN), np.nan, np.float32)]  # fmt: skip


def gemm_reference(arrays) -> dict[int, np.ndarray]:
    return {2: np.asarray(arrays[0], np.float64) @ np.asarray(arrays[1], np.float64)}


PM, PN, PK, PBK, EVERY = 192, 128, 5 * 64 - 24, 64, 2  # five K tiles, the last one ragged: a tail to promote


def promoted_accumulator():
    @T.prim_func
    def promoted_accumulator(
        A: T.Tensor((PM, PK), "float16"), B: T.Tensor((PN, PK), "float16"), C: T.Tensor((PM, PN), "float32")
    ):
        with T.Kernel(T.ceildiv(PN, 128), T.ceildiv(PM, 128), threads=128) as (bx, by):
            A_s = T.alloc_shared((128, PBK), "float16")
            B_s = T.alloc_shared((128, PBK), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            C_sum = T.alloc_fragment((128, 128), "float32")
            T.clear(C_l)
            T.clear(C_sum)
            tiles = T.ceildiv(PK, PBK)
            for ko in T.Pipelined(tiles, num_stages=3):
                T.copy(A[by * 128, ko * PBK], A_s)
                T.copy(B[bx * 128, ko * PBK], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=True)
                if (ko + 1) % EVERY == 0:
                    for i, j in T.Parallel(128, 128):
                        C_sum[i, j] += C_l[i, j]
                    T.clear(C_l)
            if tiles % EVERY != 0:
                for i, j in T.Parallel(128, 128):
                    C_sum[i, j] += C_l[i, j]
            T.copy(C_sum, C[by * 128, bx * 128])

    return promoted_accumulator


def promoted_inputs(rng) -> list[np.ndarray]:
    return [rng.standard_normal((PM, PK)).astype(np.float16), rng.standard_normal((PN, PK)).astype(np.float16),
            np.full((PM, PN), np.nan, np.float32)]  # fmt: skip


def promoted_reference(arrays) -> dict[int, np.ndarray]:
    return {2: np.asarray(arrays[0], np.float64) @ np.asarray(arrays[1], np.float64).T}
