"""The LDS layout of MFMA operand tiles: row-major with 16-byte granules permuted by an XOR, so that the
reads tc_mfma.h issues and the writes of the copies that fill a tile are free of bank conflicts.

The LDS of gfx90a and gfx942 has 32 banks of 4 bytes (bank = byte address / 4 % 32) and serves one
wavefront instruction in phases, each at most 128 bytes, conflict-free when no two lanes of a phase touch
different dwords of one bank (composable_kernel's "Understanding AMD GPU LDS and Bank Conflicts",
docs/conceptual/ck_tile/hardware/lds_bank_conflicts.rst):

- ds_write_b128: 8 phases of 8 consecutive lanes;
- ds_read_b128: 8 phases of lanes {0-3, 20-23}, {4-7, 16-19}, {8-11, 28-31}, {12-15, 24-27} and the
  same plus 32 (CK's page; measured on MI300 in tingqli/pyhip, tests/bank-conflict/README.md);
- ds_read_b64: 4 phases of 16 consecutive lanes (measured there too);
- 32-bit and narrower accesses: 2 phases of 32 lanes (AMD's OpenCL optimization guide for GCN: "threads
  0 through 31 are checked for conflicts as are threads 32 through 63").

tc_mfma.h reads an operand whose k is contiguous in the stored tile (A, or B transposed) 16 bytes per
lane (8 k of f16/bf16, 16 of fp8: ds_read_b128, two MFMAs' worth), and an operand whose M or N is
contiguous one element per lane and instruction at rows k0 + 8j + i (f16; 16j for fp8), j = lane / 16
(ds_read_u16 / ds_read_u8). The copies write 16 contiguous bytes per lane (ds_write_b128).

The layout: element offset f (row-major, e-byte elements) lies in 16-byte granule f >> g, g = log2(16/e);
its granule index's low 3 bits (its slot in a 128-byte line, which names 4 banks) are XOR-ed with
key(x) = (x ^ (x >> 3 << 1)) & 7, where x = f >> line_shift: the row index for rows of 128 bytes or more
(line_shift = log2 row length), the 128-byte line index for shorter rows (line_shift = log2(128/e)).

- 16-byte reads: a phase takes the same granule of rows r..r+3 and the next granule of rows r+4..r+7 (r
  a multiple of 8 within a 16-row MFMA tile, or lines within one block of 8 lines): key(x) = x % 8 XOR a
  constant there, so the 8 slots are distinct.
- Column reads: a phase takes 32 bytes (f16) or 16 bytes (fp8) of rows k and k+8 (fp8: k+16); their
  keys differ in bits 1-2 (the `x >> 3 << 1` term: x and x+8 differ there even though x % 8 is equal),
  so the two rows' granules land in different slots.
- Copies: 8 consecutive lanes write 128 contiguous bytes of one row, or of one 128-byte line, which
  the XOR permutes within itself.
One key serves both orientations, so a tile read as A by one gemm and as B by another (attention's K,
the conformance kit's shared_tile_read_by_a_128_row_and_a_32_row_gemm) has one layout.
tests/hip/test_lds_banks.py counts the conflicts of every instruction of the gemm shapes the plan makes.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.ir import expr as E
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.nodes import ir_value

GRANULE = 16  # bytes: what one lane of ds_read_b128 / ds_write_b128 moves
LINE = 128  # bytes: what one phase of the LDS serves (32 banks of 4 bytes)
SLOTS = LINE // GRANULE


def log2(n: int) -> int:
    return n.bit_length() - 1


def key(x: int) -> int:
    """The XOR applied to the granule slot of row (or line) `x`; `physical` builds the same in IR."""
    return (x ^ (x >> 3 << 1)) & (SLOTS - 1)


@ir_value
@dataclass(frozen=True)
class LdsLayout:
    """A swizzled LDS tile of `element_bytes`-byte elements whose key is taken from offset bits
    `line_shift` and up (see the module docstring)."""

    element_bytes: int
    line_shift: int

    @property
    def granule_shift(self) -> int:
        return log2(GRANULE // self.element_bytes)

    def structural_key(self):
        return ("LdsLayout", self.element_bytes, self.line_shift)

    def offset(self, flat: int) -> int:
        """The element offset where the element at row-major offset `flat` is stored."""
        return flat ^ (key(flat >> self.line_shift) << self.granule_shift)

    def physical(self, flat: E.Expr) -> E.Expr:
        """`offset` as an index expression: the granule index XOR the key, shifted back, plus the offset
        within the granule (written as a sum so that clang still sees 16 contiguous bytes per granule)."""
        g = self.granule_shift
        x = E.int_call("shift_right", flat, self.line_shift)
        spread = E.int_call("shift_left", E.int_call("shift_right", x, 3), 1)
        k = E.int_call("bitwise_and", E.int_call("bitwise_xor", x, spread), SLOTS - 1)
        granule = E.int_call("bitwise_xor", E.int_call("shift_right", flat, g), k)
        return E.add(E.int_call("shift_left", granule, g), E.int_call("bitwise_and", flat, (1 << g) - 1))

    def physical_at(self, row: E.Expr, col: E.Expr, row_length: int) -> E.Expr:
        """`physical` of the element at (row, col) of a tile with rows of `row_length` elements."""
        return self.physical(E.add(E.mul(row, row_length), col))

    def __repr__(self) -> str:
        return f"LdsLayout(element_bytes={self.element_bytes}, line_shift={self.line_shift})"


def lds_layout(rows: int, row_length: int, element_bytes: int) -> LdsLayout | None:
    """The swizzled layout of a (rows x row_length) tile, or None where it does not apply (row lengths
    that are not powers of two, tiles that are not whole 128-byte lines, elements wider than 2 bytes)."""
    row_bytes = row_length * element_bytes
    if element_bytes not in (1, 2) or row_length & (row_length - 1) or row_bytes < GRANULE:
        return None
    if rows * row_bytes % LINE:
        return None
    line_shift = log2(row_length) if row_bytes >= LINE else log2(LINE // element_bytes)
    return LdsLayout(element_bytes, line_shift)


def operand_layout(buf: Buffer) -> LdsLayout | None:
    """The layout of a whole 2-D shared operand tile of an MFMA gemm."""
    rows, row_length = (E.const_value(d) for d in buf.shape)
    return lds_layout(rows, row_length, buf.dtype.bits // 8)
