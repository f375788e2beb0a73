"""The parts every flash-attention kernel of the kit shares (kernels.py, attention_bhsd.py,
attention_bshd.py, block_sparse.py): the score mask, the online-softmax step over one key tile, and the
float64 reference. The kernels differ in layout, loop and staging; the arithmetic is this one body, so
a fix to it reaches them all."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T


def attention_tiles(block_m, block_n, dim, dtype, accum):
    """A macro that allocates a flash-attention block's tiles, in this order: Q, K, V and O in shared
    memory; the scores (`acc_s`), their `dtype` copy for the second gemm and the output accumulator as
    fragments; then `row_statistics`. Returns the twelve buffers."""
    rows = row_statistics(block_m, accum)

    @T.macro
    def alloc():
        Q_shared = T.alloc_shared([block_m, dim], dtype)
        K_shared = T.alloc_shared([block_n, dim], dtype)
        V_shared = T.alloc_shared([block_n, dim], dtype)
        O_shared = T.alloc_shared([block_m, dim], dtype)
        acc_s = T.alloc_fragment([block_m, block_n], accum)
        acc_s_cast = T.alloc_fragment([block_m, block_n], dtype)
        acc_o = T.alloc_fragment([block_m, dim], accum)
        return (Q_shared, K_shared, V_shared, O_shared, acc_s, acc_s_cast, acc_o, *rows())

    return alloc


def row_statistics(block_m, accum):
    """A macro that allocates the online softmax's per-row fragments: the running maximum, the one
    before this key tile, the rescale factor, this tile's sum and the running sum. Returns the five."""

    @T.macro
    def alloc():
        scores_max = T.alloc_fragment([block_m], accum)
        scores_max_prev = T.alloc_fragment([block_m], accum)
        scores_scale = T.alloc_fragment([block_m], accum)
        scores_sum = T.alloc_fragment([block_m], accum)
        logsum = T.alloc_fragment([block_m], accum)
        return scores_max, scores_max_prev, scores_scale, scores_sum, logsum

    return alloc


def start_rows(accum):
    """A macro that starts the output and the running sums at 0 and the running maxima at -inf."""

    @T.macro
    def start(acc_o, logsum, scores_max):
        T.fill(acc_o, 0)
        T.fill(logsum, 0)
        T.fill(scores_max, -T.infinity(accum))

    return start


def key_tiles(seq, block_m, block_n, causal):
    """A macro giving how many key tiles query tile `bx` reads: all of them, or causally those up to
    its last row (bound once, as `loop_range`)."""

    @T.macro
    def count(bx):
        loop_range = (
            T.min(T.ceildiv(seq, block_n), T.ceildiv((bx + 1) * block_m, block_n))
            if causal
            else T.ceildiv(seq, block_n)
        )
        return loop_range

    return count


def finish_rows(block_m, dim):
    """A macro that divides each output row by its softmax sum and stages the tile in shared memory."""

    @T.macro
    def finish(acc_o, logsum, O_shared):
        for i, j in T.Parallel(block_m, dim):
            acc_o[i, j] /= logsum[i]
        T.copy(acc_o, O_shared)

    return finish


def mask_scores(block_m, block_n, seq, causal, accum):
    """A macro that starts key tile `k`'s scores at 0 where a query row may see the key, else -inf:
    causally (key index at most query index), or past the sequence's end of a ragged last tile."""

    @T.macro
    def mask(acc_s, bx, k):
        if causal:
            for i, j in T.Parallel(block_m, block_n):
                acc_s[i, j] = T.if_then_else(bx * block_m + i >= k * block_n + j, 0, -T.infinity(accum))
        else:
            for i, j in T.Parallel(block_m, block_n):
                acc_s[i, j] = T.if_then_else(k * block_n + j >= seq, -T.infinity(accum), 0)

    return mask


def rescale_scores(block_m, block_n, scale):
    """A macro that, given the running row maxima before (`scores_max_prev`) and after this tile, turns
    the tile's scores into exp2 weights, the factor that rescales what came before (`scores_scale`) and
    the running row sums (`logsum`). `scale` is 1/sqrt(dim) * log2(e): exp2 of scaled scores is exp."""

    @T.macro
    def rescale(acc_s, scores_max, scores_max_prev, scores_scale, scores_sum, logsum):
        for i in T.Parallel(block_m):
            scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
        for i, j in T.Parallel(block_m, block_n):
            acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
        T.reduce_sum(acc_s, scores_sum, dim=1)
        for i in T.Parallel(block_m):
            logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]

    return rescale


def online_softmax(block_m, block_n, scale, accum):
    """A macro for one key tile's online-softmax step: the new row maxima (the old ones kept in
    `scores_max_prev`), then `rescale_scores`."""
    rescale = rescale_scores(block_m, block_n, scale)

    @T.macro
    def softmax(acc_s, scores_max, scores_max_prev, scores_scale, scores_sum, logsum):
        T.copy(scores_max, scores_max_prev)
        T.fill(scores_max, -T.infinity(accum))
        T.reduce_max(acc_s, scores_max, dim=1, clear=False)
        for i in T.Parallel(block_m):
            scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
        rescale(acc_s, scores_max, scores_max_prev, scores_scale, scores_sum, logsum)

    return softmax


def forward_steps(seq, dim, block_m, block_n, causal, scale, accum):
    """The macros of a forward pass over the key tiles, in the order a kernel calls them: `start_rows`,
    `key_tiles`, `mask_scores`, `online_softmax` and `finish_rows`."""
    return (
        start_rows(accum),
        key_tiles(seq, block_m, block_n, causal),
        mask_scores(block_m, block_n, seq, causal, accum),
        online_softmax(block_m, block_n, scale, accum),
        finish_rows(block_m, dim),
    )


def causal_keep(n: int) -> np.ndarray:
    """Which keys each query sees under a causal mask, for n queries and n keys."""
    return np.tril(np.ones((n, n), bool))


def exact_attention(q, k, v, keep=None) -> np.ndarray:
    """softmax(q k^T / sqrt(dim)) v in float64, over (..., seq, dim) arrays, with the scores where
    `keep` is False left out."""
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v
