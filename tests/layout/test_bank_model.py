"""The bank model (bank_model.py): row-major and the ldmatrix swizzle, and the conflicts it counts."""

from __future__ import annotations

import itertools

import pytest

from tests.layout.bank_model import (
    Access,
    bank_conflicts,
    column_access,
    cp_async_access,
    ldmatrix_access,
    row_access,
    row_major,
    swizzled,
)

# (elem_bytes, cols): rows of 16 .. 256 bytes
TILES = [(2, 64), (2, 32), (2, 16), (2, 128), (4, 32), (4, 8), (1, 128), (1, 64), (8, 16)]


def test_row_major_offsets():
    layout = row_major(4, 8)
    for r, c in itertools.product(range(4), range(8)):
        assert layout.apply(row=r, col=c) == {"offset": r * 8 + c}


def test_row_major_pads_rows_and_columns():
    layout = row_major(5, 24)
    assert layout.in_dims == (("row", 8), ("col", 32)) and layout.out_dims == (("offset", 256),)


@pytest.mark.parametrize("elem_bytes, cols", TILES)
def test_swizzle_is_a_permutation_of_whole_chunks(elem_bytes, cols):
    """Bijective, and the elements of a 16-byte chunk stay contiguous (vector accesses still work)."""
    layout = swizzled(64, cols, elem_bytes)
    assert layout.is_bijective()
    per_chunk = min(16 // elem_bytes, cols)
    assert layout.num_consecutive("col", "offset") >= per_chunk
    for r in range(64):
        offsets = {layout.apply(row=r, col=c)["offset"] for c in range(cols)}
        assert offsets == set(range(r * cols, (r + 1) * cols)), "each row stays within its own row of storage"


def test_classic_swizzle_formula_for_128_byte_rows():
    """fp16, 64 columns: chunk ^ (row % 8) inside the row."""
    layout = swizzled(32, 64, 2)
    for r, c in itertools.product(range(32), range(64)):
        chunk, within = divmod(c, 8)
        assert layout.apply(row=r, col=c)["offset"] == r * 64 + ((chunk ^ (r % 8)) * 8) + within


@pytest.mark.parametrize("elem_bytes, cols", TILES)
def test_ldmatrix_reads_are_conflict_free_only_with_the_swizzle(elem_bytes, cols):
    """Every ldmatrix.x4 (or x2 on 16-byte-wide tiles) position: 0 extra wavefronts when swizzled;
    row-major loses whenever several of the 8 rows share a bank group."""
    per_chunk = 16 // elem_bytes
    matrices = 4 if cols >= 2 * per_chunk else 2
    width = per_chunk * (matrices // 2)
    swz, plain = swizzled(64, cols, elem_bytes), row_major(64, cols)
    worst_plain = 0
    for row0, col0 in itertools.product(range(0, 64 - 16 + 1, 3), range(0, cols - width + 1, per_chunk)):
        access = ldmatrix_access(row0, col0, elem_bytes, matrices)
        assert bank_conflicts(swz, access) == 0
        worst_plain = max(worst_plain, bank_conflicts(plain, access))
    row_bytes = cols * elem_bytes
    rows_per_line = max(1, 128 // row_bytes)
    assert worst_plain == matrices * (8 // rows_per_line - 1)


def test_row_major_ldmatrix_conflicts_are_counted_exactly():
    """fp16 rows of 128 bytes: each phase reads one bank group 8 times: 7 extra wavefronts, x4 phases."""
    assert bank_conflicts(row_major(64, 64), ldmatrix_access(0, 0)) == 28
    assert bank_conflicts(row_major(64, 32), ldmatrix_access(0, 0)) == 12


@pytest.mark.parametrize("elem_bytes, cols", TILES)
def test_cp_async_writes_are_conflict_free_in_both_layouts(elem_bytes, cols):
    for layout in (row_major(64, cols), swizzled(64, cols, elem_bytes)):
        for warp in range(2):
            assert bank_conflicts(layout, cp_async_access(cols, elem_bytes, warp)) == 0


def test_scalar_accesses():
    """A row read is free; a column read of a row-major fp32 tile hits one bank 32 times."""
    plain, swz = row_major(32, 32), swizzled(32, 32, 4)
    assert bank_conflicts(plain, row_access(5)) == 0
    assert bank_conflicts(swz, row_access(5)) == 0
    assert bank_conflicts(plain, column_access(0)) == 31
    assert bank_conflicts(swz, column_access(0)) == 3


def test_threads_reading_one_word_share_it():
    """Two fp16 elements of one 4-byte word are one bank access (a broadcast, not a conflict)."""
    layout = row_major(8, 64)
    access = Access(tuple((0, t // 2) for t in range(32)), 1, 2)
    assert bank_conflicts(layout, access) == 0


def test_vector_access_must_be_contiguous():
    transposed = row_major(64, 64).rename_ins({"row": "col", "col": "row"})
    with pytest.raises(ValueError, match="not contiguous"):
        bank_conflicts(transposed, ldmatrix_access(0, 0))
