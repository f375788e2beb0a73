"""Block-sparse kernels: a `T.Pipelined` loop whose whole body is under a condition read from global
memory (TileLang's examples/blocksparse_gemm and the selected-blocks loop of its NSA examples). On
sm_90a the loop is warp-specialized with a ring that advances on the iterations taken (GEMM: the GEMM
schedule; attention: the general one), elsewhere pipelined with the skipped iterations left out.

The masks cover every edge of that count: an output tile none of whose k-blocks is taken (its
accumulator stays zero), one with all of them, one with a single one (the last, a partial tile of the
ragged K), and random ones; the sizes are ragged in every dim TMA allows (rows of 16-byte multiples)."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T
from tilecraft.testing.conformance.online_softmax import (
    attention_tiles,
    exact_attention,
    finish_rows,
    mask_scores,
    rescale_scores,
    start_rows,
)

# M and K ragged against the tiles; N a multiple of 8 elements (TMA rows), ragged against 128 and 256
GEMM_SHAPE = (272, 264, 392)
# name -> (block_M, block_N, block_K, stages, threads): TileLang's example config, and a ring of three
# (smaller tiles: the OpenCL conformance run compiles these kernels with pocl, minutes for large ones)
GEMM_CONFIGS = {"example": (128, 128, 32, 2, 128), "three_stages": (64, 128, 64, 3, 128)}


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def blocksparse_gemm(m, n, k, block_m=128, block_n=128, block_k=32, stages=2, threads=128, dtype="float16"):
    """C = sum over the taken k-blocks of A @ B, per output tile (TileLang's example_blocksparse_gemm.py)."""
    mask_shape = (_ceil(m, block_m), _ceil(n, block_n), _ceil(k, block_k))

    @T.prim_func
    def blocksparse_gemm(
        A: T.Tensor((m, k), dtype),
        B: T.Tensor((k, n), dtype),
        BlockMask: T.Tensor(mask_shape, "bool"),
        C: T.Tensor((m, n), dtype),
    ):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_m, block_k), dtype)
            B_shared = T.alloc_shared((block_k, block_n), dtype)
            C_local = T.alloc_fragment((block_m, block_n), "float32")
            C_shared = T.alloc_shared((block_m, block_n), dtype)
            T.use_swizzle(panel_size=10, enable=True)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=stages):
                if BlockMask[by, bx, ko]:
                    T.copy(A[by * block_m, ko * block_k], A_shared)
                    T.copy(B[ko * block_k, bx * block_n], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_m, bx * block_n])

    return blocksparse_gemm


def gemm_mask(rng, shape) -> np.ndarray:
    """A random mask (about half taken) with an empty row of k-blocks, a full one and a single one."""
    mask = rng.random(shape) < 0.5
    mask[0, 0, :] = False
    mask[-1, -1, :] = True
    if shape[0] > 1 or shape[1] > 1:
        mask[-1, 0, :] = False
        mask[-1, 0, -1] = True
    return mask


def build_gemm(name: str):
    return lambda: blocksparse_gemm(*GEMM_SHAPE, *GEMM_CONFIGS[name])


def gemm_inputs(name: str):
    m, n, k = GEMM_SHAPE
    bm, bn, bk = GEMM_CONFIGS[name][:3]

    def make(rng) -> list[np.ndarray]:
        return [rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16),
                gemm_mask(rng, (_ceil(m, bm), _ceil(n, bn), _ceil(k, bk))),
                np.full((m, n), np.nan, np.float16)]  # fmt: skip

    return make


def gemm_reference(name: str):
    bm, bn, bk = GEMM_CONFIGS[name][:3]

    def ref(arrays) -> dict[int, np.ndarray]:
        a, b = np.asarray(arrays[0], np.float64), np.asarray(arrays[1], np.float64)
        return {3: masked_product(a, b, arrays[2], (bm, bn, bk))}

    return ref


def masked_product(a: np.ndarray, b: np.ndarray, mask: np.ndarray, tile) -> np.ndarray:
    bm, bn, bk = tile
    c = np.zeros((a.shape[0], b.shape[1]))
    for i, j, ko in zip(*np.nonzero(mask)):
        rows, cols, ks = slice(i * bm, (i + 1) * bm), slice(j * bn, (j + 1) * bn), slice(ko * bk, (ko + 1) * bk)
        c[rows, cols] += a[rows, ks] @ b[ks, cols]
    return c


# ---------------------------------------------------------------- attention over selected key blocks

ATTENTION = (1, 2, 300, 64, 64, 64, 2, 128)  # batch, heads, seq (ragged), dim, block_m, block_n, stages, threads


