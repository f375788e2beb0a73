"""Which integer expressions are index arithmetic, and which compute on data.

The language gives integer arithmetic two meanings (docs/language.md, "Integer arithmetic"):

- *index arithmetic*, over constants, loop, block and thread indices, dims and scalar parameters, is
  exact: the compiler proves each value's range and computes it in a type wide enough to hold it
  (`tilecraft/transform/widen.py`), so `bx * 1024 + i < n` means what it says for any sizes;
- arithmetic on *data*, anything that reads a buffer (or a name bound to such a value), wraps around
  at its declared width, like NumPy.

Only index arithmetic is simplified with rules of the integers (`x + 1 > x`), and only index
arithmetic is widened; data arithmetic is printed so that it wraps.
"""

from __future__ import annotations

from collections.abc import Collection

from tilecraft.ir import expr as E

__all__ = ["INDEX_CALLS", "ExactTable"]

# Intrinsics whose integer results index arithmetic may use (swizzles, power-of-two tiles).
INDEX_CALLS = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"})
_COMPOSITES = (E.BinaryOp, E.Not, E.Select, E.Ramp, E.Broadcast)


class ExactTable:
    """Memoized answers to "is this integer expression index arithmetic?".

    `data_vars` are the names bound to data (a `LetStmt` whose value reads a buffer); they count as
    data wherever they appear. The answer depends only on structure, so the memo never goes stale.
    """

    def __init__(self, data_vars: Collection[E.Var] = ()) -> None:
        self.data_vars = set(data_vars)
        self._memo: dict[E.Expr, bool] = {}

    def is_index(self, e: E.Expr) -> bool:
        """True when `e` is index arithmetic (or a comparison or select of it), False for data."""
        found = self._memo.get(e)
        if found is None:
            found = self._memo[e] = self._classify(e)
        return found

    def _classify(self, e: E.Expr) -> bool:
        if not _integral(e):
            return False
        if isinstance(e, E.Var):
            return e not in self.data_vars
        if isinstance(e, E.IntImm):
            return True
        if isinstance(e, E.Cast):
            return _integral(e.value) and self.is_index(e.value)
        if isinstance(e, E.Call):
            return e.op in INDEX_CALLS and all(self.is_index(a) for a in e.args)
        if isinstance(e, _COMPOSITES):
            return all(self.is_index(c) for c in _children(e))
        return False


def _integral(e: E.Expr) -> bool:
    return e.dtype.is_integer or e.dtype.is_bool


def _children(e: E.Expr) -> tuple[E.Expr, ...]:
    if isinstance(e, E.BinaryOp):
        return (e.a, e.b)
    if isinstance(e, E.Not):
        return (e.a,)
    if isinstance(e, E.Select):
        return (e.condition, e.true_value, e.false_value)
    if isinstance(e, E.Ramp):
        return (e.base, e.stride)
    return (e.value,)  # Broadcast
