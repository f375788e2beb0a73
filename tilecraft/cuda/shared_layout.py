"""Layouts of shared-memory tiles: where each element of a tile lives in the block's shared memory."""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.ir import expr as E


@dataclass(frozen=True)
class SharedLayout:
    """A row-major tile whose element offsets pass through a permutation.

    `swizzle16` is the layout tensor-core operands of 16-bit dtypes use (`tc_swizzle16` in the device
    header): within each 128-byte line, the 16-byte chunk index is XOR-ed with the line index (mod 8),
    so the 8 rows an ldmatrix phase reads and the chunks a cp.async phase writes hit distinct banks.
    """

    kind: str = "swizzle16"

    def structural_key(self):
        return ("SharedLayout", self.kind)

    def physical(self, flat: E.Expr) -> E.Expr:
        """The element offset where the element at row-major offset `flat` is stored."""
        line = E.int_call("bitwise_and", E.int_call("shift_right", flat, 6), 7)
        return E.int_call("bitwise_xor", flat, E.int_call("shift_left", line, 3))

    def __repr__(self) -> str:
        return f"SharedLayout({self.kind!r})"


SWIZZLE16 = SharedLayout("swizzle16")
