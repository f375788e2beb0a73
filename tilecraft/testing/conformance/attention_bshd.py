"""Flash attention in TileLang's (batch, seq, heads, dim) layout (examples/flash_attention/
example_mha_fwd_bshd.py and example_gqa_fwd_bshd.py; flash_decoding and the varlen examples read K and V
the same way): each K and V tile is `K[b, rows, h, :]`, rows in dim 1 and the columns in dim 3 with unit
extents between, so on sm_90a it is a TMA load through a 4-D tensor map (box (dim, 1, rows, 1)) and the
output tile a 4-D TMA store. `packed` drops the batch dim, as the varlen examples' (tokens, heads, dim)
tensors do (rows in dim 0 of 3). The cases cover ragged sequences (the boxes cross the sequence's end,
where the map reads zeros and clips the store, not the next batch's rows), two batches, grouped heads
(`by // groups`), causal trip counts, and TileLang's one-stage regression config."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T
from tilecraft.testing.conformance.online_softmax import (
    attention_tiles,
    causal_keep,
    exact_attention,
    forward_steps,
)


def mha_fwd_bshd(batch, heads, seq, dim, causal, block_m, block_n, stages, threads, groups=1, packed=False):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    kv_heads = heads // groups
    q_shape = [seq, heads, dim] if packed else [batch, seq, heads, dim]
    kv_shape = [seq, kv_heads, dim] if packed else [batch, seq, kv_heads, dim]
    dtype, accum = "float16", "float32"
    tiles = attention_tiles(block_m, block_n, dim, dtype, accum)
    start, trip_count, mask, softmax, finish = forward_steps(seq, dim, block_m, block_n, causal, scale, accum)

    @T.prim_func
    def mha_fwd_bshd(
        Q: T.Tensor(q_shape, dtype),
        K: T.Tensor(kv_shape, dtype),
        V: T.Tensor(kv_shape, dtype),
        Output: T.Tensor(q_shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq, block_m), heads, batch, threads=threads) as (bx, by, bz):
            (Q_shared, K_shared, V_shared, O_shared, acc_s, acc_s_cast, acc_o,
             scores_max, scores_max_prev, scores_scale, scores_sum, logsum) = tiles()  # fmt: skip

            if packed:
                T.copy(Q[bx * block_m : (bx + 1) * block_m, by, :], Q_shared)
            else:
                T.copy(Q[bz, bx * block_m : (bx + 1) * block_m, by, :], Q_shared)
            start(acc_o, logsum, scores_max)
            for k in T.Pipelined(trip_count(bx), num_stages=stages):
                if packed:
                    T.copy(K[k * block_n : (k + 1) * block_n, by // groups, :], K_shared)
                else:
                    T.copy(K[bz, k * block_n : (k + 1) * block_n, by // groups, :], K_shared)
                mask(acc_s, bx, k)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                softmax(acc_s, scores_max, scores_max_prev, scores_scale, scores_sum, logsum)
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_m, dim):
                    acc_o[i, j] *= scores_scale[i]
                if packed:
                    T.copy(V[k * block_n : (k + 1) * block_n, by // groups, :], V_shared)
                else:
                    T.copy(V[bz, k * block_n : (k + 1) * block_n, by // groups, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            finish(acc_o, logsum, O_shared)
            if packed:
                T.copy(O_shared, Output[bx * block_m : (bx + 1) * block_m, by, :])
            else:
                T.copy(O_shared, Output[bz, bx * block_m : (bx + 1) * block_m, by, :])

    return mha_fwd_bshd


# name -> (batch, heads, seq, dim, causal, block_m, block_n, stages, threads[, groups[, packed]])
CONFIGS = {
    "full": (2, 2, 300, 128, False, 128, 128, 2, 256),  # two batches, the sequence's end inside a tile
    "causal_grouped": (1, 4, 200, 64, True, 64, 64, 2, 128, 2),  # K and V heads shared by 2 query heads
    "one_stage": (1, 2, 333, 128, False, 128, 128, 1, 128),  # TileLang's regression config (1 stage)
    "packed": (1, 2, 150, 64, False, 64, 64, 2, 128, 1, True),  # (tokens, heads, dim): rows in dim 0
}


def build(name: str):
    return lambda: mha_fwd_bshd(*CONFIGS[name])


def _shapes(name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    batch, heads, seq, dim = CONFIGS[name][:4]
    groups, packed = (*CONFIGS[name][9:], *(1, False)[len(CONFIGS[name][9:]) :])
    lead = () if packed else (batch,)
    return (*lead, seq, heads, dim), (*lead, seq, heads // groups, dim)


def inputs(name: str):
    q_shape, kv_shape = _shapes(name)

    def make(rng) -> list[np.ndarray]:
        q = rng.standard_normal(q_shape).astype(np.float16)
        k, v = (rng.standard_normal(kv_shape).astype(np.float16) for _ in range(2))
        return [q, k, v, np.full(q_shape, np.nan, np.float16)]

    return make


def reference(name: str):
    causal = CONFIGS[name][4]

    def ref(arrays) -> dict[int, np.ndarray]:
        q, k, v = (np.asarray(t, np.float64) for t in arrays[:3])
        packed = q.ndim == 3
        if packed:
            q, k, v = q[None], k[None], v[None]
        groups = q.shape[2] // k.shape[2]
        # (batch, seq, heads, dim) -> (batch, heads, seq, dim), each query head with its K and V head
        q = q.transpose(0, 2, 1, 3)
        k, v = (np.repeat(t.transpose(0, 2, 1, 3), groups, axis=1) for t in (k, v))
        out = exact_attention(q, k, v, causal_keep(q.shape[2]) if causal else None).transpose(0, 2, 1, 3)
        return {3: out[0] if packed else out}

    return ref
