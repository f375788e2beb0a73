"""Reductions of fragments that keep the reduced dim as extent 1 (TileLang's T.reduce_* into a buffer of
the source's rank): along rows and columns of a 2-D tile, and a whole 1-D tile into a (1,) fragment
accumulated over a loop (example_chunk_o_bwd.py:240-247)."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

ROWS = (100, 48)  # rows (ragged for 32-row tiles), columns (not a power of two)
BLOCK = 32


def rows_and_columns():
    """Row maxima into (BLOCK, 1) and column sums into (1, n), each read back broadcast over the tile."""
    m, n = ROWS

    @T.prim_func
    def keep_dim_rows_columns(
        X: T.Tensor((m, n), "float32"),
        Y: T.Tensor((m, n), "float32"),
        S: T.Tensor((T.ceildiv(m, BLOCK), n), "float32"),
    ):
        with T.Kernel(T.ceildiv(m, BLOCK), threads=128) as bx:
            x = T.alloc_fragment((BLOCK, n), "float32")
            row_max = T.alloc_fragment((BLOCK, 1), "float32")
            col_sum = T.alloc_fragment((1, n), "float32")
            T.copy(X[bx * BLOCK, 0], x)
            for i, j in T.Parallel(BLOCK, n):
                x[i, j] = T.if_then_else(bx * BLOCK + i < m, x[i, j], -1.0)
            T.reduce_max(x, row_max, dim=1)
            T.reduce_sum(x, col_sum, dim=0)
            for i, j in T.Parallel(BLOCK, n):
                x[i, j] = x[i, j] - row_max[i, 0] + col_sum[0, j]
            T.copy(x, Y[bx * BLOCK, 0])
            for j in T.Parallel(n):
                S[bx, j] = col_sum[0, j]

    return keep_dim_rows_columns


def rows_and_columns_inputs(rng) -> list[np.ndarray]:
    m, n = ROWS
    blocks = -(-m // BLOCK)
    return [rng.standard_normal((m, n)).astype(np.float32), np.full((m, n), np.nan, np.float32),
            np.full((blocks, n), np.nan, np.float32)]  # fmt: skip


def rows_and_columns_reference(arrays) -> dict[int, np.ndarray]:
    m, n = ROWS
    blocks = -(-m // BLOCK)
    x = np.full((blocks * BLOCK, n), -1.0)
    x[:m] = np.asarray(arrays[0], np.float64)
    tiles = x.reshape(blocks, BLOCK, n)
    col_sum = tiles.sum(axis=1)
    y = tiles - tiles.max(axis=2, keepdims=True) + col_sum[:, None, :]
    return {1: y.reshape(-1, n)[:m], 2: col_sum}


WHOLE = (3, 5, 24, 40)  # blocks, loop steps, tile rows, tile columns


def whole_tile_accumulated():
    """Per block, the sum over steps of sum(H * dH) of a (rows*cols,) fragment reduced into a (1,)
    fragment with clear=False, read as a scalar each step (dg_last in example_chunk_o_bwd.py)."""
    blocks, steps, rows, cols = WHOLE

    @T.prim_func
    def keep_dim_whole_tile(
        H: T.Tensor((blocks, steps, rows, cols), "float32"),
        dH: T.Tensor((blocks, steps, rows, cols), "float32"),
        Out: T.Tensor((blocks, 2), "float32"),
    ):
        with T.Kernel(blocks, threads=128) as bx:
            h_s = T.alloc_shared((rows, cols), "float32")
            dh_s = T.alloc_shared((rows, cols), "float32")
            prod = T.alloc_fragment((rows * cols,), "float32")
            running = T.alloc_fragment((1,), "float32")
            step_max = T.alloc_fragment((1,), "float32")
            total = T.alloc_var("float32")
            T.clear(running)
            total = 0.0
            for s in T.Pipelined(steps, num_stages=1):
                T.copy(H[bx, s, 0, 0], h_s)
                T.copy(dH[bx, s, 0, 0], dh_s)
                for k in T.Parallel(rows * cols):
                    prod[k] = h_s[k // cols, k % cols] * dh_s[k // cols, k % cols]
                T.reduce_sum(prod, running, dim=-1, clear=False)
                T.reduce_max(prod, step_max, dim=0)
                total = total + step_max[0]
            Out[bx, 0] = running[0]
            Out[bx, 1] = total

    return keep_dim_whole_tile


def whole_tile_inputs(rng) -> list[np.ndarray]:
    blocks, steps, rows, cols = WHOLE
    h, dh = (rng.standard_normal((blocks, steps, rows, cols)).astype(np.float32) for _ in range(2))
    return [h, dh, np.full((blocks, 2), np.nan, np.float32)]


def whole_tile_reference(arrays) -> dict[int, np.ndarray]:
    h, dh = (np.asarray(a, np.float64) for a in arrays[:2])
    prod = (h * dh).reshape(h.shape[0], h.shape[1], -1)
    return {2: np.stack([prod.sum(axis=(1, 2)), prod.max(axis=2).sum(axis=1)], axis=1)}
