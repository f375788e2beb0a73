"""`T.Kernel(..., cluster_dims=...)`: GEMMs launched in thread-block clusters (TileLang's spelling, and
`T.ClusterKernel`). On sm_90a the blocks of a cluster share a tile at every k step (A along the N tiles,
B along the M tiles) and multicast it; elsewhere the grid launches as it is, with the same results. The
sizes are ragged (N and M not multiples of the tile, K not a multiple of the stages) and the grids
rounded up to whole clusters, so some blocks hold no output: their copies are skipped at the edges."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

M, N, K = 200, 328, 448
BM, BN, BK = 64, 64, 64


def _gemm(cluster: tuple[int, int], transpose_b: bool, spelling: str):
    cx, cy = cluster
    grid = (T.ceildiv(T.ceildiv(N, BN), cx) * cx, T.ceildiv(T.ceildiv(M, BM), cy) * cy)
    b_shape, b_tile = ((N, K), (BN, BK)) if transpose_b else ((K, N), (BK, BN))

    def launch():
        if spelling == "ClusterKernel":
            return T.ClusterKernel(*grid, cluster_dims=(cx, cy, 1), threads=128)
        return T.Kernel(*grid, threads=128, cluster_dims=(cx, cy))

    @T.prim_func
    def gemm_in_clusters(
        A: T.Tensor((M, K), "float16"), B: T.Tensor(b_shape, "float16"), C: T.Tensor((M, N), "float32")
    ):
        with launch() as (bx, by):
            A_s = T.alloc_shared((BM, BK), "float16")
            B_s = T.alloc_shared(b_tile, "float16")
            C_l = T.alloc_fragment((BM, BN), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, BK), num_stages=3):
                T.copy(A[by * BM, k * BK], A_s)
                if transpose_b:
                    T.copy(B[bx * BN, k * BK], B_s)
                else:
                    T.copy(B[k * BK, bx * BN], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=transpose_b)
            T.copy(C_l, C[by * BM, bx * BN])

    return gemm_in_clusters


def sharing_a():
    """Clusters of 2 along the N tiles: both blocks load the same A tile."""
    return _gemm((2, 1), False, "Kernel")


def sharing_b():
    """Clusters of 2 along the M tiles (`T.ClusterKernel`), B transposed: both load the same B tile."""
    return _gemm((1, 2), True, "ClusterKernel")


def inputs(transpose_b: bool):
    def make(rng) -> list[np.ndarray]:
        b = rng.standard_normal((N, K) if transpose_b else (K, N)).astype(np.float16)
        return [rng.standard_normal((M, K)).astype(np.float16), b, np.full((M, N), np.nan, np.float32)]

    return make


def reference(transpose_b: bool):
    def ref(arrays) -> dict[int, np.ndarray]:
        b = np.asarray(arrays[1], np.float64)
        return {2: np.asarray(arrays[0], np.float64) @ (b.T if transpose_b else b)}

    return ref
