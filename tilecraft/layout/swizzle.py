"""TileLang's swizzled shared layouts (`tilelang.layout.make_swizzled_layout` and the bank variants).

`T.annotate_layout({A_shared: make_swizzled_layout(A_shared)})` asks that a shared buffer be swizzled.
Here the request is a hint: each target chooses its shared layouts itself (a GPU target swizzles the
tiles its tensor-core instructions read; targets without swizzles have nothing to choose), so
`T.annotate_layout` accepts a `SwizzledLayout` and adds nothing to the kernel (docs/compat.md). The object still describes its layout exactly
(`linear()`), so it can be inspected, drawn and checked for bank conflicts (the tests do).

The swizzle is TileLang's (CUTLASS's `Swizzle<s, 4, 3>` on byte offsets): within every 128-byte line of
the row-major tile, the low `s` bits of the 16-byte chunk index are XOR-ed with the low `s` bits of the
line index; s = 3, 2, 1 for the full (128-byte), half (64-byte) and quarter (32-byte) bank variants.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.expr import BufferLoad, const_value
from tilecraft.ir.nodes import ir_value
from tilecraft.layout.linear import LinearLayout, log2, next_power_of_two

CHUNK_BYTES = 16
LINE_BYTES = 128
SHARED_SCOPES = ("shared", "shared.dyn")
_BANK_BYTES = {"full": 128, "half": 64, "quarter": 32}


@ir_value
@dataclass(frozen=True, eq=False)
class SwizzledLayout:
    """A request that `buffer`, a shared buffer, be stored with a `swizzle_bytes` swizzle (32, 64, 128;
    0 is row-major, for rows narrower than 32 bytes)."""

    buffer: Buffer
    swizzle_bytes: int
    k_major: bool = True
    allow_pad: bool = True

    @property
    def tile(self) -> tuple[int, int]:
        """(rows, cols) of the trailing 2-D tile the swizzle permutes (leading dims are stacked tiles)."""
        dims = [const_value(d) for d in self.buffer.shape]
        return (dims[-2], dims[-1]) if len(dims) >= 2 else (1, dims[-1])

    def linear(self) -> LinearLayout:
        """The tile's layout, ("row", "col") -> ("offset",) in elements, rows padded to a power of two."""
        rows, cols = (next_power_of_two(n) for n in self.tile)
        elem_bytes = max(1, self.buffer.dtype.bits // 8)
        bits = log2(self.swizzle_bytes // CHUNK_BYTES) if self.swizzle_bytes else 0

        def physical(offset: int) -> int:
            byte = offset * elem_bytes
            line = (byte // LINE_BYTES) % (1 << bits)
            return (byte ^ (line * CHUNK_BYTES)) // elem_bytes

        col_bases = [(physical(1 << b),) for b in range(log2(cols))]
        row_bases = [(physical(cols << b),) for b in range(log2(rows))]
        return LinearLayout({"row": row_bases, "col": col_bases}, {"offset": rows * cols})

    def structural_key(self) -> tuple:
        return ("SwizzledLayout", self.buffer.name, self.swizzle_bytes, self.k_major, self.allow_pad)

    def __repr__(self) -> str:
        return f"SwizzledLayout({self.buffer.name}, swizzle_bytes={self.swizzle_bytes})"


def _shared_buffer(value: object, what: str) -> Buffer:
    buf = value.buffer if isinstance(value, (BufferRegion, BufferLoad)) else value
    if not isinstance(buf, Buffer):
        raise TypeError(f"{what} takes a shared buffer (from T.alloc_shared), got {type(value).__name__}")
    if buf.scope not in SHARED_SCOPES:
        raise ValueError(
            f"{what}: buffer {buf.name} is in {buf.scope!r} memory; only shared buffers are swizzled"
        )
    if any(const_value(d) is None for d in buf.shape):
        raise ValueError(f"{what}: buffer {buf.name} has a symbolic shape; a swizzle needs a constant tile")
    if buf.dtype.bits > CHUNK_BYTES * 8:
        raise ValueError(f"{what}: {buf.dtype} elements are wider than a 16-byte chunk")
    return buf


def _make(buffer: object, what: str, bank: str | None, k_major: bool = True, allow_pad: bool = True):
    buf = _shared_buffer(buffer, what)
    if bank is not None:
        return SwizzledLayout(buf, _BANK_BYTES[bank], k_major, allow_pad)
    row_bytes = next_power_of_two(const_value(buf.shape[-1])) * max(1, buf.dtype.bits // 8)
    fitting = [b for b in _BANK_BYTES.values() if b <= row_bytes]
    return SwizzledLayout(buf, max(fitting, default=0), k_major, allow_pad)


def make_swizzled_layout(buffer: object, k_major: bool = True, allow_pad: bool = True) -> SwizzledLayout:
    """The widest swizzle a row of `buffer` spans (128, 64 or 32 bytes; rows under 32 bytes stay
    row-major). `k_major` and `allow_pad` are recorded; the layout is of the buffer as stored."""
    return _make(buffer, "make_swizzled_layout", None, k_major, allow_pad)


def make_full_bank_swizzled_layout(buffer: object) -> SwizzledLayout:
    """A 128-byte swizzle (8 chunks of 16 bytes per line)."""
    return _make(buffer, "make_full_bank_swizzled_layout", "full")


def make_half_bank_swizzled_layout(buffer: object) -> SwizzledLayout:
    """A 64-byte swizzle (4 chunks of 16 bytes)."""
    return _make(buffer, "make_half_bank_swizzled_layout", "half")


def make_quarter_bank_swizzled_layout(buffer: object) -> SwizzledLayout:
    """A 32-byte swizzle (2 chunks of 16 bytes)."""
    return _make(buffer, "make_quarter_bank_swizzled_layout", "quarter")
