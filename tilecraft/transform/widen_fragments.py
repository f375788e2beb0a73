"""widen-fragments: a fragment that `T.Parallel` loops index past its declared shape is sized from them.

TileLang sizes a fragment's registers from the layout of the `T.Parallel` loop that writes it, so its
attention-sink backward examples allocate `sinks = T.alloc_fragment([heads])`, fill it with
`for i in T.Parallel(block_M): sinks[i] = Sinks[by]` (heads < block_M) and read `sinks[i]` in later
loops over block_M. Here the declared shape is the storage, so such a kernel is widened before the
semantic check judges its indices: the fragment's dim becomes the extent the loops cover.

Only where that meaning is unambiguous: a `local.fragment` buffer whose every index that provably leaves
its shape (the exact loop ranges of `index_ranges`, judged as the semantic check judges them) is an affine
sum of `T.Parallel` loop variables, never below 0; all of them reach the same extent per dim; a store
reaches it (so the new elements are written before they are read); and the fragment is never a tile-op
operand or region (`T.copy`, `T.gemm`, `T.reduce`, `T.fill` ... would use the old shape) nor has an
annotated layout. Anything else is left as it is, and the semantic check reports the access. Every
widened fragment is reported once per lowering: a located `KernelWarning`, and on stderr with
TILECRAFT_VERBOSE.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings

from tilecraft import settings
from tilecraft.errors import KernelWarning
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.span import Span
from tilecraft.ir.visitor import Mutator
from tilecraft.transform.index_ranges import RangeWalk, constant

__all__ = ["widen_fragments"]

FRAGMENT = "local.fragment"
# As `warnings.warn` keeps per module: under the default filter a message is shown once per kernel line.
_SHOWN: dict = {}


def widen_fragments(mod: IRModule) -> IRModule:
    """`mod` with every fragment that T.Parallel loops index past its shape sized from those loops."""
    return mod.with_functions(_widen_func(f) for f in mod.functions)


def _widen_func(func: PrimFunc) -> PrimFunc:
    uses = _FragmentUses()
    uses.visit(func.body)
    shapes = {buf: use.widened_shape(buf) for buf, use in uses.fragments.items()}
    plan = {buf: shape for buf, shape in shapes.items() if shape is not None}
    for buf, shape in plan.items():
        _report(buf, shape, uses.fragments[buf])
    return func.with_body(_Resize(plan).mutate(func.body)) if plan else func


@dataclasses.dataclass
class _Use:
    """What the accesses of one fragment say about its size."""

    reach: dict[int, set[int]] = dataclasses.field(default_factory=dict)  # dim -> extents reached past it
    stored: set[int] = dataclasses.field(default_factory=set)  # dims a store reaches past
    loop: S.For | None = None  # the innermost T.Parallel loop of the first store past the shape
    blocked: bool = False  # an access or a use that widening cannot serve

    def widened_shape(self, buf: Buffer) -> tuple[E.Expr, ...] | None:
        if self.blocked or not self.reach or any(len(ext) != 1 for ext in self.reach.values()):
            return None
        if set(self.reach) != self.stored:
            return None  # elements past the shape that are only read would hold nothing
        shape = list(buf.shape)
        for axis, (extent,) in self.reach.items():
            shape[axis] = E.const(extent, buf.shape[axis].dtype)
        return tuple(shape)


class _FragmentUses(RangeWalk):
    """Follows the loops whose every value is reached, as the semantic check does (check.py), and
    records each fragment's accesses past its shape."""

    def __init__(self) -> None:
        super().__init__()
        self.parallel: dict[E.Var, S.For] = {}
        self.fragments: dict[Buffer, _Use] = {}

    def visit(self, node) -> None:
        if isinstance(node, (E.And, E.Or)):
            self.visit(node.a)
            with self.ranges.conditional():  # && and || skip their right operand
                self.visit(node.b)
            return
        super().visit(node)

    def visit_Allocate(self, s: S.Allocate) -> None:
        if s.buffer.scope == FRAGMENT:
            self.fragments[s.buffer] = _Use()
        self.generic_visit(s)

    def visit_For(self, s: S.For) -> None:
        extent = constant(s.extent)
        parallel = s.kind is S.ForKind.PARALLEL
        if parallel:
            self.parallel[s.loop_var] = s
        try:
            with self.ranges.loop(s.loop_var, constant(s.min), extent):
                self.visit(s.body)
        finally:
            self.parallel.pop(s.loop_var, None)

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        self._access(s.buffer, s.indices, store=True)
        self.generic_visit(s)

    def visit_BufferLoad(self, e: E.BufferLoad) -> None:
        self._access(e.buffer, e.indices, store=False)
        self.generic_visit(e)

    def visit_BufferRegion(self, r: BufferRegion) -> None:
        """A tile op (or T.print) takes the fragment by region, with the shape as written."""
        self._block(r.buffer)
        self.generic_visit(r)

    def visit_AnnotateLayout(self, s: S.AnnotateLayout) -> None:
        self._block(s.buffer)  # the annotated layout is for the declared shape

    def _block(self, buf: Buffer) -> None:
        if buf in self.fragments:
            self.fragments[buf].blocked = True

    def _access(self, buf: Buffer, indices, store: bool) -> None:
        use = self.fragments.get(buf)
        if use is None or len(indices) != buf.ndim:
            return  # the semantic check reports a rank mismatch
        for axis, (index, dim) in enumerate(zip(indices, buf.shape)):
            values, size = self.ranges.range_of(index), constant(dim)
            if values is None or not isinstance(size, int) or (values[0] >= 0 and values[1] < size):
                continue
            loop_vars = self.ranges.loop_vars(index)
            if values[0] < 0 or not all(v in self.parallel for v in loop_vars):
                use.blocked = True  # below zero, or carried by a serial loop: not TileLang's sizing
                continue
            use.reach.setdefault(axis, set()).add(values[1] + 1)
            if store:
                use.stored.add(axis)
                use.loop = use.loop or self._innermost(loop_vars)

    def _innermost(self, loop_vars: tuple[E.Var, ...]) -> S.For:
        """The loop nested deepest among those of `loop_vars` (dicts keep nesting order; Vars compare
        by building an expression, so positions are found by identity)."""
        depth = {id(v): n for n, v in enumerate(self.parallel)}
        return self.parallel[max(loop_vars, key=lambda v: depth[id(v)])]


