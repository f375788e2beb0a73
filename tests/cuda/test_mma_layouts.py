"""The mma.sync m16n8k16 tensor-core layouts (CUDA's) against the PTX ISA's fragment tables."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

import tilecraft.language as T
from tilecraft.cuda.intrinsics.mma_layouts import (
    WARP_SIZE,
    mma_accumulator,
    mma_accumulator_coords,
    mma_operand_a,
    mma_operand_a_coords,
    mma_operand_a_i8,
    mma_operand_a_i8_coords,
    mma_operand_b,
    mma_operand_b_coords,
)
from tilecraft.layout import LinearLayout

# ---------------------------------------------------------------- the ISA, restated
# PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type", .f16/.bf16 A and B, f32/f16 C/D:
# groupID = laneid >> 2, threadID_in_group = laneid % 4.


def isa_a(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of a_i (i = 0..7) in the 16x16 A tile."""
    group, tig = lane >> 2, lane % 4
    row = group if (i < 2 or 4 <= i < 6) else group + 8
    col = tig * 2 + (i & 1) + (8 if i >= 4 else 0)
    return row, col


def isa_b(lane: int, i: int) -> tuple[int, int]:
    """(row, col) = (k, n) of b_i (i = 0..3) in the 16x8 B tile."""
    group, tig = lane >> 2, lane % 4
    row = tig * 2 + (i & 1) + (8 if i >= 2 else 0)
    return row, group


