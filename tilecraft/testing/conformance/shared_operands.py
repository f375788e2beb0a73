"""One shared tile read by two gemms that the tensor cores take in different ways: K_shared is the A
operand of a 128-row gemm (wgmma on sm_90a) and the B operand of a 32-row one (mma.sync: wgmma needs
64 rows), as in TileLang's attention_sink/example_mha_sink_bwd_bhsd.py with dim 128. On the H200 the
second gemm's operand layout overwrote the first's, and dV came out wrong (max error 5.8)."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

BLOCK_M, BLOCK_N, DIM = 128, 32, 128
SEQ = 160  # five 32-row tiles of Q; K is one 128-row tile


def k_shared_by_two_gemms():
    """S = K @ Q_k^T (128 x 32 per tile) summed into P; D_k = S_k^T @ K (32 x 128) per tile of Q."""

    @T.prim_func
    def two_gemm_paths(
        K: T.Tensor((BLOCK_M, DIM), "float16"),
        Q: T.Tensor((SEQ, DIM), "float16"),
        P: T.Tensor((BLOCK_M, BLOCK_N), "float32"),
        D: T.Tensor((SEQ, DIM), "float32"),
    ):
        with T.Kernel(1, threads=256) as _:
            K_shared = T.alloc_shared((BLOCK_M, DIM), "float16")
            q = T.alloc_shared((BLOCK_N, DIM), "float16")
            s_shared = T.alloc_shared((BLOCK_M, BLOCK_N), "float16")
            s = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")
            s_sum = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")
            d = T.alloc_fragment((BLOCK_N, DIM), "float32")
            T.copy(K[0, 0], K_shared)
            T.clear(s_sum)
            for k in T.Pipelined(SEQ // BLOCK_N, num_stages=2):
                T.copy(Q[k * BLOCK_N, 0], q)
                T.clear(s)
                T.gemm(K_shared, q, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(BLOCK_M, BLOCK_N):
                    s_sum[i, j] += s[i, j]
                T.copy(s, s_shared)
                T.clear(d)
                T.gemm(s_shared, K_shared, d, transpose_A=True)
                T.copy(d, D[k * BLOCK_N, 0])
            T.copy(s_sum, P[0, 0])

    return two_gemm_paths


def inputs(rng) -> list[np.ndarray]:
    scale = 0.25  # keeps S within float16 once rounded for the second gemm
    return [
        (rng.standard_normal((BLOCK_M, DIM)) * scale).astype(np.float16),
        (rng.standard_normal((SEQ, DIM)) * scale).astype(np.float16),
        np.full((BLOCK_M, BLOCK_N), np.nan, np.float32),
        np.full((SEQ, DIM), np.nan, np.float32),
    ]


def reference(arrays) -> dict[int, np.ndarray]:
    k, q = (np.asarray(a, np.float64) for a in arrays[:2])
    p = np.zeros((BLOCK_M, BLOCK_N))
    d = np.empty((SEQ, DIM))
    for t in range(SEQ // BLOCK_N):
        s = k @ q[t * BLOCK_N : (t + 1) * BLOCK_N].T
        p += s
        s16 = s.astype(np.float16).astype(np.float64)
        d[t * BLOCK_N : (t + 1) * BLOCK_N] = s16.T @ k
    return {2: p, 3: d}
