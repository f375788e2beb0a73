"""The register layouts of NVIDIA's tensor-core instructions, as linear layouts.

Every constructor returns a `LinearLayout` with input dims ``("register", "lane", "warp")`` (a thread's
local index, its lane in the warp and its warp in the block; thread = warp * 32 + lane) and output dims
``dim0, dim1``: the tile's rows and columns, each padded to a power of two.

The mma layouts follow `mma.sync.aligned.m16n8k16` with f16/bf16 operands and an f32 (or f16)
accumulator (m16n8k8 with .tf32 operands has the same accumulator and its own A layout); ``groupID = lane >> 2`` and ``threadID_in_group = lane % 4`` below are the ISA's names.
The wgmma layouts follow `wgmma.mma_async` m64nNk16 (sm_90a). They are CUDA's: the shared layout algebra
(`tilecraft/layout/fragment.py`) knows no instruction.
"""

from __future__ import annotations

from tilecraft.layout.linear import LinearLayout, is_power_of_two, log2, next_power_of_two

__all__ = [
    "WARPGROUP",
    "WARP_SIZE",
    "mma_accumulator",
    "mma_accumulator_coords",
    "mma_operand_a",
    "mma_operand_a_coords",
    "mma_operand_a_i8",
    "mma_operand_a_i8_coords",
    "mma_operand_a_tf32",
    "mma_operand_a_tf32_coords",
    "mma_operand_b",
    "mma_operand_b_coords",
    "wgmma_accumulator",
    "wgmma_accumulator_coords",
    "wgmma_operand_a",
    "wgmma_operand_a_coords",
]

WARP_SIZE = 32


def _require_power_of_two(what: str, value: int) -> None:
    if not is_power_of_two(value):
        raise ValueError(f"{what} must be a power of two, got {value}")


def _chain(*pieces: tuple[str, int, int]) -> list[tuple[int, ...]]:
    """Basis vectors of an input dim from `(dim, count, first_bit)` pieces, lowest input bits first;
    dim -1 gives zero (replicated) bases."""
    vectors = []
    for dim, count, first in pieces:
        for b in range(count):
            vectors.append(
                (1 << (first + b), 0) if dim == 0 else (0, 1 << (first + b)) if dim == 1 else (0, 0)
            )
    return vectors


def _fragment(register, lane, warp, shape: tuple[int, int]) -> LinearLayout:
    bases = {"register": register, "lane": lane, "warp": warp}
    return LinearLayout(bases, {"dim0": shape[0], "dim1": shape[1]})


# ---------------------------------------------------------------- mma.sync m16n8k16


def _warp_grid(rows: int, cols: int, warps_m: int, warps_n: int, tile: tuple[int, int], what: str,
               padded: tuple[bool, bool] = (True, True)):
    """The per-warp tile counts `(tiles_m, tiles_n)` of a (rows x cols) tile split over the warp grid
    into mma tiles of `tile`. An extent marked `padded` that is not a power of two is laid out as the
    next one (a 192-column head as 256: the tiles past 192 are never computed, their registers never
    touched, and the warps' shares follow the padded extent, as `tc_pad_pow2` in tc_cuda.h); the others
    must divide evenly into a power of two of tiles."""
    for name, value in (("warps_m", warps_m), ("warps_n", warps_n)):
        _require_power_of_two(f"{what}: {name}", value)
    counts = []
    for extent, warps, step, name, pad in zip((rows, cols), (warps_m, warps_n), tile, ("rows", "cols"), padded):
        if extent % step:
            raise ValueError(f"{what}: {name}={extent} is not a multiple of the instruction's {step}")
        laid = next_power_of_two(extent) if pad else extent
        if laid % (warps * step):
            raise ValueError(f"{what}: {name}={extent} is not a multiple of {warps} warps x {step}")
        count = laid // (warps * step)
        if not is_power_of_two(count):
            raise ValueError(
                f"{what}: {name}={extent} gives {count} mma tiles of {step} per warp, not a power of two; "
                "pad the tile or choose another warp partition"
            )
        counts.append(count)
    return counts[0], counts[1]


