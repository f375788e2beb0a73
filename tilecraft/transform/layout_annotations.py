"""apply-layout-annotations: what `T.annotate_layout` asks of each buffer, made explicit in the kernel.

- A `T.Layout` on a global buffer permutes the buffer's storage (TileLang's `make_dq_layout` lays dQ
  out so that the atomic adds of an mma accumulator are coalesced). In the kernel that annotates it,
  every access goes through the layout's forward map: the element at logical index `x` is stored at
  the row-major offset of `forward(x)` within the layout's output shape (each forward index ranges
  over `[0, its largest value]`, as in TileLang). Tile ops touching such a buffer become element
  loops first (edge predicates test the logical index), so no lowering assumes contiguity.
- A `T.Layout` on a shared or local buffer arranges on-chip storage no one else can observe: a hint,
  dropped (each target chooses its on-chip layouts itself, docs/compat.md).
- A `T.Fragment` on a fragment is kept for `infer-layouts` on targets that distribute fragments over
  threads, and dropped where a block runs as one thread.
- Anything else stops with the annotation's line.

After it runs, the only `AnnotateLayout` statements left are kept fragment layouts.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith import bound
from tilecraft.ir.buffer import Buffer, BufferRegion, Range
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import BufferKeepingMutator, Visitor, walk
from tilecraft.layout.layout import Fragment, Layout
from tilecraft.transform.tile_loops import (
    conjunction,
    copy_as_loops,
    edge_conditions,
    fill_as_loops,
    loop_extents,
    make_loop_vars,
    parallel_nest,
    region_index,
)

__all__ = ["GlobalLayout", "apply_layout_annotations"]

FRAGMENT = "local.fragment"
ON_CHIP = ("shared", "shared.dyn", "local", "local.var")


@dataclasses.dataclass(frozen=True)
class GlobalLayout:
    """A global buffer's storage permutation: `layout` and the extents of its output index."""

    buffer: Buffer
    layout: Layout
    extents: tuple[int, ...]

    def offset(self, indices) -> E.Expr:
        """The storage offset of the element at logical `indices`."""
        offset: E.Expr | None = None
        for index, extent in zip(self.layout.map(indices), self.extents):
            offset = index if offset is None else E.add(E.mul(offset, extent), index)
        return offset if offset is not None else E.const(0)

    def access(self, indices) -> tuple[E.Expr, ...]:
        """Indices of the buffer that address `offset(indices)` (the buffer is compact row-major)."""
        zeros = tuple(E.const(0, i.dtype) for i in indices[:-1])
        return (*zeros, self.offset(indices))


def _fail(message: str, span, hint: str, target) -> None:
    raise LoweringError(message, span, hint, target=target)


def global_layout(s: S.AnnotateLayout, target) -> GlobalLayout:
    """Check that `s` can permute its global buffer, and measure the layout's output."""
    buf, layout = s.buffer, s.layout
    shape = tuple(E.const_value(d) for d in buf.shape)
    if not all(isinstance(d, int) for d in shape) or shape != layout.shape:
        _fail(f"the layout annotated on {buf.name} has shape {layout.shape}, but {buf.name} has shape "
              f"{tuple(str(d) for d in buf.shape)}", s.span,
              f"build it from the buffer: T.Layout({buf.name}.shape, ...) on a buffer of static shape", target)  # fmt: skip
    if buf.strides:
        _fail(f"a layout annotated on {buf.name} permutes compact storage, but {buf.name} has explicit "
              "strides", s.span, "annotate a compact (row-major) tensor", target)  # fmt: skip
    ranges = {v: (0, n - 1) for v, n in zip(layout.vars, shape)}
    extents = []
    for k, index in enumerate(layout.index):
        iv = bound(index, ranges)
        if iv.lo is None or iv.hi is None or iv.lo < 0:
            _fail(f"output index {k} of the layout annotated on {buf.name} ({index}) has no provable "
                  "range [0, n)", s.span, "write the forward map with //, % and non-negative arithmetic "
                  "of the logical indices", target)  # fmt: skip
        extents.append(iv.hi + 1)
    size, storage = 1, 1
    for n in shape:
        size *= n
    for n in extents:
        storage *= n
    if storage > size:
        _fail(f"the layout annotated on {buf.name} addresses {storage} elements (output shape "
              f"{tuple(extents)}), but {buf.name} holds {size}", s.span,
              "make the forward map a permutation of the buffer's elements (for example, use sizes the "
              "layout's // and % divide evenly)", target)  # fmt: skip
    return GlobalLayout(buf, layout, tuple(extents))


def _hint(buf: Buffer, layout) -> bool:
    """An on-chip buffer's T.Layout or a fragment's T.Fragment: valid, and no storage permutation."""
    if buf.scope == FRAGMENT:
        return isinstance(layout, Fragment)
    return buf.scope in ON_CHIP and isinstance(layout, Layout)


class _Find(Visitor):
    """The annotations in one kernel, sorted by what they ask."""

    def __init__(self, target, keep_fragments: bool) -> None:
        self.target = target
        self.keep_fragments = keep_fragments
        self.globals: dict[int, GlobalLayout] = {}

    def visit_KernelLaunch(self, s: S.KernelLaunch) -> None:
        _fail(
            "T.annotate_layout inside a nested T.Kernel", s.span, "annotate in the kernel itself", self.target
        )

    def visit_AnnotateLayout(self, s: S.AnnotateLayout) -> None:
        buf, layout = s.buffer, s.layout
        if buf.scope == "global" and isinstance(layout, Layout):
            found = global_layout(s, self.target)
            old = self.globals.get(id(buf))
            if old is not None and old.layout.structural_key() != layout.structural_key():
                _fail(f"{buf.name} is annotated with two different layouts in one kernel", s.span,
                      "annotate each buffer once per kernel", self.target)  # fmt: skip
            self.globals[id(buf)] = found
        elif not _hint(buf, layout):
            wanted = "a T.Fragment" if buf.scope == FRAGMENT else "a T.Layout"
            _fail(f"{buf.name} ({buf.scope}) is annotated with a {type(layout).__name__}", s.span,
                  f"a {buf.scope} buffer takes {wanted}", self.target)  # fmt: skip


