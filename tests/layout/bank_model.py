"""A model of NVIDIA shared-memory banks, the oracle tests use to prove a shared layout conflict-free.

Layouts are linear layouts ("row", "col") -> ("offset",), offsets in elements. `row_major` and the
classic ldmatrix swizzle (`swizzled`: the 16-byte chunks of each row permuted by XOR with row bits, so
that the eight 16-byte rows one `ldmatrix` phase reads, and the 16-byte `cp.async` writes of a quarter
warp, land in eight different bank groups) are reference layouts; `bank_conflicts` counts what a warp
access costs under a layout. It is test code: the compiler never asks it anything (it lived in
tilecraft/layout until nothing but tests used it).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.layout.linear import LinearLayout, log2, next_power_of_two

BANKS = 32
BANK_BYTES = 4
CHUNK_BYTES = 16
SWIZZLE_ROWS = 8  # rows of 16-byte chunks whose reads must hit distinct bank groups (128 bytes / 16)


def row_major(rows: int, cols: int) -> LinearLayout:
    """offset = row * C + col, with R x C the tile padded to powers of two."""
    rows_p, cols_p = next_power_of_two(rows), next_power_of_two(cols)
    col_bases = [(1 << b,) for b in range(log2(cols_p))]
    row_bases = [(cols_p << b,) for b in range(log2(rows_p))]
    return LinearLayout({"row": row_bases, "col": col_bases}, {"offset": rows_p * cols_p})


def swizzled(rows: int, cols: int, elem_bytes: int) -> LinearLayout:
    """Row-major with the 16-byte chunk index XOR-ed by row bits: the classic ldmatrix swizzle.

    With C the padded row length, chunk = col / (16 / elem_bytes) and s = min(3, log2(chunks per
    row)), the low s bits of the chunk index are XOR-ed with row bits 3-s .. 2:

        offset = row * C + ((chunk ^ ((row >> (3 - s)) % 2**s)) * (16 / elem_bytes)) + col % (16 / elem_bytes)

    For rows of 128 bytes or more (s = 3) that is `chunk ^ (row % 8)` inside each 128-byte segment.
    Eight consecutive rows then put any one logical chunk into eight different 16-byte bank groups.
    With 64-byte rows two rows share a 128-byte line and row bit 0 already picks its half, so only
    row bits 1..2 are needed (s = 2), and so on. Chunks stay whole, so 16-byte vector accesses work.
    """
    if elem_bytes not in (1, 2, 4, 8, 16):
        raise ValueError(f"elem_bytes must be 1, 2, 4, 8 or 16, got {elem_bytes}")
    base = row_major(rows, cols)
    cols_p = base.in_size("col")
    per_chunk = CHUNK_BYTES // elem_bytes
    chunks = cols_p // per_chunk
    s = min(log2(SWIZZLE_ROWS), log2(chunks)) if chunks >= 1 else 0
    row_bases = list(base.bases[0][1])
    for j in range(s):
        row_bit = log2(SWIZZLE_ROWS) - s + j
        if row_bit < len(row_bases):
            row_bases[row_bit] = (row_bases[row_bit][0] ^ (per_chunk << j),)
    return LinearLayout({"row": row_bases, "col": base.bases[1][1]}, base.out_dims)


# ---------------------------------------------------------------- bank conflicts


@dataclass(frozen=True)
class Access:
    """One warp-wide shared-memory instruction: thread t accesses `elems` consecutive elements of a
    row starting at `coords[t]` = (row, col), each `elem_bytes` wide."""

    coords: tuple[tuple[int, int], ...]
    elems: int
    elem_bytes: int

    @property
    def bytes_per_thread(self) -> int:
        return self.elems * self.elem_bytes

    @property
    def threads_per_phase(self) -> int:
        """Threads served together: 32 for <= 4-byte accesses, 16 for 8 bytes, 8 for 16 bytes."""
        return BANKS * BANK_BYTES // max(self.bytes_per_thread, BANK_BYTES)


def ldmatrix_access(row0: int, col0: int, elem_bytes: int = 2, matrices: int = 4) -> Access:
    """`ldmatrix.x{matrices}` reading a (8 * 2) x (8 * matrices / 2) block of 8x8 b16 matrices at
    (row0, col0): thread t supplies the address of row t % 8 of matrix t // 8; matrices go down the
    rows first (x4: rows 0-7, rows 8-15, then the same rows 16 bytes to the right)."""
    per_row = CHUNK_BYTES // elem_bytes
    coords = []
    for t in range(8 * matrices):
        matrix, r = divmod(t, 8)
        down, right = (matrix % 2, matrix // 2) if matrices > 1 else (0, 0)
        coords.append((row0 + 8 * down + r, col0 + per_row * right))
    return Access(tuple(coords), per_row, elem_bytes)


def cp_async_access(cols: int, elem_bytes: int, warp: int = 0) -> Access:
    """16-byte `cp.async` writes of one warp filling a row-major tile of `cols` columns: thread t of
    warp w writes chunk w * 32 + t of the flattened tile."""
    per_chunk = CHUNK_BYTES // elem_bytes
    coords = tuple(divmod((warp * 32 + t) * per_chunk, cols) for t in range(32))
    return Access(coords, per_chunk, elem_bytes)


def row_access(row: int, elem_bytes: int = 4, col0: int = 0) -> Access:
    """32 threads each reading one element of a row (a coalesced scalar access)."""
    return Access(tuple((row, col0 + t) for t in range(32)), 1, elem_bytes)


def column_access(col: int, elem_bytes: int = 4, row0: int = 0) -> Access:
    """32 threads each reading one element of a column (the worst case of a row-major tile)."""
    return Access(tuple((row0 + t, col) for t in range(32)), 1, elem_bytes)


def bank_conflicts(layout: LinearLayout, access: Access) -> int:
    """The extra shared-memory wavefronts `access` costs under `layout` (0 = conflict-free).

    Threads are served in phases (`Access.threads_per_phase`); in a phase, each of the 32 four-byte
    banks delivers one distinct word per wavefront (threads reading the same word share it), so a
    phase costs as many wavefronts as its busiest bank has distinct words. Raises ValueError when a
    thread's elements are not contiguous in memory (the access could not be one vector instruction).
    """
    phase = access.threads_per_phase
    extra = 0
    for start in range(0, len(access.coords), phase):
        words_by_bank: dict[int, set[int]] = {}
        for row, col in access.coords[start : start + phase]:
            for word in _words(layout, access, row, col):
                words_by_bank.setdefault(word % BANKS, set()).add(word)
        extra += max((len(words) for words in words_by_bank.values()), default=1) - 1
    return extra


def _words(layout: LinearLayout, access: Access, row: int, col: int) -> range:
    offsets = [layout.apply(row=row, col=col + e)["offset"] for e in range(access.elems)]
    if offsets != list(range(offsets[0], offsets[0] + access.elems)):
        raise ValueError(f"elements ({row}, {col}..{col + access.elems - 1}) are not contiguous: {offsets}")
    first = offsets[0] * access.elem_bytes
    return range(first // BANK_BYTES, (first + access.bytes_per_thread - 1) // BANK_BYTES + 1)