def blocksparse_attention(batch, heads, seq, dim, block_m, block_n, stages, threads, selected=0):
    """Flash attention in the (batch, heads, seq, dim) layout over the key blocks `BlockMask[b, h, q, k]`
    selects: the whole body (both TMA copies, the softmax and both gemms) is under the mask. With
    `selected` > 0, NSA's form instead: the loop runs over `selected` slots of `BlockIndices[b, h, q, s]`,
    a let takes the slot's key block and the guard skips the slots holding -1; the TMA coordinates
    come from the let."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, heads, seq, dim]
    blocks = (batch, heads, _ceil(seq, block_m), selected or _ceil(seq, block_n))
    dtype, accum = "float16", "float32"
    tiles = attention_tiles(block_m, block_n, dim, dtype, accum)
    start = start_rows(accum)
    finish = finish_rows(block_m, dim)
    mask = mask_scores(block_m, block_n, seq, False, accum)
    rescale = rescale_scores(block_m, block_n, scale)

    @T.macro
    def attend(K, V, Q_shared, K_shared, V_shared, acc_s, acc_s_cast, acc_o, scores_max, scores_max_prev,
               scores_scale, scores_sum, logsum, k, by, bz):  # fmt: skip
        T.copy(K[bz, by, k * block_n : (k + 1) * block_n, :], K_shared)
        mask(acc_s, 0, k)
        T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
        T.copy(scores_max, scores_max_prev)
        T.reduce_max(acc_s, scores_max, dim=1, clear=False)  # not cleared: the max with the old maxima
        rescale(acc_s, scores_max, scores_max_prev, scores_scale, scores_sum, logsum)
        T.copy(acc_s, acc_s_cast)
        for i, j in T.Parallel(block_m, dim):
            acc_o[i, j] *= scores_scale[i]
        T.copy(V[bz, by, k * block_n : (k + 1) * block_n, :], V_shared)
        T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

    @T.prim_func
    def blocksparse_attention(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(shape, dtype),
        V: T.Tensor(shape, dtype),
        BlockMask: T.Tensor(blocks, "int32" if selected else "bool"),
        Output: T.Tensor(shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq, block_m), heads, batch, threads=threads) as (bx, by, bz):
            (Q_shared, K_shared, V_shared, O_shared, acc_s, acc_s_cast, acc_o,
             scores_max, scores_max_prev, scores_scale, scores_sum, logsum) = tiles()  # fmt: skip

            T.copy(Q[bz, by, bx * block_m : (bx + 1) * block_m, :], Q_shared)
            start(acc_o, logsum, scores_max)
            if selected:
                for s in T.Pipelined(selected, num_stages=stages):
                    i_s = BlockMask[bz, by, bx, s]
                    if i_s >= 0:
                        attend(K, V, Q_shared, K_shared, V_shared, acc_s, acc_s_cast, acc_o, scores_max,
                               scores_max_prev, scores_scale, scores_sum, logsum, i_s, by, bz)  # fmt: skip
            else:
                for k in T.Pipelined(T.ceildiv(seq, block_n), num_stages=stages):
                    if BlockMask[bz, by, bx, k]:
                        attend(K, V, Q_shared, K_shared, V_shared, acc_s, acc_s_cast, acc_o, scores_max,
                               scores_max_prev, scores_scale, scores_sum, logsum, k, by, bz)  # fmt: skip
            finish(acc_o, logsum, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_m : (bx + 1) * block_m, :])

    return blocksparse_attention


SELECTED = 4  # slots per query block (of 5 key blocks)


def attention():
    return blocksparse_attention(*ATTENTION)


def selected_attention():
    return blocksparse_attention(*ATTENTION, selected=SELECTED)


def attention_mask(rng, shape) -> np.ndarray:
    """Random key blocks, at least one per query block (a row with none divides zero by zero), a row of
    one block only (the ragged last one) and a full row."""
    mask = rng.random(shape) < 0.4
    rows = shape[-1]
    picked = rng.integers(0, rows, shape[:-1])
    np.put_along_axis(mask, picked[..., None], True, axis=-1)
    mask[0, 0, 0, :] = False
    mask[0, 0, 0, -1] = True
    mask[0, -1, -1, :] = True
    return mask


def attention_inputs(rng) -> list[np.ndarray]:
    batch, heads, seq, dim, block_m, block_n = ATTENTION[:6]
    qkv = [rng.standard_normal((batch, heads, seq, dim)).astype(np.float16) for _ in range(3)]
    mask = attention_mask(rng, (batch, heads, _ceil(seq, block_m), _ceil(seq, block_n)))
    return [*qkv, mask, np.full((batch, heads, seq, dim), np.nan, np.float16)]


def attention_reference(arrays) -> dict[int, np.ndarray]:
    block_m, block_n = ATTENTION[4:6]
    q, k, v, mask = arrays[:4]
    seq = q.shape[2]
    keep = mask.repeat(block_m, axis=2).repeat(block_n, axis=3)[:, :, :seq, :seq]
    return {4: exact_attention(q, k, v, keep)}


def selected_indices(mask: np.ndarray, rng) -> np.ndarray:
    """NSA's index form of a mask over key blocks: per query block `SELECTED` slots, each the index of a
    selected key block or -1, in random order (so skipped slots fall anywhere in the loop). `mask` must
    select at most `SELECTED` blocks per row."""
    out = np.full((*mask.shape[:-1], SELECTED), -1, np.int32)
    for row in np.ndindex(mask.shape[:-1]):
        picked = np.nonzero(mask[row])[0]
        slots = rng.permutation(SELECTED)[: len(picked)]
        out[row][slots] = picked
    return out


def selected_inputs(rng) -> list[np.ndarray]:
    batch, heads, seq, dim, block_m, block_n = ATTENTION[:6]
    qkv = [rng.standard_normal((batch, heads, seq, dim)).astype(np.float16) for _ in range(3)]
    mask = attention_mask(rng, (batch, heads, _ceil(seq, block_m), _ceil(seq, block_n)))
    mask[0, -1, -1, :] = False  # the full row: as many blocks as there are slots
    mask[0, -1, -1, :SELECTED] = True
    for row in np.ndindex(mask.shape[:-1]):  # at most SELECTED per row
        extra = np.nonzero(mask[row])[0][SELECTED:]
        mask[row][extra] = False
    return [*qkv, selected_indices(mask, rng), np.full((batch, heads, seq, dim), np.nan, np.float16)]


def selected_reference(arrays) -> dict[int, np.ndarray]:
    indices = arrays[3]
    mask = np.zeros((*indices.shape[:-1], _ceil(ATTENTION[2], ATTENTION[5])), bool)
    for row in np.ndindex(indices.shape[:-1]):
        mask[row][indices[row][indices[row] >= 0]] = True
    return attention_reference([*arrays[:3], mask])
