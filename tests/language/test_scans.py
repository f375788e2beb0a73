"""`T.cumsum`, `T.cummax`, `T.cummin`: running sums, maxima and minima along a dim of a tile, forward and
reversed, in place and out of place, against float64 NumPy references on ragged tiles."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_roundtrip

SCANS = {"sum": T.cumsum, "max": T.cummax, "min": T.cummin}


def tile_scan(m: int, n: int, block: int, kind: str, dim: int, reverse: bool, in_place: bool):
    """Each block_x block tile of A scanned along `dim` into the same tile of B (edge tiles ragged)."""
    scan = SCANS[kind]

    @T.prim_func
    def kernel(A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=64) as (bx, by):
            a = T.alloc_shared((block, block), "float32")
            b = T.alloc_shared((block, block), "float32")
            T.copy(A[by * block, bx * block], a)
            if in_place:
                scan(a, dim=dim, reverse=reverse)
                T.copy(a, B[by * block, bx * block])
            else:
                scan(src=a, dst=b, dim=dim, reverse=reverse)
                T.copy(b, B[by * block, bx * block])

    return kernel


def reference(a: np.ndarray, block: int, kind: str, dim: int, reverse: bool) -> np.ndarray:
    """The scan of each tile; the zero padding of edge tiles enters scans from the end only."""
    acc = {"sum": np.cumsum, "max": np.maximum.accumulate, "min": np.minimum.accumulate}[kind]
    m, n = a.shape
    padded = np.zeros((-(-m // block) * block, -(-n // block) * block))
    padded[:m, :n] = a
    out = np.empty_like(padded)
    for i in range(0, padded.shape[0], block):
        for j in range(0, padded.shape[1], block):
            tile = padded[i : i + block, j : j + block]
            tile = np.flip(tile, dim) if reverse else tile
            scanned = acc(tile, axis=dim)
            out[i : i + block, j : j + block] = np.flip(scanned, dim) if reverse else scanned
    return out[:m, :n]


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("dim, reverse, in_place", [(0, False, True), (1, True, False), (1, False, True)])
def test_scan_of_ragged_tiles(kind, dim, reverse, in_place):
    m, n, block = 45, 37, 16
    a = np.random.default_rng(7).standard_normal((m, n)).astype(np.float32)
    b = np.full((m, n), np.nan, np.float32)
    tilecraft.compile(tile_scan(m, n, block, kind, dim, reverse, in_place), target="c")(a, b)
    np.testing.assert_allclose(
        b, reference(a.astype(np.float64), block, kind, dim, reverse), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("kind", ["max", "min"])
def test_scan_prints_and_parses_back(kind):
    assert f"T.cum{kind}(" in assert_roundtrip(tile_scan(32, 32, 16, kind, 1, True, False))