class _Resize(Mutator):
    """Every use of a planned fragment refers to one buffer of the widened shape."""

    def __init__(self, shapes: dict[Buffer, tuple[E.Expr, ...]]) -> None:
        super().__init__()
        self.shapes = shapes

    def remap_buffer(self, buf: Buffer) -> Buffer:
        shape = self.shapes.get(buf)
        return super().remap_buffer(buf) if shape is None else dataclasses.replace(buf, shape=shape)


def _report(buf: Buffer, new: tuple[E.Expr, ...], use: _Use) -> None:
    assert use.loop is not None  # a store past the shape set it
    if buf.ndim == 1:
        reached = str(new[0])
    else:
        reached = " and ".join(f"{new[axis]} in dim {axis}" for axis in sorted(use.reach))
    span = use.loop.span
    message = (
        f"fragment {buf.name} {_listed(buf.shape)} is indexed up to {reached} by the T.Parallel loop at "
        f"{_where(span)}; as TileLang does, tilecraft sizes it from that loop ({_listed(new)})"
    )
    if span is not None:
        warnings.warn_explicit(message, KernelWarning, span.file, span.line, registry=_SHOWN)
    else:
        warnings.warn(message, KernelWarning, stacklevel=2)
    if settings.get("TILECRAFT_VERBOSE"):
        print(f"[tilecraft] warning: {message}", file=sys.stderr)


def _listed(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _where(span: Span | None) -> str:
    return "an unknown location" if span is None else f"{span.file}:{span.line}"
