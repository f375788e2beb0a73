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

    def structural_key(self):
        return ("SharedLayout", self.kind, self.line_shift)

    def physical(self, flat: E.Expr) -> E.Expr:
        """The element offset where the element at row-major offset `flat` is stored."""
        line = E.int_call("bitwise_and", E.int_call("shift_right", flat, self.line_shift), 7)
        return E.int_call("bitwise_xor", flat, E.int_call("shift_left", line, 3))

    def offset(self, flat: int) -> int:
        """`physical` on a Python int."""
        return flat ^ (((flat >> self.line_shift) & 7) << 3)

    def __repr__(self) -> str:
        return f"SharedLayout({self.kind!r}, line_shift={self.line_shift})"


def swizzle16_line_shift(row_length: int) -> int:
    """What `tc_swizzle16<W>` in tc_cuda.h computes for W = row_length; keep the two in step."""
    if row_length >= 64 and row_length & (row_length - 1) == 0:
        return row_length.bit_length() - 1
    return 6


def swizzle16(row_length: int) -> SharedLayout:
    """The swizzled layout of a 16-bit tensor-core operand tile whose rows hold `row_length` elements."""
    return SharedLayout("swizzle16", swizzle16_line_shift(row_length))
