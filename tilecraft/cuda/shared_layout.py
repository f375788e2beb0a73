"""Layouts of shared-memory tiles: where each element of a tile lives in the block's shared memory."""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.ir import expr as E
from tilecraft.ir.nodes import ir_value


@ir_value
@dataclass(frozen=True)
class SharedLayout:
    """A row-major tile whose element offsets pass through a permutation.

    `swizzle16` is the layout tensor-core operands of 16-bit dtypes use (`tc_swizzle16<W>` in the
    device header): the 16-byte chunk index within each 64-element segment is XOR-ed with bits
    `line_shift`..`line_shift + 2` of the offset (8-bit integer operands, `element_bytes` 1, take the
    layout of their bytes read as 16-bit pairs). For rows of a power-of-two length W >= 64 that is the
    row index mod 8 (line_shift = log2 W); for other rows it is the 128-byte line index (line_shift = 6).
    Either way the 8 rows an ldmatrix phase reads and the chunks a cp.async phase writes hit distinct
    bank groups; keying on the line index alone would leave rows of 256 bytes 2-way conflicted.

    `xor_rows` is the layout of a 32-bit operand tile that a per-thread FMA gemm reads along its rows
    (A (M, K), B (N, K)), `row_length` a multiple of 32: the lanes of a warp read one k of several rows
    at once, which a row length of a multiple of 32 elements puts all on one bank; the 16-byte chunk
    index within each 128-byte line is XOR-ed with a hash of the row (`xor_rows_mask`), so up to 8
    rows spaced by powers of two (1, 2, 4, 8) fall on 8 different bank groups.

    `swizzle32` is the layout of float32 operand tiles of TF32 gemms (`tc_swizzle32<W>`, W =
    `row_length`): the 16-byte chunk (4 elements) index within each 128-byte line is XOR-ed with a mask
    of the row index mod 8 (W a power of two >= 32) or of the line index (other W), see
    `swizzle32_mask`.
    """

    kind: str = "swizzle16"
    line_shift: int = 6
    # kind "wgmma" only: the tile's rows and row length, the swizzle atom's width in elements, and the
    # element size (2: float16/bfloat16, 1: float8)
    rows: int = 0
    row_length: int = 0
    atom: int = 0
    element_bytes: int = 2

    def structural_key(self):
        return ("SharedLayout", self.kind, self.line_shift, self.rows, self.row_length, self.atom,
                self.element_bytes)  # fmt: skip

    def physical(self, flat: E.Expr) -> E.Expr:
        """The element offset where the element at row-major offset `flat` is stored."""
        if self.kind == "wgmma":
            return self._wgmma_physical(flat)
        if self.kind == "xor_rows":
            row = _divmod(flat, self.row_length)[0]
            return E.int_call("bitwise_xor", flat, E.int_call("shift_left", _row_hash(row), 2))
        if self.kind == "swizzle32":
            line = E.int_call("bitwise_and", E.int_call("shift_right", flat, self.line_shift), 7)
            return E.int_call(
                "bitwise_xor", flat, E.int_call("shift_left", _mask32(self.row_length, line), 2)
            )
        line = E.int_call("bitwise_and", E.int_call("shift_right", flat, self.line_shift), 7)
        return E.int_call("bitwise_xor", flat, E.int_call("shift_left", line, self._chunk_shift))

    @property
    def _chunk_shift(self) -> int:
        """log2 of the elements of a 16-byte chunk (a "swizzle16" tile of 8-bit integers has 16)."""
        return (16 // self.element_bytes).bit_length() - 1

    def physical_at(self, row: E.Expr, col: E.Expr, row_length: int) -> E.Expr:
        """`physical` of the element at (row, col) of a tile with rows of `row_length` elements; an
        `xor_rows` tile XORs the column with its row's mask, which a loop over k keeps invariant."""
        keyed_on_row = row_length == 1 << self.line_shift  # the mask keys on the row, not on its lines
        if self.kind == "xor_rows":
            mask = E.int_call("shift_left", _row_hash(row), 2)
        elif self.kind == "swizzle16" and keyed_on_row:
            mask = E.int_call("shift_left", E.int_call("bitwise_and", row, 7), self._chunk_shift)
        elif self.kind == "swizzle32" and keyed_on_row:
            mask = E.int_call("shift_left", _mask32(row_length, E.int_call("bitwise_and", row, 7)), 2)
        else:
            return self.physical(E.add(E.mul(row, row_length), col))
        return E.add(E.mul(row, row_length), E.int_call("bitwise_xor", col, mask))

    def offset(self, flat: int) -> int:
        """`physical` on a Python int."""
        if self.kind == "wgmma":
            row, col = divmod(flat, self.row_length)
            linear = ((col // self.atom) * self.rows + row) * self.atom + col % self.atom
            line_shift, chunk_shift, mask = self._swizzle_bits()
            return linear ^ (((linear >> line_shift) & mask) << chunk_shift)
        if self.kind == "xor_rows":
            return flat ^ (xor_rows_mask(flat // self.row_length) << 2)
        if self.kind == "swizzle32":
            return flat ^ (swizzle32_mask(self.row_length, (flat >> self.line_shift) & 7) << 2)
        return flat ^ (((flat >> self.line_shift) & 7) << self._chunk_shift)

    def _swizzle_bits(self) -> tuple[int, int, int]:
        """(log2 of the elements of a 128-byte line, log2 of those of a 16-byte chunk, the mask of the
        line bits XOR-ed into the chunk index): the swizzle works on bytes, the offsets count elements."""
        per_line = (128 // self.element_bytes).bit_length() - 1
        per_chunk = (16 // self.element_bytes).bit_length() - 1
        return per_line, per_chunk, self.swizzle_bytes // 16 - 1

    def _wgmma_physical(self, flat: E.Expr) -> E.Expr:
        row, col = _divmod(flat, self.row_length)
        column_block, within = _divmod(col, self.atom)
        linear = E.add(E.mul(E.add(E.mul(column_block, self.rows), row), self.atom), within)
        line_shift, chunk_shift, mask = self._swizzle_bits()
        line = E.int_call("bitwise_and", E.int_call("shift_right", linear, line_shift), mask)
        return E.int_call("bitwise_xor", linear, E.int_call("shift_left", line, chunk_shift))

    @property
    def swizzle_bytes(self) -> int:
        """The swizzle width of a "wgmma" layout in bytes: 128, 64 or 32."""
        return self.atom * self.element_bytes

    def __repr__(self) -> str:
        if self.kind == "wgmma":
            size = "" if self.element_bytes == 2 else f", element_bytes={self.element_bytes}"
            return f"SharedLayout('wgmma', rows={self.rows}, row_length={self.row_length}, atom={self.atom}{size})"
        if self.kind in ("swizzle32", "xor_rows"):
            return f"SharedLayout({self.kind!r}, row_length={self.row_length})"
        size = "" if self.element_bytes == 2 else f", element_bytes={self.element_bytes}"
        return f"SharedLayout({self.kind!r}, line_shift={self.line_shift}{size})"


def _divmod(value: E.Expr, divisor: int) -> tuple[E.Expr, E.Expr]:
    """Quotient and remainder of a non-negative offset: shifts and masks for a power of two."""
    if divisor & (divisor - 1):
        return E.floordiv(value, divisor), E.floormod(value, divisor)
    shift = divisor.bit_length() - 1
    return E.int_call("shift_right", value, shift), E.int_call("bitwise_and", value, divisor - 1)


def swizzle16_line_shift(row_length: int) -> int:
    """What `tc_swizzle16<W>` in tc_cuda.h computes for W = row_length; keep the two in step."""
    if row_length >= 64 and row_length & (row_length - 1) == 0:
        return row_length.bit_length() - 1
    return 6


def swizzle16(row_length: int, element_bytes: int = 2) -> SharedLayout:
    """The swizzled layout of a 16-bit tensor-core operand tile whose rows hold `row_length` elements;
    with `element_bytes` 1, of an 8-bit integer tile that tc::gemm_ss_i8 reads as a 16-bit one of
    `row_length / 2` columns (the same permutation of 16-byte chunks, offsets counted in bytes)."""
    if element_bytes == 1:
        return SharedLayout("swizzle16", swizzle16_line_shift(row_length // 2) + 1, element_bytes=1)
    return SharedLayout("swizzle16", swizzle16_line_shift(row_length))


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def swizzle32_line_shift(row_length: int) -> int:
    """What `tc_swizzle32_shift(W)` in tc_cuda.h computes: log2 W for a power of two W >= 32 (the mask
    keys on the row), else 5 (the 128-byte line of float32 elements)."""
    if row_length >= 32 and _is_power_of_two(row_length):
        return row_length.bit_length() - 1
    return 5


def swizzle32_mask(row_length: int, line: int) -> int:
    """`tc_swizzle32_mask(W, line)`: the chunk mask of row (or line) `line` mod 8. For W >= 32 the 3 bits
    rotated left by one (8 distinct masks for the 8 rows a K-major read touches, and masks 0, 2, 4, 6 for
    the 4 rows an MN-major read touches, whose 2 chunks per row then fill all 8); for W = 16 (two rows a
    line) the line's 2 low bits reversed; for W = 8 (four rows a line) the line itself."""
    if row_length == 16:
        return ((line & 1) << 1) | ((line >> 1) & 1) | (line & 4)
    if row_length == 8:
        return line
    return ((line << 1) | (line >> 2)) & 7


def _mask32(row_length: int, line: E.Expr) -> E.Expr:
    """`swizzle32_mask` of an index expression."""

    def bits(value: E.Expr, shift: int, mask: int) -> E.Expr:
        moved = E.int_call("shift_left", value, shift) if shift > 0 else value
        moved = E.int_call("shift_right", value, -shift) if shift < 0 else moved
        return E.int_call("bitwise_and", moved, mask)

    if row_length == 8:
        return line
    if row_length == 16:
        return E.int_call(
            "bitwise_or", E.int_call("bitwise_or", bits(line, 1, 2), bits(line, -1, 1)), bits(line, 0, 4)
        )
    return E.int_call("bitwise_or", bits(line, 1, 6), bits(line, -2, 1))


def xor_rows_mask(row: int) -> int:
    """The chunk mask of `row` in an `xor_rows` layout: its bits folded 3 at a time (distinct for 8
    consecutive rows, and for 8 rows spaced 2, 4, 8 or 16 apart)."""
    return (row ^ (row >> 3) ^ (row >> 6)) & 7


def _row_hash(row: E.Expr) -> E.Expr:
    """`xor_rows_mask` of an index expression."""
    folded = E.int_call("bitwise_xor", row, E.int_call("shift_right", row, 3))
    folded = E.int_call("bitwise_xor", folded, E.int_call("shift_right", row, 6))
    return E.int_call("bitwise_and", folded, 7)


def xor_rows(row_length: int) -> SharedLayout | None:
    """The `xor_rows` layout of a 32-bit tile whose rows hold `row_length` elements, read along its rows
    by a per-thread FMA gemm; None where the rows are not a multiple of 32 elements (they then do not
    all start on one bank, and a chunk XOR could cross a row's end)."""
    if row_length % 32:
        return None
    return SharedLayout("xor_rows", row_length=row_length, element_bytes=4)


def swizzle32(row_length: int) -> SharedLayout:
    """The swizzled layout of a float32 operand tile of a TF32 gemm whose rows hold `row_length` elements."""
    return SharedLayout("swizzle32", swizzle32_line_shift(row_length), row_length=row_length, element_bytes=4)


WGMMA_ATOMS = (64, 32, 16)  # elements of a 128-, 64- and 32-byte swizzle row of a 16-bit tile
SWIZZLE_ROWS = (128, 64, 32)  # bytes


def wgmma_atom(extent: int, element_bytes: int = 2) -> int | None:
    """The widest swizzle row (in elements of `element_bytes`) that divides `extent`; None if none
    (16-bit: 64, 32 or 16; 8-bit: 128, 64 or 32)."""
    return next((b // element_bytes for b in SWIZZLE_ROWS if extent % (b // element_bytes) == 0), None)


def wgmma_operand(rows: int, row_length: int, atom: int, element_bytes: int = 2) -> SharedLayout:
    """The canonical layout wgmma reads a (rows x row_length) operand tile of `element_bytes`-byte
    elements in (16-bit, or float8 K-major), with the `atom`-element (atom * element_bytes bytes) swizzle.

    The row-major tile is cut into column blocks of `atom` elements, stored one after another; within a
    block, row r occupies `atom` contiguous elements at r * atom, and the 16-byte chunk index within each
    line of 128 bytes is XOR-ed with bits 7.. of the byte offset (Swizzle<3,4,3>, <2,4,3>, <1,4,3> for
    128, 64, 32 bytes). That is the PTX ISA's canonical K-major layout when rows are M or N and the row is
    K, and its canonical MN-major layout when rows are K: 8-row groups lie `8 * atom` elements apart
    (the descriptor's stride byte offset) and column blocks `rows * atom` apart (its leading byte offset
    for MN-major). The hardware swizzles absolute shared addresses, so the tile starts on a multiple of
    `8 * atom * 2` bytes (the plan aligns wgmma operands to 1024).
    """
    if atom * element_bytes not in SWIZZLE_ROWS or row_length % atom or rows % 8:
        raise ValueError(f"no wgmma layout for a {rows} x {row_length} tile with {atom}-element atoms")
    return SharedLayout("wgmma", rows=rows, row_length=row_length, atom=atom, element_bytes=element_bytes)