def isa_c(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of c_i (i = 0..3) in the 16x8 accumulator tile."""
    group, tig = lane >> 2, lane % 4
    row = group if i < 2 else group + 8
    return row, tig * 2 + (i & 1)


def points(layout: LinearLayout):
    """Every (register, lane, warp) of a fragment layout."""
    yield from itertools.product(*(range(layout.in_size(n)) for n in ("register", "lane", "warp")))


def coords(layout: LinearLayout, reg: int, lane: int, warp: int) -> tuple[int, int]:
    out = layout.apply(register=reg, lane=lane, warp=warp)
    return out["dim0"], out["dim1"]


# ---------------------------------------------------------------- one mma tile


def test_single_tile_accumulator_is_the_isa_layout():
    layout = mma_accumulator(16, 8, 1, 1)
    assert layout.in_dims == (("register", 4), ("lane", 32), ("warp", 1))
    for lane, i in itertools.product(range(32), range(4)):
        assert coords(layout, i, lane, 0) == isa_c(lane, i)


def test_single_tile_operand_a_is_the_isa_layout():
    layout = mma_operand_a(16, 16, 1, 1)
    assert layout.in_size("register") == 8
    for lane, i in itertools.product(range(32), range(8)):
        assert coords(layout, i, lane, 0) == isa_a(lane, i)


def test_single_tile_operand_b_is_the_isa_layout():
    layout = mma_operand_b(16, 8, 1, 1)
    assert layout.in_size("register") == 4
    for lane, i in itertools.product(range(32), range(4)):
        assert coords(layout, i, lane, 0) == isa_b(lane, i)


def _thread_value(shape, strides, rows: int, thread: int, value: int) -> tuple[int, int]:
    """A thread-value statement of a fragment table: thread = (t0 in 4, t1 in 8), value = mixed-radix
    digits; the strides index the tile column-major (offset = row + rows * col)."""
    t_digits = (thread % 4, thread // 4)
    v_digits, rest = [], value
    for size in shape:
        v_digits.append(rest % size)
        rest //= size
    offset = sum(d * s for d, s in zip(t_digits, strides[0])) + sum(
        d * s for d, s in zip(v_digits, strides[1])
    )
    return offset % rows, offset // rows


@pytest.mark.parametrize(
    "fn, regs, value_shape, strides, rows",
    [
        (isa_a, 8, (2, 2, 2), ((32, 1), (16, 8, 128)), 16),
        (lambda lane, i: isa_b(lane, i)[::-1], 4, (2, 2), ((16, 1), (8, 64)), 8),
        (isa_c, 4, (2, 2), ((32, 1), (16, 8)), 16),
    ],
    ids=["A", "B-transposed", "C"],
)
def test_isa_reference_agrees_with_a_thread_value_statement(fn, regs, value_shape, strides, rows):
    """A second, stride-based statement of the same three tables gives the same coordinates (B is
    stated as n x k, hence transposed)."""
    for lane, i in itertools.product(range(32), range(regs)):
        assert fn(lane, i) == _thread_value(value_shape, strides, rows, lane, i)


def test_isa_reference_covers_each_tile_once():
    """The restated ISA maps are bijections of 32 lanes x registers onto their tiles."""
    for fn, regs, shape in ((isa_a, 8, (16, 16)), (isa_b, 4, (16, 8)), (isa_c, 4, (16, 8))):
        cells = Counter(fn(lane, i) for lane in range(32) for i in range(regs))
        assert len(cells) == shape[0] * shape[1] and set(cells.values()) == {1}


# ---------------------------------------------------------------- warp grids

ACC_CONFIGS = [
    (16, 8, 1, 1),
    (32, 32, 2, 2),
    (64, 64, 2, 2),
    (128, 64, 4, 2),
    (64, 128, 2, 4),
    (32, 16, 1, 2),
]


@pytest.mark.parametrize("m, n, warps_m, warps_n", ACC_CONFIGS)
def test_accumulator_matches_its_reference_formula(m, n, warps_m, warps_n):
    """Every (register, lane, warp) of the layout lands where mma_accumulator_coords says."""
    layout = mma_accumulator(m, n, warps_m, warps_n)
    assert layout.in_size("warp") == warps_m * warps_n
    assert layout.in_size("register") == (m // warps_m // 16) * (n // warps_n // 8) * 4
    for reg, lane, warp in points(layout):
        expected = mma_accumulator_coords(warp * 32 + lane, reg, m, n, warps_m, warps_n)
        assert coords(layout, reg, lane, warp) == expected


@pytest.mark.parametrize("m, n, warps_m, warps_n", ACC_CONFIGS)
def test_accumulator_is_the_isa_tile_repeated(m, n, warps_m, warps_n):
    """Within each mma tile the reference formula is the ISA's c0..c3 layout; every element has one owner."""
    wm_size, wn_size, tn = m // warps_m, n // warps_n, n // warps_n // 8
    seen = set()
    for thread, reg in itertools.product(range(32 * warps_m * warps_n), range(wm_size // 16 * tn * 4)):
        warp, lane = divmod(thread, 32)
        wm, wn = divmod(warp, warps_n)
        mi, ni = divmod(reg // 4, tn)
        row, col = mma_accumulator_coords(thread, reg, m, n, warps_m, warps_n)
        base = (wm * wm_size + mi * 16, wn * wn_size + ni * 8)
        assert (row - base[0], col - base[1]) == isa_c(lane, reg % 4)
        seen.add((row, col))
    assert len(seen) == m * n
    assert mma_accumulator(m, n, warps_m, warps_n).is_bijective()


OPERAND_CONFIGS = [(16, 16, 1, 1), (32, 32, 2, 2), (64, 32, 2, 2), (64, 64, 4, 2), (32, 64, 1, 4)]


@pytest.mark.parametrize("m, k, warps_m, warps_n", OPERAND_CONFIGS)
def test_operand_a_matches_reference_and_isa(m, k, warps_m, warps_n):
    """A: the ISA's a0..a7 per 16x16 tile, tiles (mi, ki) row-major, replicated over warps_n."""
    layout = mma_operand_a(m, k, warps_m, warps_n)
    owners = Counter()
    for reg, lane, warp in points(layout):
        row, col = coords(layout, reg, lane, warp)
        assert (row, col) == mma_operand_a_coords(warp * 32 + lane, reg, m, k, warps_m, warps_n)
        mi, ki = divmod(reg // 8, k // 16)
        base_row = (warp // warps_n) * (m // warps_m) + mi * 16
        assert (row - base_row, col - ki * 16) == isa_a(lane, reg % 8)
        owners[row, col] += 1
    assert len(owners) == m * k and set(owners.values()) == {warps_n}
    assert layout.is_surjective()
    assert layout.free_input_bits("warp") == tuple(range(warps_n.bit_length() - 1))


def isa_a_i8(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of a_i (i = 0..15) in the 16x32 A tile of mma.m16n8k32 with .s8/.u8 inputs (PTX ISA,
    "Matrix Fragments for mma.m16n8k32", A): row groupID for a0..a3 and a8..a11, else groupID + 8;
    col threadID_in_group * 4 + (i & 3), + 16 for a8..a15."""
    group, tig = lane >> 2, lane % 4
    row = group if (i < 4 or 8 <= i < 12) else group + 8
    return row, tig * 4 + (i & 3) + (16 if i >= 8 else 0)


@pytest.mark.parametrize("m, k, warps_m, warps_n", [(16, 32, 1, 1), (32, 128, 2, 2), (64, 64, 2, 2), (32, 64, 1, 4)])
def test_int8_operand_a_matches_reference_and_isa(m, k, warps_m, warps_n):
    """8-bit A: the ISA's a0..a15 per 16x32 tile, tiles (mi, ki) row-major, replicated over warps_n; byte
    for byte the 16-bit A layout of the tile read as pairs (what tc::gemm_rs_i8 relies on)."""
    layout = mma_operand_a_i8(m, k, warps_m, warps_n)
    pairs = mma_operand_a(m, k // 2, warps_m, warps_n)
    owners = Counter()
    for reg, lane, warp in points(layout):
        row, col = coords(layout, reg, lane, warp)
        assert (row, col) == mma_operand_a_i8_coords(warp * 32 + lane, reg, m, k, warps_m, warps_n)
        mi, ki = divmod(reg // 16, k // 32)
        base_row = (warp // warps_n) * (m // warps_m) + mi * 16
        assert (row - base_row, col - ki * 32) == isa_a_i8(lane, reg % 16)
        assert coords(pairs, reg // 2, lane, warp) == (row, col // 2) and reg % 2 == col % 2
        owners[row, col] += 1
    assert len(owners) == m * k and set(owners.values()) == {warps_n}


@pytest.mark.parametrize("k, n, warps_m, warps_n", [(c[1], c[0], c[2], c[3]) for c in OPERAND_CONFIGS])
def test_operand_b_matches_reference_and_isa(k, n, warps_m, warps_n):
    """B: the ISA's b0..b3 per 16x8 tile, tiles (ki, ni) row-major, replicated over warps_m."""
    if n % (8 * warps_n):
        pytest.skip("tile does not split over the warps")
    layout = mma_operand_b(k, n, warps_m, warps_n)
    tn = n // warps_n // 8
    owners = Counter()
    for reg, lane, warp in points(layout):
        row, col = coords(layout, reg, lane, warp)
        assert (row, col) == mma_operand_b_coords(warp * 32 + lane, reg, k, n, warps_m, warps_n)
        ki, ni = divmod(reg // 4, tn)
        base_col = (warp % warps_n) * (n // warps_n) + ni * 8
        assert (row - ki * 16, col - base_col) == isa_b(lane, reg % 4)
        owners[row, col] += 1
    assert len(owners) == k * n and set(owners.values()) == {warps_m}
    warp_n_bits = warps_n.bit_length() - 1
    assert layout.free_input_bits("warp") == tuple(range(warp_n_bits, warp_n_bits + warps_m.bit_length() - 1))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: mma_operand_a(32, 48, 1, 1), "not a power of two"),
        (lambda: mma_accumulator(32, 20, 1, 1), "not a multiple"),
        (lambda: mma_accumulator(64, 64, 3, 1), "power of two"),
        (lambda: mma_operand_a(32, 24, 1, 1), "not a multiple"),
        (lambda: mma_operand_b(16, 16, 1, 3), "power of two"),
    ],
)
def test_mma_layouts_reject_unsupported_tiles(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_fragment_to_linear_recovers_the_mma_tile():
    fragment = T.Fragment(
        (16, 8),
        forward_thread_fn=lambda i, j: (i % 8) * 4 + j // 2,
        forward_index_fn=lambda i, j: (i // 8) * 2 + j % 2,
    )
    assert fragment.to_linear(WARP_SIZE) == mma_accumulator(16, 8, 1, 1)


@pytest.mark.parametrize("m, n, warps_m, warps_n", [(48, 32, 1, 1), (128, 192, 8, 1), (32, 192, 1, 8), (96, 48, 2, 2)])
def test_padded_accumulator_covers_each_element_once(m, n, warps_m, warps_n):
    """An extent that is not a power of two (TileLang's 192-column GQA head) is laid out as the next
    power of two: every real element has exactly one (register, lane, warp), the rest of the padded
    span lies outside the tile, and the coordinates are the formulas tc::gemm_ss follows with the warps'
    shares of the padded extents (tc_pad_pow2 in tc_cuda.h)."""
    layout = mma_accumulator(m, n, warps_m, warps_n)
    assert layout.out_size("dim0") == 1 << (m - 1).bit_length()
    assert layout.out_size("dim1") == 1 << (n - 1).bit_length()
    owners = Counter()
    for reg, lane, warp in points(layout):
        row, col = coords(layout, reg, lane, warp)
        assert (row, col) == mma_accumulator_coords(warp * 32 + lane, reg, m, n, warps_m, warps_n)
        if row < m and col < n:
            owners[row, col] += 1
    assert len(owners) == m * n and set(owners.values()) == {1}


def test_padded_operand_a_rows():
    layout = mma_operand_a(48, 32, 1, 1)
    real = {coords(layout, r, lane, 0) for r, lane, _ in points(layout)}
    assert {(row, col) for row, col in real if row < 48} == {(r, c) for r in range(48) for c in range(32)}
