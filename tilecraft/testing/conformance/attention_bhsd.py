"""Flash attention in TileLang's (batch, heads, seq, dim) layout (examples/flash_attention/
example_mha_fwd_bhsd.py, the text benchmarks/hopper_attention.py times): its K and V tiles are the
tensors' last two dims, so on sm_90a they are TMA loads and the pipelined loop, softmax and all, runs
on a producer warpgroup and the kernel's threads (warp specialization). The cases cover both
consumer counts, causal trip counts that depend on the block, a ragged sequence, fewer tiles than
stages, and P staged through shared memory (`p_shared`: a barrier among the consumers on each side of
its store, inside the loop)."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T
from tilecraft.testing.conformance.online_softmax import (
    causal_keep,
    exact_attention,
    forward_steps,
    row_statistics,
)


def mha_fwd_bhsd(
    batch, heads, seq, dim, causal, block_m=128, block_n=128, stages=2, threads=256, p_shared=False
):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, heads, seq, dim]
    dtype, accum = "float16", "float32"
    rows = row_statistics(block_m, accum)
    start, trip_count, mask, softmax, finish = forward_steps(seq, dim, block_m, block_n, causal, scale, accum)

    @T.prim_func
    def mha_fwd_bhsd(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(shape, dtype),
        V: T.Tensor(shape, dtype),
        Output: T.Tensor(shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq, block_m), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_m, dim], dtype)
            K_shared = T.alloc_shared([block_n, dim], dtype)
            V_shared = T.alloc_shared([block_n, dim], dtype)
            O_shared = T.alloc_shared([block_m, dim], dtype)
            if p_shared:
                P_shared = T.alloc_shared([block_m, block_n], dtype)
            else:
                acc_s_cast = T.alloc_fragment([block_m, block_n], dtype)
            acc_s = T.alloc_fragment([block_m, block_n], accum)
            acc_o = T.alloc_fragment([block_m, dim], accum)
            scores_max, scores_max_prev, scores_scale, scores_sum, logsum = rows()

            T.copy(Q[bz, by, bx * block_m : (bx + 1) * block_m, :], Q_shared)
            start(acc_o, logsum, scores_max)
            for k in T.Pipelined(trip_count(bx), num_stages=stages):
                T.copy(K[bz, by, k * block_n : (k + 1) * block_n, :], K_shared)
                mask(acc_s, bx, k)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                softmax(acc_s, scores_max, scores_max_prev, scores_scale, scores_sum, logsum)
                if p_shared:
                    T.copy(acc_s, P_shared)
                else:
                    T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_m, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, by, k * block_n : (k + 1) * block_n, :], V_shared)
                if p_shared:
                    T.gemm(P_shared, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
                else:
                    T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            finish(acc_o, logsum, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_m : (bx + 1) * block_m, :])

    return mha_fwd_bhsd


# name -> (batch, heads, seq, dim, causal, block_m, block_n, stages, threads[, p_shared])
CONFIGS = {
    "full": (1, 2, 300, 128, False, 128, 128, 2, 256),  # two consumer warpgroups, the benchmark's tiles
    "causal": (1, 2, 300, 128, True, 128, 128, 2, 256),  # trip count min(3, bx + 1)
    "causal_one_warpgroup": (1, 2, 200, 64, True, 64, 64, 2, 128),
    "one_tile_three_stages": (1, 2, 100, 64, False, 128, 128, 3, 256),  # fewer tiles than stages
    "p_shared": (1, 2, 300, 64, False, 64, 64, 2, 128, True),
}


def build(name: str):
    return lambda: mha_fwd_bhsd(*CONFIGS[name])


def inputs(name: str):
    batch, heads, seq, dim = CONFIGS[name][:4]

    def make(rng) -> list[np.ndarray]:
        qkv = [rng.standard_normal((batch, heads, seq, dim)).astype(np.float16) for _ in range(3)]
        return [*qkv, np.full((batch, heads, seq, dim), np.nan, np.float16)]

    return make


def reference(name: str):
    causal = CONFIGS[name][4]

    def ref(arrays) -> dict[int, np.ndarray]:
        q, k, v = arrays[:3]
        return {3: exact_attention(q, k, v, causal_keep(q.shape[2]) if causal else None)}

    return ref
