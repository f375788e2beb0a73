"""Views (`T.Tensor(shape, dtype, X.data)`) are aliases: what one name stores, the other reads, across
kernels and within one thread; a tile operation on a view keeps the view's edges."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

ROWS, COLS, BLOCK = 10, 12, 32  # 120 elements: the views' last tiles are ragged


def views_alias_their_base():
    """Reads and writes through a view and through its base see each other: the first kernel writes
    `tmp` through a 1-D view, the second reads it through its base and writes `Y` through a (4, 30) view
    by T.copy (the tile is wider than the view: its last columns are skipped), the third updates `Y`
    through the base and reads that update back through a 1-D view in the same iteration."""

    @T.prim_func
    def views_alias_their_base(
        X: T.Tensor((ROWS, COLS), "float32"),
        tmp: T.Tensor((ROWS, COLS), "float32"),
        Y: T.Tensor((ROWS, COLS), "float32"),
        Z: T.Tensor((ROWS, COLS), "float32"),
    ):
        with T.Kernel(T.ceildiv(ROWS * COLS, BLOCK), threads=32) as bx:
            tmp_flat = T.Tensor((ROWS * COLS,), "float32", tmp.data)
            for i in T.Parallel(BLOCK):
                tmp_flat[bx * BLOCK + i] = X[(bx * BLOCK + i) // COLS, (bx * BLOCK + i) % COLS] * 2.0
        with T.Kernel(1, threads=32):
            y_rows = T.Tensor((4, 30), "float32", Y.data)
            tile = T.alloc_shared((4, BLOCK), "float32")
            for i, j in T.Parallel(4, BLOCK):
                if j < 30:
                    tile[i, j] = tmp[(i * 30 + j) // COLS, (i * 30 + j) % COLS] + 1.0
            T.copy(tile, y_rows[0, 0])
        with T.Kernel(1, threads=32):
            y_flat = T.Tensor((ROWS * COLS,), "float32", Y.data)
            for i in T.Parallel(ROWS * COLS):
                Y[i // COLS, i % COLS] = Y[i // COLS, i % COLS] * 3.0
                Z[i // COLS, i % COLS] = y_flat[i] - 1.0

    return views_alias_their_base


def alias_inputs(rng) -> list[np.ndarray]:
    shape = (ROWS, COLS)
    return [rng.standard_normal(shape).astype(np.float32)] + [
        np.full(shape, np.nan, np.float32) for _ in range(3)
    ]


def alias_reference(arrays) -> dict[int, np.ndarray]:
    tmp = np.asarray(arrays[0], np.float64) * 2.0
    y = (tmp + 1.0) * 3.0
    return {1: tmp, 2: y, 3: y - 1.0}
