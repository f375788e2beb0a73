"""`Layout` (logical index -> offset) and `Fragment` (logical index -> thread, local index).

Both are defined by index expressions over placeholder variables, one per logical dimension, so a
swizzle or an instruction's register mapping is an ordinary expression that passes can substitute.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

from tilecraft.ir import dtype as dt
from tilecraft.ir.expr import Expr, Var, convert
from tilecraft.ir.visitor import substitute

_PLACEHOLDER_NAMES = "ijklmn"


def _placeholders(ndim: int) -> tuple[Var, ...]:
    names = _PLACEHOLDER_NAMES if ndim <= len(_PLACEHOLDER_NAMES) else [f"i{k}" for k in range(ndim)]
    return tuple(Var(dt.int32, names[k]) for k in range(ndim))


def _call_with_vars(fn: Callable, nargs: int, variables: tuple[Var, ...]) -> tuple[Expr, ...]:
    result = fn(*variables[:nargs])
    result = result if isinstance(result, (tuple, list)) else (result,)
    return tuple(convert(r) for r in result)


def _shape(shape: Sequence[int] | int) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return tuple(int(s) for s in shape)


class Layout:
    """Maps a logical index of a buffer of `shape` to an index into its storage.

    `T.Layout((128, 32), lambda i, j: (i, j ^ ((i % 8) * 4)))` — the forward function returns one or
    more index expressions of the storage.
    """

    def __init__(self, shape, forward: Callable | Sequence[Expr], variables: tuple[Var, ...] | None = None):
        self.shape = _shape(shape)
        self.vars = variables or _placeholders(len(self.shape))
        if callable(forward):
            forward = _call_with_vars(forward, len(inspect.signature(forward).parameters), self.vars)
        self.index = tuple(convert(e) for e in forward)

    def map(self, indices: Sequence) -> tuple[Expr, ...]:
        """The storage index of the logical element `indices`."""
        mapping = {v: convert(i) for v, i in zip(self.vars, indices)}
        return tuple(substitute(e, mapping) for e in self.index)

    def to_linear(self):
        """This layout as a `LinearLayout` ("dim0", ...) -> ("offset",); raises ValueError when the
        shape is not a power of two or the index is not linear over GF(2) (see layout/fragment.py)."""
        from tilecraft.layout.fragment import linear_from_layout

        return linear_from_layout(self)

    def structural_key(self):
        return ("Layout", self.shape, self.vars, self.index)

    def __repr__(self) -> str:
        args = ", ".join(v.name for v in self.vars)
        body = ", ".join(str(e) for e in self.index)
        return f"T.Layout({self.shape}, lambda {args}: ({body},))"


class Fragment:
    """Maps a logical index of a fragment to the thread that holds it and its local index there.

    `replicate` counts the threads holding each element (after a row reduction, every thread that
    shared the row holds the result); `forward_thread` may then depend on a replica variable `rep`.
    """

    def __init__(
        self,
        shape,
        forward_thread_fn: Callable | Expr | None = None,
        forward_index_fn: Callable | Sequence[Expr] | None = None,
        replicate: int = 1,
        variables: tuple[Var, ...] | None = None,
        replica_var: Var | None = None,
    ):
        self.shape = _shape(shape)
        self.vars = variables or _placeholders(len(self.shape))
        self.replicate = int(replicate)
        self.replica_var = replica_var or Var(dt.int32, "rep")
        self.thread = self._thread_expr(forward_thread_fn)
        if forward_index_fn is None:
            forward_index_fn = (convert(0),)
        if callable(forward_index_fn):
            forward_index_fn = _call_with_vars(forward_index_fn, len(self.vars), self.vars)
        self.index = tuple(convert(e) for e in forward_index_fn)

    def _thread_expr(self, fn) -> Expr:
        if fn is None:
            return convert(0)
        if not callable(fn):
            return convert(fn)
        nargs = len(inspect.signature(fn).parameters)
        args = (*self.vars, self.replica_var)[:nargs]
        return convert(fn(*args))

    def to_linear(self, width: int):
        """This fragment as a `LinearLayout` ("register", "lane", "warp") -> ("dim0", ...), its threads
        in groups of `width` lanes (the target's thread-group width: a warp's 32, a wavefront's 64); raises
        ValueError when the shape is not a power of two or the map is not linear over GF(2)."""
        from tilecraft.layout.fragment import linear_from_fragment

        return linear_from_fragment(self, width)

    def structural_key(self):
        return ("Fragment", self.shape, self.vars, self.replica_var, self.replicate, self.thread, self.index)

    def __repr__(self) -> str:
        args = ", ".join(v.name for v in self.vars)
        rep = f", {self.replica_var.name}" if self.replicate > 1 else ""
        index = ", ".join(str(e) for e in self.index)
        return (
            f"T.Fragment({self.shape}, forward_thread_fn=lambda {args}{rep}: {self.thread}, "
            f"forward_index_fn=lambda {args}: ({index},), replicate={self.replicate})"
        )
