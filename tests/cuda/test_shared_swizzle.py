"""The swizzle of 16-bit tensor-core operand tiles: a permutation, and free of bank conflicts for the
accesses that use it (an ldmatrix phase reads 16 bytes from each of 8 consecutive rows at one logical
chunk; a cp.async phase writes 8 consecutive 16-byte chunks of the row-major tile)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tilecraft.cuda.shared_layout import swizzle16, swizzle16_line_shift
from tilecraft.errors import ToolchainError

ELEMS_PER_CHUNK = 8  # 16 bytes of 16-bit elements
HEADER = Path(__file__).resolve().parents[2] / "tilecraft" / "cuda" / "include" / "tc_cuda.h"


def bank_group(offset: int) -> int:
    """Which of the 8 16-byte bank groups of a 128-byte line an element offset falls in."""
    return (offset // ELEMS_PER_CHUNK) % 8


@pytest.mark.parametrize("rows, width", [(64, 32), (32, 64), (32, 128), (16, 256), (64, 96), (32, 48)])
def test_swizzle_is_a_permutation_of_the_tile(rows, width):
    layout = swizzle16(width)
    size = rows * width
    assert sorted(layout.offset(i) for i in range(size)) == list(range(size))


# Rows of other lengths (96, 48) are permuted too, but no XOR of row bits makes them conflict-free.
@pytest.mark.parametrize("rows, width", [(64, 32), (32, 64), (32, 128), (16, 256)])
def test_ldmatrix_phases_hit_eight_bank_groups(rows, width):
    layout = swizzle16(width)
    for row0 in range(0, rows - 7, 8):
        for chunk in range(width // ELEMS_PER_CHUNK):
            groups = {
                bank_group(layout.offset((row0 + r) * width + chunk * ELEMS_PER_CHUNK)) for r in range(8)
            }
            assert len(groups) == 8, (row0, chunk, sorted(groups))


@pytest.mark.parametrize("rows, width", [(64, 32), (32, 64), (32, 128), (16, 256)])
def test_cp_async_phases_hit_eight_bank_groups(rows, width):
    layout = swizzle16(width)
    chunks = rows * width // ELEMS_PER_CHUNK
    for first in range(0, chunks, 8):
        groups = {bank_group(layout.offset((first + i) * ELEMS_PER_CHUNK)) for i in range(8)}
        assert len(groups) == 8


def test_the_row_major_line_swizzle_was_conflicted_for_256_byte_rows():
    # Why the shift depends on the row length: XOR with the 128-byte line index leaves 8 rows of 128
    # 16-bit elements on only 4 bank groups.
    line_only = swizzle16(64)  # line_shift 6: the line index
    groups = {bank_group(line_only.offset(r * 128)) for r in range(8)}
    assert len(groups) == 4


def test_header_and_compiler_agree_on_the_shift(nvcc, tmp_path):
    # The device header computes the shift itself; static_asserts pin it to the Python values.
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    checks = "\n".join(
        f'static_assert(tc_swizzle16_shift({w}) == {swizzle16_line_shift(w)}, "width {w}");'
        for w in (16, 32, 48, 64, 96, 128, 256, 512)
    )
    source = f'#include "{HEADER}"\n{checks}\nextern "C" __global__ void k() {{}}\n'
    try:
        compile_cubin(source, "sm_80", keep_dir=tmp_path)
    except ToolchainError as err:
        pytest.fail(f"tc_swizzle16_shift in tc_cuda.h disagrees with swizzle16_line_shift:\n{err}")