def mma_accumulator(m: int, n: int, warps_m: int, warps_n: int) -> LinearLayout:
    """The accumulator of an (m x n) block tile computed with m16n8k16 by a (warps_m x warps_n) grid.

    Warp w = wm * warps_n + wn owns rows [wm * m/warps_m, ...) and cols [wn * n/warps_n, ...), made of
    tm x tn mma tiles (tm = m/warps_m/16, tn = n/warps_n/8). Lane l holds, in mma tile (mi, ni):

        reg = ((mi * tn + ni) * 4 + half * 2 + b)        half, b in {0, 1}
        row = wm * (m / warps_m) + mi * 16 + half * 8 + l // 4
        col = wn * (n / warps_n) + ni * 8 + (l % 4) * 2 + b

    i.e. c0, c1 at row groupID and c2, c3 at groupID + 8, cols threadID_in_group * 2 + {0, 1}.
    """
    tm, tn = _warp_grid(m, n, warps_m, warps_n, (16, 8), "mma_accumulator")
    register = _chain((1, 1, 0), (0, 1, 3), (1, log2(tn), 3), (0, log2(tm), 4))
    lane = _chain((1, 2, 1), (0, 3, 0))
    mp, np_ = next_power_of_two(m), next_power_of_two(n)
    warp = _chain((1, log2(warps_n), log2(np_ // warps_n)), (0, log2(warps_m), log2(mp // warps_m)))
    return _fragment(register, lane, warp, (mp, np_))


def mma_accumulator_coords(
    thread: int, reg: int, m: int, n: int, warps_m: int, warps_n: int
) -> tuple[int, int]:
    """The (row, col) that register `reg` of thread `thread` holds in `mma_accumulator(m, n, ...)`;
    a plain-Python statement of the formulas, which the tensor-core gemm templates follow."""
    warp, lane = divmod(thread, WARP_SIZE)
    wm, wn = divmod(warp, warps_n)
    m, n = next_power_of_two(m), next_power_of_two(n)
    tn = n // warps_n // 8
    tile, within = divmod(reg, 4)
    mi, ni = divmod(tile, tn)
    half, b = divmod(within, 2)
    row = wm * (m // warps_m) + mi * 16 + half * 8 + lane // 4
    col = wn * (n // warps_n) + ni * 8 + (lane % 4) * 2 + b
    return row, col


def mma_operand_a(m: int, k: int, warps_m: int, warps_n: int) -> LinearLayout:
    """The register-resident A operand (m x k) of m16n8k16, replicated over the warps_n warps that
    share a row block.

    Lane l holds a0..a7 of each 16x16 mma tile (mi, ki), tk = k/16 tiles along k:

        reg = (mi * tk + ki) * 8 + i                      i = a-index 0..7
        row = wm * (m / warps_m) + mi * 16 + l // 4 + 8 * ((i >> 1) & 1)
        col = ki * 16 + (l % 4) * 2 + (i & 1) + 8 * (i >> 2)
    """
    tm, tk = _warp_grid(m, k, warps_m, 1, (16, 16), "mma_operand_a", (True, False))
    m = next_power_of_two(m)
    _require_power_of_two("mma_operand_a: warps_n", warps_n)
    register = _chain((1, 1, 0), (0, 1, 3), (1, 1, 3), (1, log2(tk), 4), (0, log2(tm), 4))
    lane = _chain((1, 2, 1), (0, 3, 0))
    warp = _chain((-1, log2(warps_n), 0), (0, log2(warps_m), log2(m // warps_m)))
    return _fragment(register, lane, warp, (m, k))


def mma_operand_a_coords(
    thread: int, reg: int, m: int, k: int, warps_m: int, warps_n: int
) -> tuple[int, int]:
    """The (row, col) of A that register `reg` of thread `thread` holds in `mma_operand_a`."""
    warp, lane = divmod(thread, WARP_SIZE)
    wm = warp // warps_n
    m = next_power_of_two(m)
    tile, i = divmod(reg, 8)
    mi, ki = divmod(tile, k // 16)
    row = wm * (m // warps_m) + mi * 16 + lane // 4 + 8 * ((i >> 1) & 1)
    col = ki * 16 + (lane % 4) * 2 + (i & 1) + 8 * (i >> 2)
    return row, col


def mma_operand_a_i8(m: int, k: int, warps_m: int, warps_n: int) -> LinearLayout:
    """The register-resident 8-bit integer A operand (m x k) of m16n8k32 (.s8 / .u8), replicated over
    the warps_n warps that share a row block (PTX ISA, "mma.m16n8k32 fragment for matrix A, .s8/.u8").

    Lane l holds a0..a15 of each 16x32 mma tile (mi, ki), tk = k/32 tiles along k, four bytes a 32-bit
    register:

        reg = (mi * tk + ki) * 16 + i                     i = a-index 0..15
        row = wm * (m / warps_m) + mi * 16 + l // 4 + 8 * ((i >> 2) & 1)
        col = ki * 32 + (l % 4) * 4 + (i & 3) + 16 * (i >> 3)

    which is `mma_operand_a` of the tile read as 16-bit pairs (m x k/2) byte for byte: tc::gemm_rs_i8
    runs the 16-bit template on it.
    """
    tm, tk = _warp_grid(m, k, warps_m, 1, (16, 32), "mma_operand_a_i8", (True, False))
    m = next_power_of_two(m)
    _require_power_of_two("mma_operand_a_i8: warps_n", warps_n)
    register = _chain((1, 2, 0), (0, 1, 3), (1, 1, 4), (1, log2(tk), 5), (0, log2(tm), 4))
    lane = _chain((1, 2, 2), (0, 3, 0))
    warp = _chain((-1, log2(warps_n), 0), (0, log2(warps_m), log2(m // warps_m)))
    return _fragment(register, lane, warp, (m, k))


def mma_operand_a_i8_coords(
    thread: int, reg: int, m: int, k: int, warps_m: int, warps_n: int
) -> tuple[int, int]:
    """The (row, col) of A that register `reg` of thread `thread` holds in `mma_operand_a_i8`."""
    warp, lane = divmod(thread, WARP_SIZE)
    wm = warp // warps_n
    m = next_power_of_two(m)
    tile, i = divmod(reg, 16)
    mi, ki = divmod(tile, k // 32)
    row = wm * (m // warps_m) + mi * 16 + lane // 4 + 8 * ((i >> 2) & 1)
    col = ki * 32 + (lane % 4) * 4 + (i & 3) + 16 * (i >> 3)
    return row, col


def mma_operand_a_tf32(m: int, k: int, warps_m: int, warps_n: int) -> LinearLayout:
    """The register-resident float32 A operand (m x k) of m16n8k8 with .tf32 inputs, replicated over the
    warps_n warps that share a row block (PTX ISA, "mma.m16n8k8 fragment for matrix A, .tf32").

    Lane l holds a0..a3 of each 16x8 mma tile (mi, ki), tk = k/8 tiles along k:

        reg = (mi * tk + ki) * 4 + i                      i = a-index 0..3
        row = wm * (m / warps_m) + mi * 16 + l // 4 + 8 * (i & 1)
        col = ki * 8 + l % 4 + 4 * (i >> 1)

    so a thread holds columns t and t + 4 of each 8-column block (t = l % 4): a loop over 4 columns
    `x[i, 4 * c + j]` reads column j of every block of 4 from lane j, whatever c.
    """
    tm, tk = _warp_grid(m, k, warps_m, 1, (16, 8), "mma_operand_a_tf32", (True, False))
    m = next_power_of_two(m)
    _require_power_of_two("mma_operand_a_tf32: warps_n", warps_n)
    register = _chain((0, 1, 3), (1, 1, 2), (1, log2(tk), 3), (0, log2(tm), 4))
    lane = _chain((1, 2, 0), (0, 3, 0))
    warp = _chain((-1, log2(warps_n), 0), (0, log2(warps_m), log2(m // warps_m)))
    return _fragment(register, lane, warp, (m, k))


def mma_operand_a_tf32_coords(
    thread: int, reg: int, m: int, k: int, warps_m: int, warps_n: int
) -> tuple[int, int]:
    """The (row, col) of A that register `reg` of thread `thread` holds in `mma_operand_a_tf32`."""
    warp, lane = divmod(thread, WARP_SIZE)
    wm = warp // warps_n
    m = next_power_of_two(m)
    tile, i = divmod(reg, 4)
    mi, ki = divmod(tile, k // 8)
    row = wm * (m // warps_m) + mi * 16 + lane // 4 + 8 * (i & 1)
    col = ki * 8 + lane % 4 + 4 * (i >> 1)
    return row, col


def mma_operand_b(k: int, n: int, warps_m: int, warps_n: int) -> LinearLayout:
    """The register-resident B operand (k x n, dim0 = k) of m16n8k16, replicated over the warps_m
    warps that share a column block.

    Lane l holds b0..b3 of each 16x8 mma tile (ki, ni), tn = n/warps_n/8 tiles along n:

        reg = (ki * tn + ni) * 4 + i                      i = b-index 0..3
        row = ki * 16 + (l % 4) * 2 + (i & 1) + 8 * (i >> 1)
        col = wn * (n / warps_n) + ni * 8 + l // 4
    """
    tk, tn = _warp_grid(k, n, 1, warps_n, (16, 8), "mma_operand_b", (False, True))
    n = next_power_of_two(n)
    _require_power_of_two("mma_operand_b: warps_m", warps_m)
    register = _chain((0, 1, 0), (0, 1, 3), (1, log2(tn), 3), (0, log2(tk), 4))
    lane = _chain((0, 2, 1), (1, 3, 0))
    warp = _chain((1, log2(warps_n), log2(n // warps_n)), (-1, log2(warps_m), 0))
    return _fragment(register, lane, warp, (k, n))


def mma_operand_b_coords(
    thread: int, reg: int, k: int, n: int, warps_m: int, warps_n: int
) -> tuple[int, int]:
    """The (row, col) of B that register `reg` of thread `thread` holds in `mma_operand_b`."""
    warp, lane = divmod(thread, WARP_SIZE)
    wn = warp % warps_n
    n = next_power_of_two(n)
    tile, i = divmod(reg, 4)
    ki, ni = divmod(tile, n // warps_n // 8)
    row = ki * 16 + (lane % 4) * 2 + (i & 1) + 8 * (i >> 1)
    col = wn * (n // warps_n) + ni * 8 + lane // 4
    return row, col


# ---------------------------------------------------------------- wgmma m64nNk16 (sm_90a)

WARPGROUP = 4  # warps that issue one wgmma together


def wgmma_accumulator(m: int, n: int, groups_m: int, groups_n: int) -> LinearLayout:
    """The f32 accumulator of an (m x n) block tile computed with wgmma m64nNk16 by a
    (groups_m x groups_n) grid of warpgroups (4 consecutive warps each).

    Warpgroup g = gm * groups_n + gn owns rows [gm * m/groups_m, ...) and cols [gn * n/groups_n, ...),
    made of tm = m/groups_m/64 instructions along M; in each, warp w of the group owns 16 rows exactly
    as one mma.sync m16n8 accumulator, its registers ordered by 8-column chunk (PTX ISA, "Register
    fragment: wgmma .m64nNk16 accumulator D"). With tn = n/groups_n/8 chunks per group, lane l of warp
    w holds

        reg = ((mi * tn + ni) * 4 + half * 2 + b)        half, b in {0, 1}
        row = gm * (m / groups_m) + mi * 64 + w * 16 + half * 8 + l // 4
        col = gn * (n / groups_n) + ni * 8 + (l % 4) * 2 + b
    """
    tm, tn = _warp_grid(m, n, groups_m, groups_n, (64, 8), "wgmma_accumulator")
    m, n = next_power_of_two(m), next_power_of_two(n)
    register = _chain((1, 1, 0), (0, 1, 3), (1, log2(tn), 3), (0, log2(tm), 6))
    lane = _chain((1, 2, 1), (0, 3, 0))
    warp = _chain(
        (0, 2, 4), (1, log2(groups_n), log2(n // groups_n)), (0, log2(groups_m), log2(m // groups_m))
    )
    return _fragment(register, lane, warp, (m, n))


def wgmma_accumulator_coords(
    thread: int, reg: int, m: int, n: int, groups_m: int, groups_n: int
) -> tuple[int, int]:
    """The (row, col) that register `reg` of thread `thread` holds in `wgmma_accumulator(m, n, ...)`;
    the formulas of the PTX figure, which the wgmma gemm template follows."""
    warp, lane = divmod(thread, WARP_SIZE)
    group, w = divmod(warp, WARPGROUP)
    gm, gn = divmod(group, groups_n)
    m, n = next_power_of_two(m), next_power_of_two(n)
    tn = n // groups_n // 8
    tile, within = divmod(reg, 4)
    mi, ni = divmod(tile, tn)
    half, b = divmod(within, 2)
    row = gm * (m // groups_m) + mi * 64 + w * 16 + half * 8 + lane // 4
    col = gn * (n // groups_n) + ni * 8 + (lane % 4) * 2 + b
    return row, col


def wgmma_operand_a(m: int, k: int, groups_m: int, groups_n: int) -> LinearLayout:
    """The register-resident A operand (m x k) of wgmma m64nNk16 (the "rs" form), replicated over the
    groups_n warpgroups that share a row block.

    Per k16 step each warp w of a warpgroup holds its 16 rows of the instruction's 64x16 A tile exactly
    as mma.sync m16n8k16 holds A (PTX ISA, "Register fragment: wgmma .m64nNk16 A"): with tk = k/16,
    lane l holds a0..a7 of each (mi, ki) step at

        reg = (mi * tk + ki) * 8 + i                      i = a-index 0..7
        row = gm * (m / groups_m) + mi * 64 + w * 16 + l // 4 + 8 * ((i >> 1) & 1)
        col = ki * 16 + (l % 4) * 2 + (i & 1) + 8 * (i >> 2)

    which is `wgmma_accumulator(m, k, groups_m, 1)` register for register: an accumulator of a wgmma
    gemm with one warpgroup column converts into this operand in-thread (flash attention's P tile).
    """
    tm, tk = _warp_grid(m, k, groups_m, 1, (64, 16), "wgmma_operand_a", (True, False))
    m = next_power_of_two(m)
    _require_power_of_two("wgmma_operand_a: groups_n", groups_n)
    register = _chain((1, 1, 0), (0, 1, 3), (1, 1, 3), (1, log2(tk), 4), (0, log2(tm), 6))
    lane = _chain((1, 2, 1), (0, 3, 0))
    warp = _chain((0, 2, 4), (-1, log2(groups_n), 0), (0, log2(groups_m), log2(m // groups_m)))
    return _fragment(register, lane, warp, (m, k))


def wgmma_operand_a_coords(
    thread: int, reg: int, m: int, k: int, groups_m: int, groups_n: int
) -> tuple[int, int]:
    """The (row, col) of A that register `reg` of thread `thread` holds in `wgmma_operand_a`."""
    warp, lane = divmod(thread, WARP_SIZE)
    group, w = divmod(warp, WARPGROUP)
    gm = group // groups_n
    m = next_power_of_two(m)
    tile, i = divmod(reg, 8)
    mi, ki = divmod(tile, k // 16)
    row = gm * (m // groups_m) + mi * 64 + w * 16 + lane // 4 + 8 * ((i >> 1) & 1)
    col = ki * 16 + (lane % 4) * 2 + (i & 1) + 8 * (i >> 2)
    return row, col
