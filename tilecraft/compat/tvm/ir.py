"""TVM's `tvm.ir`: `Range` (tilecraft's, with TVM's constructors). TVM's IR modules, operator registry
and structural equality are refused (`tilecraft.compat.tvm.refused`)."""

from __future__ import annotations

from tilecraft.compat.tvm._mapped import _StandsFor, refusing
from tilecraft.ir import expr as E
from tilecraft.ir.buffer import Range as IRRange


def _range(begin, end=None, span=None) -> IRRange:
    """TVM's `Range(begin, end)` is [begin, end); `Range(n)` is [0, n)."""
    if end is None:
        begin, end = 0, begin
    return IRRange.from_bounds(begin, end)


def _from_min_extent(min_value, extent, span=None) -> IRRange:
    return IRRange(E.convert(min_value), E.convert(extent))


Range = _StandsFor(
    "Range",
    (),
    {
        "ir_class": IRRange,
        "__new__": lambda cls, begin, end=None, span=None: _range(begin, end),
        "__module__": "tvm.ir",
        "__doc__": "TVM's `tvm.ir.Range`: tilecraft's Range (min, extent); Range(begin, end) is [begin, end)",
        "from_min_extent": staticmethod(_from_min_extent),
    },
)

__all__ = ["Range"]
__getattr__ = refusing("tvm.ir")
