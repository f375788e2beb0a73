"""Layouts of shared-memory tiles: where each element of a tile lives in the block's shared memory."""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.ir import expr as E


@dataclass(frozen=True)
class SharedLayout:
    """A row-major tile whose element offsets pass through a permutation.

    `swizzle16` is the layout tensor-core operands of 16-bit dtypes use (`tc_swizzle16<W>` in the
    device header): the 16-byte chunk index within each 64-element segment is XOR-ed with bits
    `line_shift`..`line_shift + 2` of the offset. For rows of a power-of-two length W >= 64 that is the
    row index mod 8 (line_shift = log2 W); for other rows it is the 128-byte line index (line_shift = 6).
    Either way the 8 rows an ldmatrix phase reads and the chunks a cp.async phase writes hit distinct
    bank groups; keying on the line index alone would leave rows of 256 bytes 2-way conflicted.
    """

    kind: str = "swizzle16"
    line_shift: int = 6
    # kind "wgmma" only: the tile's rows and row length, and the swizzle atom's width in elements
    rows: int = 0
    row_length: int = 0
    atom: int = 0

    def structural_key(self):
        return ("SharedLayout", self.kind, self.line_shift, self.rows, self.row_length, self.atom)

    def physical(self, flat: E.Expr) -> E.Expr:
        """The element offset where the element at row-major offset `flat` is stored."""
        if self.kind == "wgmma":
            return self._wgmma_physical(flat)
        line = E.int_call("bitwise_and", E.int_call("shift_right", flat, self.line_shift), 7)
        return E.int_call("bitwise_xor", flat, E.int_call("shift_left", line, 3))

    def offset(self, flat: int) -> int:
        """`physical` on a Python int."""
        if self.kind == "wgmma":
            row, col = divmod(flat, self.row_length)
            linear = ((col // self.atom) * self.rows + row) * self.atom + col % self.atom
            return linear ^ (((linear >> 6) & (self.atom // 8 - 1)) << 3)
        return flat ^ (((flat >> self.line_shift) & 7) << 3)

    def _wgmma_physical(self, flat: E.Expr) -> E.Expr:
        row, col = _divmod(flat, self.row_length)
        column_block, within = _divmod(col, self.atom)
        linear = E.add(E.mul(E.add(E.mul(column_block, self.rows), row), self.atom), within)
        line = E.int_call("bitwise_and", E.int_call("shift_right", linear, 6), self.atom // 8 - 1)
        return E.int_call("bitwise_xor", linear, E.int_call("shift_left", line, 3))

    @property
    def swizzle_bytes(self) -> int:
        """The swizzle width of a "wgmma" layout in bytes (16-bit elements): 128, 64 or 32."""
        return self.atom * 2

    def __repr__(self) -> str:
        if self.kind == "wgmma":
            return f"SharedLayout('wgmma', rows={self.rows}, row_length={self.row_length}, atom={self.atom})"
        return f"SharedLayout({self.kind!r}, line_shift={self.line_shift})"


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


def swizzle16(row_length: int) -> SharedLayout:
    """The swizzled layout of a 16-bit tensor-core operand tile whose rows hold `row_length` elements."""
    return SharedLayout("swizzle16", swizzle16_line_shift(row_length))


WGMMA_ATOMS = (64, 32, 16)  # elements of a 128-, 64- and 32-byte swizzle row of a 16-bit tile


def wgmma_atom(extent: int) -> int | None:
    """The widest swizzle row (in 16-bit elements) that divides `extent`: 64, 32 or 16; None if none."""
    return next((a for a in WGMMA_ATOMS if extent % a == 0), None)


def wgmma_operand(rows: int, row_length: int, atom: int) -> SharedLayout:
    """The canonical layout wgmma reads a 16-bit (rows x row_length) operand tile in, with the
    `atom`-element (2 * atom bytes) swizzle.

    The row-major tile is cut into column blocks of `atom` elements, stored one after another; within a
    block, row r occupies `atom` contiguous elements at r * atom, and the 16-byte chunk index within each
    line of 128 bytes is XOR-ed with bits 7.. of the byte offset (Swizzle<3,4,3>, <2,4,3>, <1,4,3> for
    128, 64, 32 bytes). That is the PTX ISA's canonical K-major layout when rows are M or N and the row is
    K, and its canonical MN-major layout when rows are K: 8-row groups lie `8 * atom` elements apart
    (the descriptor's stride byte offset) and column blocks `rows * atom` apart (its leading byte offset
    for MN-major). The hardware swizzles absolute shared addresses, so the tile starts on a multiple of
    `8 * atom * 2` bytes (the plan aligns wgmma operands to 1024).
    """
    if atom not in WGMMA_ATOMS or row_length % atom or rows % 8:
        raise ValueError(f"no wgmma layout for a {rows} x {row_length} tile with {atom}-element atoms")
    return SharedLayout("wgmma", rows=rows, row_length=row_length, atom=atom)