class _Apply(BufferKeepingMutator):
    """Accesses to permuted global buffers go through their layouts; spent annotations go away."""

    def __init__(self, globals_: dict[int, GlobalLayout], keep_fragments: bool, target) -> None:
        super().__init__()
        self.globals = globals_
        self.keep_fragments = keep_fragments
        self.target = target

    def _permuted(self, region: BufferRegion | None) -> bool:
        return isinstance(region, BufferRegion) and id(region.buffer) in self.globals

    def mutate_AnnotateLayout(self, s: S.AnnotateLayout) -> S.Stmt:
        if isinstance(s.layout, Fragment) and self.keep_fragments:
            return s
        return S.SeqStmt(())

    def mutate_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        indices = tuple(self.mutate(i) for i in e.indices)
        found = self.globals.get(id(e.buffer))
        if found is None:
            return (
                e
                if all(a is b for a, b in zip(indices, e.indices))
                else E.BufferLoad(e.dtype, e.buffer, indices)
            )
        return E.BufferLoad(e.dtype, e.buffer, found.access(indices))

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        store = self.generic_mutate(s)
        found = self.globals.get(id(s.buffer))
        if found is None:
            return store
        return dataclasses.replace(store, indices=found.access(store.indices))

    def mutate_Copy(self, s: S.Copy) -> S.Stmt:
        if self._permuted(s.src) or self._permuted(s.dst):
            return self.mutate(copy_as_loops(s))
        return self.generic_mutate(s)

    def mutate_Fill(self, s: S.Fill) -> S.Stmt:
        if self._permuted(s.dst):
            return self.mutate(fill_as_loops(s))
        return self.generic_mutate(s)

    def mutate_AtomicOp(self, s: S.AtomicOp) -> S.Stmt:
        if isinstance(s.value, BufferRegion) and (self._permuted(s.dst) or self._permuted(s.value)):
            return self.mutate(_scalar_atomics(s))
        op = self.generic_mutate(s)
        found = self.globals.get(id(op.dst.buffer))
        if found is None:
            return op
        index = found.access(tuple(r.min for r in op.dst.ranges))
        one = tuple(Range(i, E.const(1, i.dtype)) for i in index)
        return dataclasses.replace(op, dst=BufferRegion(op.dst.buffer, one))

    def _refuse_regions(self, s: S.Stmt, what: str) -> S.Stmt:
        for node in walk(s):
            if isinstance(node, BufferRegion) and id(node.buffer) in self.globals:
                _fail(f"{what} reads or writes a region of {node.buffer.name}, whose storage is permuted by "
                      "T.annotate_layout", s.span, f"T.copy the region of {node.buffer.name} into a shared "
                      "buffer or fragment and use that", self.target)  # fmt: skip
        return self.generic_mutate(s)

    def mutate_Print(self, s: S.Print) -> S.Stmt:
        return self._refuse_regions(s, "T.print")

    def mutate(self, node):
        if isinstance(node, S.TileOp) and type(node) not in (S.Copy, S.Fill, S.AtomicOp):
            return self._refuse_regions(node, type(node).__name__)
        return super().mutate(node)


def _scalar_atomics(op: S.AtomicOp) -> S.Stmt:
    """A region atomic as a T.Parallel nest of one-element atomics (updates past the edge skipped)."""
    extents = loop_extents(op.value)
    loop_vars = make_loop_vars(len(extents), "a")
    dst_index = region_index(op.dst, loop_vars)
    value = E.BufferLoad(op.value.dtype, op.value.buffer, region_index(op.value, loop_vars))
    one = tuple(Range(i, E.const(1, i.dtype)) for i in dst_index)
    body: S.Stmt = S.AtomicOp(
        op.kind, BufferRegion(op.dst.buffer, one), E.cast(value, op.dst.dtype), span=op.span
    )
    guard = conjunction(edge_conditions(op.dst, dst_index))
    if guard is not None:
        body = S.IfThenElse(guard, body, span=op.span)
    return parallel_nest(loop_vars, extents, body, op.span)


class _PerKernel(BufferKeepingMutator):
    def __init__(self, target, keep_fragments: bool) -> None:
        super().__init__()
        self.target = target
        self.keep_fragments = keep_fragments

    def mutate_AnnotateLayout(self, s: S.AnnotateLayout) -> S.Stmt:
        _fail("T.annotate_layout outside T.Kernel", s.span, "annotate inside the T.Kernel that uses the buffer",
              self.target)  # fmt: skip

    def mutate_KernelLaunch(self, launch: S.KernelLaunch) -> S.Stmt:
        find = _Find(self.target, self.keep_fragments)
        find.visit(launch.body)
        body = _Apply(find.globals, self.keep_fragments, self.target).mutate(launch.body)
        return launch if body is launch.body else dataclasses.replace(launch, body=body)


def apply_layout_annotations(keep_fragments: bool):
    """The `apply-layout-annotations` pass; `keep_fragments` where fragments are spread over threads."""

    @module_pass("apply-layout-annotations")
    def run(mod: IRModule, ctx) -> IRModule:
        """Permuted global buffers are accessed through their layouts; on-chip layout hints are gone."""
        mutator = _PerKernel(ctx.target, keep_fragments)
        return mod.with_functions(f.with_body(mutator.mutate(f.body)) for f in mod.functions)

    return run
