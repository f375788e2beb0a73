"""T.copy between regions of different extents, TileLang's rule: its copy iterates over the source when
the source is in memory as near as the destination's or nearer, so a smaller source fills the start of
the destination region (`T.copy(A[:, :2], B[:, :3])` writes `B[:, :2]`); where TileLang would read or
write past a region instead (a larger source, or a destination in nearer memory), tilecraft refuses."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_roundtrip
from tilecraft.errors import SemanticError
from tilecraft.ir import stmt as S
from tilecraft.ir import walk
from tilecraft.ir.expr import const_value
from tilecraft.transform.check import check_semantics

RNG = np.random.default_rng(7)


def global_columns(m: int, n: int, block: int):
    """TileLang's test_tilelang_copy_shape_mismatched, tiled over ragged rows."""

    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(m, block), threads=64) as bx:
            T.copy(A[bx * block : (bx + 1) * block, 1:3], B[bx * block : (bx + 1) * block, 0:5])

    return main


def test_a_smaller_source_fills_the_start_of_the_destination_region():
    m, n = 37, 6  # 37 rows: the last tile runs past the edge
    func = global_columns(m, n, 16)
    (copy,) = [s for s in walk(func.body) if isinstance(s, S.Copy)]
    assert [const_value(r.extent) for r in copy.dst.ranges] == [16, 2]
    assert_roundtrip(func)
    a = RNG.standard_normal((m, n)).astype(np.float32)
    b = np.full((m, n), np.nan, np.float32)  # poisoned: what the copy does not write stays NaN
    tilecraft.compile(func, target="c")(a, b)
    assert np.array_equal(b[:, :2], a[:, 1:3])
    assert np.isnan(b[:, 2:]).all()


def fragment_to_global(m: int, n: int, rows: int, cols: int):
    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(m, rows), threads=128) as bx:
            tile = T.alloc_fragment((rows, cols), "float32")
            T.copy(A[bx * rows, 0], tile)
            for i, j in T.Parallel(rows, cols):
                tile[i, j] = tile[i, j] * 2.0
            T.copy(tile, B[bx * rows : (bx + 1) * rows, 0:n])  # cols < n: the first cols columns

    return main


def test_a_fragment_fills_the_start_of_a_wider_global_region():
    m, n, rows, cols = 29, 13, 8, 5
    a = RNG.standard_normal((m, n)).astype(np.float32)
    b = np.full((m, n), np.nan, np.float32)
    tilecraft.compile(fragment_to_global(m, n, rows, cols), target="c")(a, b)
    ref = 2.0 * a[:, :cols].astype(np.float64)
    assert np.abs(b[:, :cols] - ref).max() == 0
    assert np.isnan(b[:, cols:]).all()


def _refused(body):
    @T.prim_func
    def main(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128):
            body(A, B)

    with pytest.raises(SemanticError, match="T.copy extents differ"):
        check_semantics(main)


@T.macro
def _larger_source(A, B):
    T.copy(A[:, 0:3], B[:, 0:2])  # TileLang writes B[:, 2] too, past the region


@T.macro
def _global_source_into_a_larger_tile(A, B):
    tile = T.alloc_shared((32, 8), "float32")
    T.copy(A[:, 0:4], tile)  # TileLang iterates over the tile and reads A[:, 4:8], past the region
    T.copy(tile, B[:, 0:8])


@T.macro
def _shared_source_into_a_larger_fragment(A, B):
    tile = T.alloc_shared((32, 4), "float32")
    frag = T.alloc_fragment((32, 8), "float32")
    T.copy(A[:, 0:4], tile)
    T.copy(tile, frag)  # the fragment is the nearer memory: TileLang iterates over it
    T.copy(frag, B[:, 0:8])


@pytest.mark.parametrize(
    "body", [_larger_source, _global_source_into_a_larger_tile, _shared_source_into_a_larger_fragment]
)
def test_where_tilelang_goes_past_a_region_the_copy_is_refused(body):
    _refused(body)


def test_equal_extents_keep_their_regions():
    """The rule makes no new region where the extents already agree."""

    @T.prim_func
    def main(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16, 8), "float32")):
        with T.Kernel(1, threads=32):
            T.copy(A[0:16, 0:8], B)

    (copy,) = [s for s in walk(main.body) if isinstance(s, S.Copy)]
    assert [const_value(r.extent) for r in copy.dst.ranges] == [16, 8]
