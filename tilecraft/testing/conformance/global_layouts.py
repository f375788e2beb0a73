"""Kernels whose global buffers are permuted by `T.annotate_layout` (TileLang's flash-attention backward
lays dQ out so that the atomic adds of an mma accumulator coalesce), with references that check both
the values read back through the layout and the raw storage order the layout asks for."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

# The shapes of the examples' dQ: (batch, seq, heads, dim); seq is ragged for the 32-row tiles.
DQ_SHAPE = (2, 40, 2, 32)
DQ_K = 32
BLOCK = 32


def dq_layout(dQ):
    """TileLang's make_dq_layout (flash_attention/example_mha_bwd_bshd.py)."""
    return T.Layout(dQ.shape, lambda b, s, h, d: [b, s // 8, h, d // 8, (d % 2), 4 * (s % 8) + (d % 8) // 2])


def dq_storage(values: np.ndarray) -> np.ndarray:
    """Where `dq_layout` stores each element: the storage of `values`, shaped like `values`."""
    b, s, h, d = np.meshgrid(*(np.arange(n) for n in values.shape), indexing="ij")
    out = (b, s // 8, h, d // 8, d % 2, 4 * (s % 8) + (d % 8) // 2)
    extents = (values.shape[0], values.shape[1] // 8, values.shape[2], values.shape[3] // 8, 2, 32)
    flat = np.zeros(values.size, dtype=values.dtype)
    flat[np.ravel_multi_index(out, extents).ravel()] = values.ravel()
    return flat.reshape(values.shape)


def dq_accumulate():
    """dQ[b, l, h, :] += X[b, l, h, :] @ W by atomic adds from the gemm's accumulator, twice; then a
    second kernel reads dQ back through the same layout."""
    batch, seq, heads, dim = DQ_SHAPE
    shape = (batch, seq, heads, DQ_K)

    @T.prim_func
    def dq_accumulate(
        X: T.Tensor(shape, "float16"),
        W: T.Tensor((DQ_K, dim), "float16"),
        dQ: T.Tensor(DQ_SHAPE, "float32"),
        Out: T.Tensor(DQ_SHAPE, "float32"),
    ):
        with T.Kernel(T.ceildiv(seq, BLOCK), heads, batch, threads=128) as (bx, by, bz):
            x = T.alloc_shared((BLOCK, DQ_K), "float16")
            w = T.alloc_shared((DQ_K, dim), "float16")
            acc = T.alloc_fragment((BLOCK, dim), "float32")
            T.annotate_layout({dQ: dq_layout(dQ)})
            T.copy(X[bz, bx * BLOCK : (bx + 1) * BLOCK, by, :], x)
            T.copy(W, w)
            for _ in T.serial(2):
                T.clear(acc)
                T.gemm(x, w, acc)
                for i, j in T.Parallel(BLOCK, dim):
                    T.atomic_add(dQ[bz, bx * BLOCK + i, by, j], acc[i, j])
        with T.Kernel(T.ceildiv(seq, BLOCK), heads, batch, threads=128) as (bx, by, bz):
            T.annotate_layout({dQ: dq_layout(dQ)})
            T.copy(
                dQ[bz, bx * BLOCK : (bx + 1) * BLOCK, by, :], Out[bz, bx * BLOCK : (bx + 1) * BLOCK, by, :]
            )

    return dq_accumulate


def dq_inputs(rng) -> list[np.ndarray]:
    batch, seq, heads, dim = DQ_SHAPE
    x = rng.standard_normal((batch, seq, heads, DQ_K)).astype(np.float16)
    w = (rng.standard_normal((DQ_K, dim)) / 4).astype(np.float16)
    return [x, w, np.zeros(DQ_SHAPE, np.float32), np.full(DQ_SHAPE, np.nan, np.float32)]


def dq_reference(arrays) -> dict[int, np.ndarray]:
    x, w = (np.asarray(a, np.float64) for a in arrays[:2])
    total = 2 * np.einsum("blhk,kd->blhd", x, w)
    return {2: dq_storage(total), 3: total}


# A 2-D tile stored column-block-major: element (i, j) at [j // 8][i][j % 8].
TILE_SHAPE = (72, 48)


def _blocked_columns(Y):
    return T.Layout(Y.shape, lambda i, j: (j // 8, i, j % 8))


def region_ops():
    """Fragment -> permuted copy, a region atomic add into it, and a global -> global copy out of it."""
    rows, cols = TILE_SHAPE

    @T.prim_func
    def region_ops(
        X: T.Tensor(TILE_SHAPE, "float32"),
        Y: T.Tensor(TILE_SHAPE, "float32"),
        Z: T.Tensor(TILE_SHAPE, "float32"),
    ):
        with T.Kernel(T.ceildiv(rows, BLOCK), threads=64) as bx:
            f = T.alloc_fragment((BLOCK, cols), "float32")
            T.annotate_layout({Y: _blocked_columns(Y)})
            T.copy(X[bx * BLOCK, 0], f)
            T.copy(f, Y[bx * BLOCK, 0])
        with T.Kernel(T.ceildiv(rows, BLOCK), threads=64) as bx:
            g = T.alloc_fragment((BLOCK, cols), "float32")
            T.annotate_layout({Y: _blocked_columns(Y)})
            T.copy(X[bx * BLOCK, 0], g)
            for i, j in T.Parallel(BLOCK, cols):
                g[i, j] = g[i, j] * 2.0
            T.atomic_add(Y[bx * BLOCK, 0], g)
        with T.Kernel(T.ceildiv(rows, BLOCK), threads=64) as bx:
            T.annotate_layout({Y: _blocked_columns(Y)})
            T.copy(Y[bx * BLOCK : (bx + 1) * BLOCK, :], Z[bx * BLOCK, 0])

    return region_ops


def region_inputs(rng) -> list[np.ndarray]:
    x = rng.standard_normal(TILE_SHAPE).astype(np.float32)
    return [x, np.full(TILE_SHAPE, np.nan, np.float32), np.full(TILE_SHAPE, np.nan, np.float32)]


def region_reference(arrays) -> dict[int, np.ndarray]:
    z = 3 * np.asarray(arrays[0], np.float64)
    rows, cols = TILE_SHAPE
    storage = z.reshape(rows, cols // 8, 8).transpose(1, 0, 2).reshape(TILE_SHAPE)
    return {1: storage, 2: z}
