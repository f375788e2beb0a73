"""The register layouts of AMD's MFMA instructions (CDNA, wave64), as linear layouts.

Every constructor returns a `LinearLayout` with input dims ``("register", "lane", "warp")`` (a lane's
local index, its lane in the wavefront and its wavefront in the work-group; work-item = wave * 64 + lane)
and output dims ``dim0, dim1``: the tile's rows and columns, each a power of two.

`v_mfma_f32_16x16x16_f16` / `_bf16` (and `v_mfma_f32_16x16x32_fp8_fp8` and its bf8 forms on gfx942)
take, per lane l of the wavefront (AMD CDNA3 ISA guide, "Dependency and layout of MFMA operands"; AMD's
matrix instruction calculator):

    A (16 x K): a[i] = A[l % 16][(l / 16) * E + i]           i < E
    B (K x 16): b[i] = B[(l / 16) * E + i][l % 16]
    D (16 x 16): d[i] = D[(l / 16) * 4 + i][l % 16]           i < 4

with E = 4 elements per lane for K = 16 and 8 for K = 32. They are the HIP backend's: the shared
layout algebra knows no instruction.
"""

from __future__ import annotations

from tilecraft.layout.linear import LinearLayout, is_power_of_two

__all__ = [
    "MFMA_TILE",
    "WAVEFRONT",
    "mfma_accumulator",
    "mfma_accumulator_coords",
    "mfma_operand_a_coords",
    "mfma_operand_b_coords",
    "wave_tiles",
]

WAVEFRONT = 64


def log2(n: int) -> int:
    return n.bit_length() - 1


MFMA_TILE = 16  # rows and columns of one MFMA's D


def wave_tiles(m: int, n: int, waves_m: int, waves_n: int) -> tuple[int, int]:
    """The 16x16 MFMA tiles `(tiles_m, tiles_n)` each wavefront owns of an (m x n) tile split over a
    (waves_m x waves_n) grid; ValueError unless everything is a power of two that divides evenly."""
    counts = []
    for extent, waves, name in ((m, waves_m, "rows"), (n, waves_n, "cols")):
        if not is_power_of_two(waves):
            raise ValueError(f"mfma_accumulator: waves along {name} must be a power of two, got {waves}")
        if extent % (waves * MFMA_TILE):
            raise ValueError(f"mfma_accumulator: {name}={extent} is not a multiple of {waves} waves x 16")
        count = extent // (waves * MFMA_TILE)
        if not is_power_of_two(count):
            raise ValueError(
                f"mfma_accumulator: {name}={extent} gives {count} MFMA tiles per wave, not a power of two"
            )
        counts.append(count)
    return counts[0], counts[1]


def _bits(*pieces: tuple[int, int, int]) -> list[tuple[int, int]]:
    """Basis vectors from `(dim, count, first_bit)` pieces, lowest input bits first."""
    return [(1 << (first + b), 0) if dim == 0 else (0, 1 << (first + b)) for dim, count, first in pieces
            for b in range(count)]  # fmt: skip


def mfma_accumulator(m: int, n: int, waves_m: int, waves_n: int) -> LinearLayout:
    """The f32 accumulator of an (m x n) tile computed with 16x16 MFMAs by a (waves_m x waves_n) grid.

    Wave w = wm * waves_n + wn owns rows [wm * m/waves_m, ...) and cols [wn * n/waves_n, ...), made of
    tm x tn MFMA tiles; lane l holds, of tile (mi, ni):

        reg = (mi * tn + ni) * 4 + i                      i < 4
        row = wm * (m / waves_m) + mi * 16 + (l / 16) * 4 + i
        col = wn * (n / waves_n) + ni * 16 + l % 16
    """
    tm, tn = wave_tiles(m, n, waves_m, waves_n)
    register = _bits((0, 2, 0), (1, log2(tn), 4), (0, log2(tm), 4))
    lane = _bits((1, 4, 0), (0, 2, 2))
    warp = _bits((1, log2(waves_n), log2(n // waves_n)), (0, log2(waves_m), log2(m // waves_m)))
    return LinearLayout({"register": register, "lane": lane, "warp": warp}, {"dim0": m, "dim1": n})


def mfma_accumulator_coords(
    thread: int, reg: int, m: int, n: int, waves_m: int, waves_n: int
) -> tuple[int, int]:
    """The (row, col) that register `reg` of work-item `thread` holds in `mfma_accumulator`: the
    formulas above in plain Python, which tc_mfma.h's gemm follows."""
    wave, lane = divmod(thread, WAVEFRONT)
    wm, wn = divmod(wave, waves_n)
    tn = n // waves_n // MFMA_TILE
    tile, i = divmod(reg, 4)
    mi, ni = divmod(tile, tn)
    row = wm * (m // waves_m) + mi * MFMA_TILE + (lane // 16) * 4 + i
    col = wn * (n // waves_n) + ni * MFMA_TILE + lane % 16
    return row, col


def mfma_operand_a_coords(lane: int, i: int, per_lane: int) -> tuple[int, int]:
    """The (row, k) of one MFMA's A tile that element `i` of lane `lane` holds (`per_lane`: 4 for the
    f16/bf16 16x16x16 forms, 8 for the fp8 16x16x32 ones)."""
    return lane % 16, (lane // 16) * per_lane + i


def mfma_operand_b_coords(lane: int, i: int, per_lane: int) -> tuple[int, int]:
    """The (k, col) of one MFMA's B tile that element `i` of lane `lane` holds."""
    return (lane // 16) * per_lane + i, lane % 16
