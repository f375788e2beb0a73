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
        *,
        forward_fn: Callable | None = None,
    ):
        self.shape = _shape(shape)
        self.vars = variables or _placeholders(len(self.shape))
        self.replicate = int(replicate)
        self.replica_var = replica_var if replica_var is not None else Var(dt.int32, "rep")
        if forward_fn is not None:
            if forward_thread_fn is not None or forward_index_fn is not None:
                raise ValueError(
                    "T.Fragment takes forward_fn (returning the thread and the local index) or "
                    "forward_thread_fn and forward_index_fn, not both"
                )
            forward_thread_fn, forward_index_fn = self._split_forward(forward_fn)
        self.thread = self._thread_expr(forward_thread_fn)
        if forward_index_fn is None:
            forward_index_fn = (convert(0),)
        if callable(forward_index_fn):
            forward_index_fn = _call_with_vars(forward_index_fn, len(self.vars), self.vars)
        self.index = tuple(convert(e) for e in forward_index_fn)

    def _split_forward(self, fn: Callable) -> tuple[Expr, tuple[Expr, ...]]:
        """TileLang's `forward_fn(*indices[, rep]) -> (thread, local index or indices)`: the replica
        variable is passed when the function takes one more parameter than the fragment has dims."""
        nargs = len(inspect.signature(fn).parameters)
        result = fn(*(*self.vars, self.replica_var)[:nargs])
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise ValueError(
                f"T.Fragment's forward_fn must return (thread, local index), got {result!r}; "
                "for example forward_fn=lambda i, j: (j // 2 + 4 * i, j % 2)"
            )
        thread, index = result
        index = tuple(index) if isinstance(index, (tuple, list)) else (index,)
        return convert(thread), tuple(convert(e) for e in index)

    def _thread_expr(self, fn) -> Expr:
        if fn is None:
            return convert(0)
        if not callable(fn):
            return convert(fn)
        nargs = len(inspect.signature(fn).parameters)
        args = (*self.vars, self.replica_var)[:nargs]
        return convert(fn(*args))

    def thread_extent(self) -> int:
        """How many threads hold the fragment: one past the largest thread any element (or replica)
        maps to."""
        return 1 + max(self._values(self.thread, with_replica=True), default=-1)

    def local_extent(self) -> int:
        """The number of local slots of each thread (one local index): one past the largest."""
        if len(self.index) != 1:
            raise ValueError(f"fragment {self!r} has {len(self.index)} local indices; the extent needs one")
        return 1 + max(self._values(self.index[0], with_replica=False), default=-1)

    def _values(self, expr: Expr, with_replica: bool) -> list[int]:
        from itertools import product

        from tilecraft.ir.eval import evaluate

        reps = range(self.replicate if with_replica else 1)
        values = []
        for point in product(*(range(n) for n in self.shape), reps):
            env = dict(zip(self.vars, point[:-1]))
            env[self.replica_var] = point[-1]
            values.append(int(evaluate(expr, env)))
        return values

    def repeat(
        self, repeats: Sequence[int], repeat_on_thread: bool = False, lower_dim_first: bool = True
    ) -> Fragment:
        """TileLang's `Fragment.repeat`: the fragment tiled `repeats[d]` times along each dim. Copy `r`
        (numbered with the last dim fastest, or the first with `lower_dim_first=False`) goes to threads
        `r * thread_extent()` on with `repeat_on_thread`, else to local slots `r * local_extent()` on of
        the same threads."""
        repeats = tuple(int(r) for r in repeats)
        if len(repeats) != len(self.shape) or min(repeats, default=1) < 1:
            raise ValueError(f"repeat needs a positive count for each of the {len(self.shape)} dims, got {repeats}")
        variables = _placeholders(len(self.shape))
        inner = {v: w % n for v, w, n in zip(self.vars, variables, self.shape)}
        copy, stride = convert(0), 1
        order = range(len(self.shape) - 1, -1, -1) if lower_dim_first else range(len(self.shape))
        for d in order:
            copy = copy + (variables[d] // self.shape[d]) * stride
            stride *= repeats[d]
        thread = substitute(self.thread, inner)
        index = tuple(substitute(e, inner) for e in self.index)
        if repeat_on_thread:
            thread = thread + copy * self.thread_extent()
        else:
            index = (index[0] + copy * self.local_extent(),) if len(index) == 1 else None
            if index is None:
                raise ValueError("repeat on the local index needs a fragment with one local index")
        shape = tuple(n * r for n, r in zip(self.shape, repeats))
        return Fragment(shape, thread, index, self.replicate, variables, self.replica_var)

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
