"""A causal attention backward pass as TileLang's attention-sink examples write it
(example_mha_sink_bwd_bhsd.py): the key block's loop over query blocks starts at the diagonal
(`T.Pipelined(by * block_M // block_N, ...)`), lse and Delta come in as 1-D slices per iteration, dQ is
accumulated with atomic adds. The loop's start and the slices once kept such kernels off the pipelined
(and warp-specialized) path that the same loop from 0 took."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

SHAPE = (1, 2, 200, 64)  # batch, heads, seq (ragged for 128- and 32-row tiles), dim
BLOCK_M, BLOCK_N = 128, 32  # 2 warpgroups of wgmma (sm_90a), as the example on Hopper
SM_SCALE = 0.125
LOG2E = 1.44269504


def causal_backward():
    """dK, dV and dQ (atomic adds) of causal attention from Q, K, V, dO, lse (log2 domain) and Delta."""
    batch, heads, seq, dim = SHAPE
    scale = SM_SCALE * LOG2E

    @T.prim_func
    def causal_backward(
        Q: T.Tensor(SHAPE, "float16"),
        K: T.Tensor(SHAPE, "float16"),
        V: T.Tensor(SHAPE, "float16"),
        dO: T.Tensor(SHAPE, "float16"),
        lse: T.Tensor((batch, heads, seq), "float32"),
        Delta: T.Tensor((batch, heads, seq), "float32"),
        dQ: T.Tensor(SHAPE, "float32"),
        dK: T.Tensor(SHAPE, "float16"),
        dV: T.Tensor(SHAPE, "float16"),
    ):
        with T.Kernel(heads, T.ceildiv(seq, BLOCK_M), batch, threads=256) as (bx, by, bz):
            k_s = T.alloc_shared((BLOCK_M, dim), "float16")
            v_s = T.alloc_shared((BLOCK_M, dim), "float16")
            q = T.alloc_shared((BLOCK_N, dim), "float16")
            do = T.alloc_shared((BLOCK_N, dim), "float16")
            lse_s = T.alloc_shared((BLOCK_N,), "float32")
            delta = T.alloc_shared((BLOCK_N,), "float32")
            ds_s = T.alloc_shared((BLOCK_M, BLOCK_N), "float16")
            p = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")
            dp = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")
            p_cast = T.alloc_fragment((BLOCK_M, BLOCK_N), "float16")
            ds_cast = T.alloc_fragment((BLOCK_M, BLOCK_N), "float16")
            dv = T.alloc_fragment((BLOCK_M, dim), "float32")
            dk = T.alloc_fragment((BLOCK_M, dim), "float32")
            dq = T.alloc_fragment((BLOCK_N, dim), "float32")
            T.copy(K[bz, bx, by * BLOCK_M : (by + 1) * BLOCK_M, :], k_s)
            T.copy(V[bz, bx, by * BLOCK_M : (by + 1) * BLOCK_M, :], v_s)
            T.clear(dv)
            T.clear(dk)
            first = T.floordiv(by * BLOCK_M, BLOCK_N)
            for k in T.Pipelined(first, T.ceildiv(seq, BLOCK_N), num_stages=2):
                T.copy(Q[bz, bx, k * BLOCK_N : (k + 1) * BLOCK_N, :], q)
                T.clear(p)
                T.gemm(k_s, q, p, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(lse[bz, bx, k * BLOCK_N : (k + 1) * BLOCK_N], lse_s)
                for i, j in T.Parallel(BLOCK_M, BLOCK_N):
                    p[i, j] = T.exp2(p[i, j] * scale - lse_s[j])
                for i, j in T.Parallel(BLOCK_M, BLOCK_N):
                    p[i, j] = T.if_then_else(by * BLOCK_M + i <= k * BLOCK_N + j, p[i, j], 0)
                T.copy(dO[bz, bx, k * BLOCK_N : (k + 1) * BLOCK_N, :], do)
                T.clear(dp)
                T.gemm(v_s, do, dp, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(p, p_cast)
                T.gemm(p_cast, do, dv, policy=T.GemmWarpPolicy.FullRow)
                T.copy(Delta[bz, bx, k * BLOCK_N : (k + 1) * BLOCK_N], delta)
                for i, j in T.Parallel(BLOCK_M, BLOCK_N):
                    ds_cast[i, j] = p[i, j] * (dp[i, j] - delta[j]) * SM_SCALE
                T.gemm(ds_cast, q, dk, policy=T.GemmWarpPolicy.FullRow)
                T.copy(ds_cast, ds_s)
                T.clear(dq)
                T.gemm(ds_s, k_s, dq, transpose_A=True)
                T.atomic_add(dQ[bz, bx, k * BLOCK_N : (k + 1) * BLOCK_N, :], dq)
            T.copy(dv, dV[bz, bx, by * BLOCK_M : (by + 1) * BLOCK_M, :])
            T.copy(dk, dK[bz, bx, by * BLOCK_M : (by + 1) * BLOCK_M, :])

    return causal_backward


def _causal_probabilities(q, k):
    """P (float64) and lse in the log2 domain, as the forward pass leaves them."""
    seq = q.shape[2]
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * SM_SCALE * LOG2E
    s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
    top = s.max(-1, keepdims=True)
    lse = np.log2(np.exp2(s - top).sum(-1, keepdims=True)) + top
    return np.exp2(s - lse), lse[..., 0]


def inputs(rng) -> list[np.ndarray]:
    q, k, v, do = ((rng.standard_normal(SHAPE) / 2).astype(np.float16) for _ in range(4))
    p, lse = _causal_probabilities(q.astype(np.float64), k.astype(np.float64))
    out = np.einsum("bhqk,bhkd->bhqd", p, v.astype(np.float64))
    delta = (out * do.astype(np.float64)).sum(-1)
    poisoned = [np.full(SHAPE, np.nan, dt) for dt in (np.float16, np.float16)]
    return [
        q,
        k,
        v,
        do,
        lse.astype(np.float32),
        delta.astype(np.float32),
        np.zeros(SHAPE, np.float32),
        *poisoned,
    ]


def reference(arrays) -> dict[int, np.ndarray]:
    q, k, v, do = (np.asarray(a, np.float64) for a in arrays[:4])
    lse, delta = (np.asarray(a, np.float64) for a in arrays[4:6])
    seq = q.shape[2]
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * SM_SCALE * LOG2E
    p = np.where(np.tril(np.ones((seq, seq), bool)), np.exp2(s - lse[..., None]), 0.0)
    dp = np.einsum("bhqd,bhkd->bhqk", do, v)
    ds = p * (dp - delta[..., None]) * SM_SCALE
    return {
        6: np.einsum("bhqk,bhkd->bhqd", ds, k),
        7: np.einsum("bhqk,bhqd->bhkd", ds, q),
        8: np.einsum("bhqk,bhqd->bhkd", p, do),
    }
