"""Layout inference: which thread and register hold each element of every fragment, and how every
`T.Parallel` nest is spread over the block's threads.

Strict layouts come first (gemm accumulators and register operands: the mma layouts), then they propagate to
a fixed point: a nest that indexes a known fragment by its loop variables takes that fragment's layout;
fragments a nest indexes by its variables take the nest's layout (projected when indexed by a subset); a
reduction's result is its source projected (keeping the reduced dim as extent 1 where the result does);
copies between fragments of one shape share a layout. When propagation stops, a free nest that reads a known
fragment by some of its variables (a row vector `m[i]` in a loop over `(i, j)`) takes that fragment's layout
extended over its other dims, so the read stays in the thread's registers. Next, a fragment wider than a
nest that indexes it by its variables (`sinks[i]` of a `(128,)` fragment in `T.Parallel(64)`) takes the
nest's layout for that part and further registers for the rest, and a free nest over a leading part of a
known fragment iterates the fragment's layout with the rest masked; a free nest over an aligned block
of one (`x[i, jj * 4 + j]`) takes the fragment's layout restricted to a block, where every block spreads
over the threads alike. Then what stays free gets the default
(row-major over threads, runs as wide as the target's widest access), and propagation resumes. Two
different layouts demanded for one fragment stop with both ops' lines.

The mechanism is shared; the strict layouts come from the backend (`strict(op, threads, target)`
yields `(buffer, layout, why)` for the tile ops whose instructions impose one, e.g. an mma accumulator
or a swizzled shared operand tile), and so do the thread-group width and access width the layouts are
built for (`simt(target)`, a `SimtTarget`).

The result is written into the IR: an `AnnotateLayout` after each fragment's (and strictly laid out
shared buffer's) allocation and a `("layout", TileLayout)` annotation on each nest's outer loop.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tilecraft.backend.pipeline import module_pass
from tilecraft.backend.simt import SimtFacts, SimtTarget
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.function import IRModule
from tilecraft.ir.span import Span
from tilecraft.ir.visitor import BufferKeepingMutator, Visitor, free_vars, map_launches, walk
from tilecraft.layout.fragment import FRAGMENT_INS, fragment_dims, linear_from_fragment
from tilecraft.layout.layout import Fragment
from tilecraft.layout.linear import LinearLayout, log2, next_power_of_two
from tilecraft.layout.reshape import reshape_layout, reshape_refusal
from tilecraft.layout.tile import (
    TileLayout,
    block_of,
    blocked_layout,
    covers,
    keep_unit_dim,
    project,
    reduced_dim_in_registers,
    shifted,
    subset,
    widen,
    within,
)
from tilecraft.transform.buffer_views import copies_through_views
from tilecraft.transform.thread_groups import ThreadGroup, block_group, groups_of

FRAGMENT = "local.fragment"


@dataclass
class Nest:
    """A `T.Parallel` nest: its outer loop, loop variables, static extents, fragment accesses."""

    outer: S.For
    vars: list[E.Var]
    extents: tuple[int, ...]
    accesses: list[tuple[Buffer, tuple]] = field(default_factory=list)
    layout: TileLayout | None = None
    threads: int = 0  # the threads of its thread group the layout spreads it over


@dataclass
class Decision:
    layout: TileLayout
    why: str
    span: Span | None


def parallel_nest(s: S.For) -> tuple[list[S.For], S.Stmt]:
    """The directly nested T.Parallel loops starting at `s`, and the innermost body."""
    loops = [s]
    while isinstance(loops[-1].body, S.For) and loops[-1].body.kind is S.ForKind.PARALLEL:
        loops.append(loops[-1].body)
    return loops, loops[-1].body


class _Collect(Visitor):
    def __init__(self) -> None:
        self.fragments: dict[int, Buffer] = {}
        self.nests: list[Nest] = []
        self.ops: list[S.Stmt] = []
        self.annotated: list[S.AnnotateLayout] = []

    def visit_AnnotateLayout(self, s: S.AnnotateLayout) -> None:
        if isinstance(s.layout, Fragment):
            self.annotated.append(s)

    def visit_Allocate(self, s: S.Allocate) -> None:
        if s.buffer.scope == FRAGMENT:
            self.fragments[id(s.buffer)] = s.buffer
        self.generic_visit(s)

    def visit_For(self, s: S.For) -> None:
        if s.kind is not S.ForKind.PARALLEL:
            self.generic_visit(s)
            return
        loops, body = parallel_nest(s)
        extents = []
        for f in loops:
            value = E.const_value(f.extent)
            if not isinstance(value, int) or E.const_value(f.min) != 0:
                raise LoweringError(
                    "T.Parallel extents must be static and start at 0 on this target",
                    f.span,
                    "split the loop so the parallel part has a compile-time size",
                )
            extents.append(value)
        nest = Nest(s, [f.loop_var for f in loops], tuple(extents))
        _Accesses(nest).visit(body)
        self.nests.append(nest)
        self.visit(body)

    def visit_Gemm(self, s: S.Gemm) -> None:
        self.ops.append(s)

    def visit_Reduce(self, s: S.Reduce) -> None:
        self.ops.append(s)

    def visit_Copy(self, s: S.Copy) -> None:
        self.ops.append(s)

    def visit_Cumsum(self, s: S.Cumsum) -> None:
        self.ops.append(s)


class _Accesses(Visitor):
    def __init__(self, nest: Nest) -> None:
        self.nest = nest

    def visit_BufferLoad(self, e: E.BufferLoad) -> None:
        self._access(e.buffer, e.indices)
        self.generic_visit(e)

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        self._access(s.buffer, s.indices)
        self.generic_visit(s)

    def _access(self, buf: Buffer, indices) -> None:
        if buf.scope == FRAGMENT:
            self.nest.accesses.append((buf, tuple(indices)))


def _same_shape_fragments(a: Buffer, b: Buffer) -> bool:
    """Whether a T.copy between `a` and `b` can share one layout: both fragments of one shape. A copy
    of a row of a wider fragment (`T.copy(lse[k, :], row)`) cannot: which thread holds the row
    depends on k; its copy loop follows the destination and broadcasts the rows other threads hold."""
    return a.scope == FRAGMENT and b.scope == FRAGMENT and static_shape(a) == static_shape(b)


def var_positions(nest: Nest, indices) -> list[int] | None:
    """The loop-variable positions an access indexes by, or None when it is not a plain var index."""
    ids = [id(v) for v in nest.vars]
    out = []
    for idx in indices:
        if not isinstance(idx, E.Var) or id(idx) not in ids:
            return None
        out.append(ids.index(id(idx)))
    return out if len(set(out)) == len(out) else None


def shifted_positions(loop_vars, extents, indices) -> tuple[list[int], list[int]] | None:
    """As `var_positions`, for indices `v`, `v // 2^s` or `v >> s` with s > 0 somewhere (a byte of packed
    4-bit codes read as `q[i, j // 2]`) and every extent so divided a multiple of 2^s: the positions and
    each dim's shift."""
    ids = [id(v) for v in loop_vars]
    positions, shifts = [], []
    for idx in indices:
        var, shift = _var_and_shift(idx)
        if var is None or id(var) not in ids:
            return None
        position = ids.index(id(var))
        if extents[position] % (1 << shift):
            return None
        positions.append(position)
        shifts.append(shift)
    if len(set(positions)) != len(positions) or not any(shifts):
        return None
    return positions, shifts


def _var_and_shift(idx: E.Expr) -> tuple[E.Var | None, int]:
    if isinstance(idx, E.Var):
        return idx, 0
    if isinstance(idx, E.FloorDiv) and isinstance(idx.a, E.Var) and isinstance(idx.b, E.IntImm):
        d = idx.b.value
        return (idx.a, d.bit_length() - 1) if d > 0 and d & (d - 1) == 0 else (None, 0)
    if isinstance(idx, E.Call) and idx.op == "shift_right" and isinstance(idx.args[0], E.Var):
        amount = idx.args[1]
        return (idx.args[0], amount.value) if isinstance(amount, E.IntImm) and amount.value >= 0 else (None, 0)
    return None, 0


def block_positions(loop_vars, extents, indices) -> tuple[list[int], list[E.Expr | None]] | None:
    """As `var_positions`, for indices `v` or `v + c` (in either order): c uses no variable of the nest
    and is a provable multiple of v's extent rounded up to a power of two, so the nest covers one aligned
    block of the buffer (`x[i, jj * 4 + j]` in a nest over `(i, j)` of extents (_, 4)). Returns the
    positions and each dim's offset c (None for a plain variable)."""
    ids = [id(v) for v in loop_vars]
    positions: list[int] = []
    offsets: list[E.Expr | None] = []
    for idx in indices:
        var, offset = _var_and_offset(idx, ids)
        if var is None:
            return None
        position = ids.index(id(var))
        if offset is not None and power_of_two_factor(offset) < next_power_of_two(extents[position]):
            return None
        positions.append(position)
        offsets.append(offset)
    return (positions, offsets) if len(set(positions)) == len(positions) else None


def _var_and_offset(idx: E.Expr, ids: list[int]) -> tuple[E.Var | None, E.Expr | None]:
    if isinstance(idx, E.Var) and id(idx) in ids:
        return idx, None
    if isinstance(idx, E.Add):
        for var, offset in ((idx.a, idx.b), (idx.b, idx.a)):
            if isinstance(var, E.Var) and id(var) in ids and not any(id(v) in ids for v in free_vars(offset)):
                return var, offset
    return None, None


def power_of_two_factor(e: E.Expr) -> int:
    """A power of two that provably divides the integer expression `e` (1 when nothing is known)."""
    if isinstance(e, E.IntImm):
        return e.value & -e.value if e.value else 1 << 30
    if isinstance(e, E.Mul):
        return min(power_of_two_factor(e.a) * power_of_two_factor(e.b), 1 << 30)
    if isinstance(e, (E.Add, E.Sub)):
        return min(power_of_two_factor(e.a), power_of_two_factor(e.b))
    return 1


def static_shape(buf: Buffer) -> tuple[int, ...]:
    dims = tuple(E.const_value(d) for d in buf.shape)
    if not all(isinstance(d, int) for d in dims):
        raise LoweringError(f"fragment {buf.name} needs a static shape", buf.span)
    return dims


StrictLayouts = Callable[[S.TileOp, int, object], Iterable[tuple[Buffer, object, str]]]


class Inference:
    """The fixed-point layout inference of one kernel."""

    def __init__(
        self,
        launch: S.KernelLaunch,
        threads: int,
        target,
        simt: SimtTarget,
        strict: StrictLayouts | None = None,
    ) -> None:
        self.launch = launch
        self.threads = threads
        self.target = target
        self.simt = simt
        self.strict = strict
        self.found = _Collect()
        self.found.visit(launch.body)
        self.groups = _Groups(launch, simt.width, target)
        for nest in self.found.nests:
            nest.threads = self.groups.span(nest.outer)
        self.layouts: dict[int, Decision] = {}
        self.shared: dict[int, object] = {}
        self.shared_why: dict[int, tuple[str, object]] = {}
        self.views = fragment_views(launch.body)

    def set(self, buf: Buffer, layout: TileLayout, why: str, span) -> bool:
        old = self.layouts.get(id(buf))
        if old is None:
            if layout.shape != static_shape(buf):
                raise LoweringError(f"layout of shape {layout.shape} does not fit fragment {buf.name} "
                                    f"of shape {static_shape(buf)} ({why})", span, target=self.target)  # fmt: skip
            self.layouts[id(buf)] = Decision(layout, why, span)
            return True
        if not old.layout.same_as(layout):
            where = f" (line {old.span.line})" if old.span else ""
            raise LoweringError(
                f"fragment {buf.name} needs two different layouts: one from {old.why}{where}, another from {why}",
                span,
                "convert between them through shared memory: T.copy the fragment to a shared buffer and back",
                target=self.target,
            )
        return False

    def set_shared(self, buf: Buffer, layout: object, why: str, span) -> None:
        """A shared buffer's layout; two different demands are an error, never a silent overwrite
        (a tile stored in one layout and read in another gives wrong results)."""
        if buf.base is not None:
            raise LoweringError(
                f"{buf.name}, a view of shared tile {buf.base.name}, needs a layout of its own as {why}; a view "
                f"addresses {buf.base.name}'s elements in {buf.base.name}'s layout",
                span,
                f"use a tile of the view's shape: T.copy {buf.name} into one (or allocate {buf.base.name} in "
                "that shape)",
                target=self.target,
            )
        old = self.shared_why.get(id(buf))
        if old is not None and self.shared[id(buf)] != layout:
            old_why, old_span = old
            where = f" (line {old_span.line})" if old_span else ""
            raise LoweringError(
                f"shared buffer {buf.name} needs two different layouts: {self.shared[id(buf)]} as {old_why}"
                f"{where}, and {layout} as {why}",
                span,
                "give each of the two operations its own shared buffer (T.copy one into the other)",
                target=self.target,
            )
        self.shared[id(buf)] = layout
        self.shared_why[id(buf)] = (why, span)

    def known(self, buf: Buffer) -> TileLayout | None:
        d = self.layouts.get(id(buf))
        return d.layout if d else None

    def run(self) -> None:
        for note in self.found.annotated:
            self.set(note.buffer, self._annotated(note), "T.annotate_layout", note.span)
        for op in self.found.ops:
            if copies_through_views(op):
                continue  # lowered element by element: no instruction's layout applies
            for buf, layout, why in self.strict(op, self.groups.span(op), self.target) if self.strict else ():
                if isinstance(layout, TileLayout):
                    self.set(buf, layout, why, op.span)
                else:
                    self.set_shared(buf, layout, why, op.span)
        while True:
            self._propagate()
            if not (self._extend_one() or self._cover_one() or self._block_one() or self._default_one()):
                break

    def _annotated(self, note: S.AnnotateLayout) -> TileLayout:
        """The user's `T.Fragment` as a tile layout over this kernel's threads."""
        frag, name = note.layout, note.buffer.name
        try:
            linear = linear_from_fragment(frag, self.simt.width)
        except ValueError as err:
            raise LoweringError(
                f"the T.Fragment annotated on {name} cannot be lowered to threads: {err}",
                note.span,
                "give a fragment on a power-of-two shape whose thread and local index are XOR/shift "
                "combinations of the index bits (as mma and blocked layouts are), or drop the annotation "
                "and let the layout be inferred",
                target=self.target,
            ) from err
        used = linear.in_size("lane") * linear.in_size("warp")
        threads = self.groups.fragment_span(note.buffer)
        if used != threads:
            raise LoweringError(
                f"the T.Fragment annotated on {name} spreads it over {used} threads, but the kernel has "
                f"{threads}",
                note.span,
                f"write the fragment for {threads} threads (replicate=... for threads that hold copies)",
                target=self.target,
            )
        return TileLayout(frag.shape, linear)

    def _propagate(self) -> None:
        changed = True
        while changed:
            changed = False
            for nest in self.found.nests:
                changed |= self._nest(nest)
            for op in self.found.ops:
                changed |= self._op(op)
            for view in self.views:
                changed |= self._view(view)

    def _view(self, view: Buffer) -> bool:
        """A fragment and its views (`T.reshape`) hold each element in the same thread and register: the
        layout of one, reshaped, is the other's."""
        base = view.base
        known, from_view = self.known(base), self.known(view)
        if known is None and from_view is None:
            return False
        source, target = (base, view) if known is not None else (view, base)
        layout = reshape_layout(known or from_view, static_shape(target))
        if layout is None:
            reason = reshape_refusal(static_shape(base), static_shape(view)) or (
                f"the layout of {source.name} reaches past its tile"
            )
            raise LoweringError(
                f"{view.name}, a reshape of fragment {base.name} {static_shape(base)} as "
                f"{static_shape(view)}, cannot keep each element in the thread that holds it: {reason}",
                view.span,
                f"T.copy {base.name} into a shared tile and reshape that (a shared tile's view moves no "
                "element between threads), or reshape only dims of power-of-two sizes",
                target=self.target,
            )
        return self.set(target, layout, f"a reshape of {source.name}", view.span)

    def _nest(self, nest: Nest) -> bool:
        changed = False
        if nest.layout is None:
            full = list(range(len(nest.vars)))
            for buf, indices in nest.accesses:
                layout = self.known(buf)
                if (
                    layout is not None
                    and layout.shape == nest.extents
                    and var_positions(nest, indices) == full
                ):
                    nest.layout = layout
                    changed = True
                    break
        if nest.layout is None:
            return changed
        for buf, indices in nest.accesses:
            if self.known(buf) is not None:
                continue
            dims = var_positions(nest, indices)
            if dims is not None:
                derived = nest.layout if dims == list(range(len(nest.vars))) else subset(nest.layout, dims)
                why = "a T.Parallel loop over it"
            elif (found := shifted_positions(nest.vars, nest.extents, indices)) is not None:
                derived, why = shifted(subset(nest.layout, found[0]), found[1]), "a T.Parallel loop reading v // 2^s"
            else:
                continue
            if derived.shape == static_shape(buf):
                changed |= self.set(buf, derived, why, nest.outer.span)
        return changed

    def _op(self, op: S.Stmt) -> bool:
        if isinstance(op, S.Reduce) and op.src.buffer.scope == FRAGMENT and op.dst.buffer.scope == FRAGMENT:
            src = self.known(op.src.buffer)
            if src is not None and self.known(op.dst.buffer) is None:
                result = project(src, op.dim)
                if op.keeps_dim and len(src.shape) > 1:
                    result = keep_unit_dim(result, op.dim)
                if result.shape != static_shape(op.dst.buffer):
                    result = TileLayout(static_shape(op.dst.buffer), result.linear)
                return self.set(op.dst.buffer, result, f"T.reduce_{op.kind}", op.span)
        if isinstance(op, S.Copy) and _same_shape_fragments(op.src.buffer, op.dst.buffer):
            a, b = self.known(op.src.buffer), self.known(op.dst.buffer)
            if a is not None and b is None:
                return self.set(op.dst.buffer, a, "a T.copy from a fragment", op.span)
            if b is not None and a is None:
                return self.set(op.src.buffer, b, "a T.copy to a fragment", op.span)
        return False

    def _extend_one(self) -> bool:
        """Partition the first free nest that reads a known fragment by some of its variables so that
        every thread holds the elements it reads (a row vector read across a tile stays in registers);
        False when there is none."""
        for nest in self.found.nests:
            if nest.layout is not None:
                continue
            for buf, indices in nest.accesses:
                layout, dims = self.known(buf), var_positions(nest, indices)
                if layout is None or dims is None:
                    continue
                if any(static_shape(buf)[a] != nest.extents[d] for a, d in enumerate(dims)):
                    continue
                extended = extend(layout, dims, nest.extents)
                if extended is not None:
                    nest.layout = extended
                    return True
        return False

    def _cover_one(self) -> bool:
        """Settle the first nest-fragment pair where one covers a leading part of the other (the nest
        fixes the wider fragment's layout, or the wider fragment the nest's); False when there is none."""
        for nest in self.found.nests:
            for buf, indices in nest.accesses:
                dims = var_positions(nest, indices)
                if dims is None:
                    continue
                known = self.known(buf)
                if nest.layout is not None and known is None:
                    part = nest.layout if dims == list(range(len(nest.vars))) else subset(nest.layout, dims)
                    if covers(static_shape(buf), part.shape):
                        why = "a T.Parallel loop over a leading part of it"
                        return self.set(buf, widen(part, static_shape(buf)), why, nest.outer.span)
                full = dims == list(range(len(nest.vars)))
                if nest.layout is None and known is not None and full and covers(known.shape, nest.extents):
                    nest.layout = within(known, nest.extents)
                    return True
        return False

    def _block_one(self) -> bool:
        """Lay out the first free nest that reads an aligned block of a known fragment (`x[i, jj * 4 + j]`)
        as the fragment's layout restricted to one block, when every block spreads over the threads
        alike: each thread then reads every block from its own registers; False when there is none."""
        for nest in self.found.nests:
            if nest.layout is not None:
                continue
            for buf, indices in nest.accesses:
                known = self.known(buf)
                found = block_positions(nest.vars, nest.extents, indices)
                if known is None or found is None or found[0] != list(range(len(nest.vars))):
                    continue
                if not covers(known.shape, nest.extents):
                    continue
                layout = block_of(known, nest.extents)
                if layout is not None:
                    nest.layout = layout
                    return True
        return False

    def _default_one(self) -> bool:
        """Give the first still-free fragment (or nest) the default layout; False when none is left."""
        for buf, run in self._free_in_order():
            threads = self.groups.fragment_span(buf)
            if isinstance(run, TileLayout):
                self.set(buf, run, "the default layout of a reduction over an outer dim", buf.span)
            else:
                self.set(buf, blocked_layout(static_shape(buf), threads, self.simt, buf.dtype, run),
                         "the default layout", buf.span)  # fmt: skip
            return True
        for nest in self.found.nests:
            if nest.layout is None:
                dtype = _widest_access_dtype(nest)
                nest.layout = blocked_layout(nest.extents, nest.threads, self.simt, dtype)
                return True
        return False

    def _free_in_order(self):
        """(fragment, run or layout): reduction sources first, each thread holding a run of the reduced dim
        when it is the innermost (as many of a row's elements as its share of the tile: fewer threads
        share a row, fewer shuffles combine it, as TileLang's per-token fp8 cast reduces 8 a thread over
        16 threads), or all of a short outer one (`reduced_dim_in_registers`: the split-KV combine's
        max over 4 splits), then the rest by size."""
        for op in self.found.ops:
            if (
                isinstance(op, S.Reduce)
                and op.src.buffer.scope == FRAGMENT
                and self.known(op.src.buffer) is None
            ):
                buf, threads = op.src.buffer, self.groups.fragment_span(op.src.buffer)
                dim = op.dim % len(buf.shape)
                if dim == len(buf.shape) - 1:
                    yield buf, math.prod(static_shape(buf)) // threads
                else:  # an outer dim: held whole by each thread where it is short (None: the blocked default)
                    yield buf, reduced_dim_in_registers(static_shape(buf), dim, threads, self.simt, buf.dtype)
        # The largest first: a nest over a big tile and a small per-row vector (a GEMV's `acc[i] +=
        # a[i, j] * x[j]`) is laid out for the tile's loads, the vector following the nest, not the
        # other way round (TileLang lays such a loop out from its tile accesses too).
        free = [buf for buf in self.found.fragments.values() if self.known(buf) is None]
        yield from ((buf, None) for buf in sorted(free, key=lambda buf: -math.prod(static_shape(buf))))


def extend(frag: TileLayout, dims: list[int], extents: tuple[int, ...]) -> TileLayout | None:
    """A layout for a nest over `extents` under which each thread reads `F[v_dims...]` from its own
    registers, F having layout `frag`: F's bases on the dims it is indexed by; the nest's other dims take
    the input bits F leaves free (the threads that replicate F, lane bits first, then warp bits, then
    registers that repeat an element), innermost dim lowest, and further registers. None when the
    result would not cover the nest."""
    names = fragment_dims(len(extents))
    padded = [next_power_of_two(e) for e in extents]
    missing = [(d, b) for d in reversed(range(len(extents))) if d not in dims for b in range(log2(padded[d]))]
    linear = frag.linear
    bases = {name: [_lift(linear.basis(name, b), dims, len(extents)) for b in range(linear.in_bits(name))]
             for name in FRAGMENT_INS if name in linear.in_names}  # fmt: skip
    for name in ("lane", "warp", "register"):
        for bit, vector in enumerate(bases.get(name, ())):
            if missing and not any(vector):
                bases[name][bit] = _unit(*missing.pop(0), len(extents))
    bases.setdefault("register", []).extend(_unit(d, b, len(extents)) for d, b in missing)
    result = LinearLayout(bases, dict(zip(names, padded)))
    return TileLayout(tuple(extents), result) if result.is_surjective() else None


def _lift(vector: dict[str, int], dims: list[int], rank: int) -> tuple[int, ...]:
    """A fragment basis vector as a vector over the nest's dims (its dim a is the nest's dims[a])."""
    out = [0] * rank
    for a, d in enumerate(dims):
        out[d] = vector[f"dim{a}"]
    return tuple(out)


def _unit(dim: int, bit: int, rank: int) -> tuple[int, ...]:
    out = [0] * rank
    out[dim] = 1 << bit
    return tuple(out)


def _widest_access_dtype(nest: Nest):
    loads = [n for n in _walk(nest.outer) if isinstance(n, (E.BufferLoad, S.BufferStore))]
    if not loads:
        return None
    return max((n.buffer.dtype for n in loads), key=lambda d: d.bytes)


def _walk(node):
    from tilecraft.ir.visitor import walk

    return walk(node)


class _Annotate(BufferKeepingMutator):
    def __init__(self, inference: Inference) -> None:
        super().__init__()
        self.inf = inference
        self.nests = {id(n.outer): n for n in inference.found.nests}

    def mutate_AnnotateLayout(self, s: S.AnnotateLayout) -> S.Stmt:
        # the user's T.Fragment is now the fragment's decided layout, annotated at its allocation
        return S.SeqStmt(()) if isinstance(s.layout, Fragment) else s

    def mutate_Allocate(self, s: S.Allocate) -> S.Stmt:
        body = self.mutate(s.body)
        for view in [v for v in self.inf.views if v.base is s.buffer]:  # the fragment's views, in its scope
            body = S.seq(S.AnnotateLayout(view, self.inf.known(view), span=s.span), body)
        layout = self.inf.known(s.buffer) or self.inf.shared.get(id(s.buffer))
        if layout is not None:
            body = S.seq(S.AnnotateLayout(s.buffer, layout, span=s.span), body)
        return S.Allocate(s.buffer, body, span=s.span)

    def mutate_For(self, s: S.For) -> S.Stmt:
        nest = self.nests.get(id(s))
        new = self.generic_mutate(s)
        if nest is not None:
            annotations = tuple(kv for kv in new.annotations if kv[0] != "layout") + (
                ("layout", nest.layout),
            )
            new = dataclasses.replace(new, annotations=annotations)
        return new


def fragment_views(body: S.Stmt) -> list[Buffer]:
    """The views of fragments `body` uses (`T.reshape` of a fragment), in order of first use."""
    found: dict[int, Buffer] = {}
    for n in walk(body):
        if isinstance(n, Buffer) and n.base is not None and n.scope == FRAGMENT:
            found.setdefault(id(n), n)
    return list(found.values())


def kernel_threads(launch: S.KernelLaunch, target, simt: SimtTarget) -> int:
    """The block's thread count: one dimension, whole thread groups (warps), from one group to the target's
    maximum. A count that is not a power of two (96) spreads block-wide tiles over the largest power of
    two below it, the other threads mirroring some of those (transform/thread_groups.py)."""
    threads = 1
    for t in launch.threads:
        threads *= t
    low, high = simt.width, simt.max_threads
    if len(launch.threads) == 1 and 1 <= threads <= high and not _lays_out_tiles(launch):
        return threads  # per-thread code alone: any block size the target launches
    if len(launch.threads) != 1 or threads % low or not low <= threads <= high:
        raise LoweringError(
            f"this target needs `threads` to be one number of threads, a multiple of {low} between {low} "
            f"and {high}, got {launch.threads}",
            launch.span,
            f"use threads=128 (or another multiple of {low})",
            target=target,
        )
    return threads


def _lays_out_tiles(launch: S.KernelLaunch) -> bool:
    """Whether the launch has code whose work is spread over its threads by layouts: fragments, T.Parallel
    nests, tile ops other than those of a thread's own storage (T.alloc_local / T.alloc_var) and scalar
    atomics. Per-thread code alone runs on blocks of any size."""
    from tilecraft.transform.uniformity import PER_THREAD_SCOPES

    for n in walk(launch.body):
        if isinstance(n, S.Allocate) and n.buffer.scope == FRAGMENT:
            return True
        if isinstance(n, S.For) and n.kind is S.ForKind.PARALLEL:
            return True
        if isinstance(n, S.AtomicOp) and not isinstance(n.value, BufferRegion):
            continue
        if isinstance(n, S.TileOp):
            regions = [r for r in walk(n) if isinstance(r, BufferRegion)]
            if not any(r.buffer.scope in PER_THREAD_SCOPES for r in regions):
                return True
    return False


class _Groups:
    """The thread group of every statement of a kernel, and of every fragment: the group of the code that
    uses it, which must be one (a fragment lives in its group's registers)."""

    def __init__(self, launch: S.KernelLaunch, width: int, target) -> None:
        self.by_statement: dict[int, ThreadGroup] = {}
        self.fragments: dict[int, tuple[ThreadGroup, S.Stmt]] = {}
        for stmt, group in groups_of(launch, width, target):
            self.by_statement[id(stmt)] = group
            for buf in _fragments_used(stmt):
                self._use(buf, group, stmt, target)
        self.block = block_group(launch)

    def _use(self, buf: Buffer, group: ThreadGroup, stmt: S.Stmt, target) -> None:
        first = self.fragments.setdefault(id(buf), (group, stmt))
        if first[0] != group:
            where = f" (line {first[1].span.line})" if first[1].span else ""
            raise LoweringError(
                f"fragment {buf.name} is used by two thread groups: {first[0]}{where} and {group}; a fragment "
                "lives in the registers of one group",
                stmt.span,
                "give each thread group its own fragments, and pass values between groups through shared memory",
                target=target,
            )

    def span(self, stmt: S.Stmt) -> int:
        """The threads tile layouts of the statement's group spread over."""
        return self.by_statement.get(id(stmt), self.block).span

    def fragment_span(self, buf: Buffer) -> int:
        group = self.fragments.get(id(buf), (self.block, None))[0]
        return group.span


def _fragments_used(stmt: S.Stmt):
    """The fragments a statement names in its own fields (a tile op's regions, a store's buffer, loads),
    not in the statements it holds; an allocation is no use."""
    if isinstance(stmt, S.Allocate):
        return
    for f in dataclasses.fields(stmt):
        value = getattr(stmt, f.name)
        if f.name == "span" or isinstance(value, S.Stmt):
            continue
        if isinstance(value, tuple) and any(isinstance(x, S.Stmt) for x in value):
            continue
        for n in _walk(value):
            if isinstance(n, Buffer) and n.scope == FRAGMENT:
                yield n


def _infer(launch: S.KernelLaunch, target, simt: SimtTarget, strict: StrictLayouts | None) -> S.Stmt:
    threads = kernel_threads(launch, target, simt)
    inference = Inference(launch, threads, target, simt, strict)
    inference.run()
    return dataclasses.replace(launch, body=_Annotate(inference).mutate(launch.body))


def infer_layouts(simt: SimtFacts, strict: StrictLayouts | None = None):
    """The `infer-layouts` pass, for the backend's thread groups (`simt`) and with its strict layouts."""

    @module_pass("infer-layouts")
    def run(mod: IRModule, ctx) -> IRModule:
        """Every fragment has a layout annotation and every T.Parallel nest a thread partition."""
        facts = simt(ctx.target)
        return map_launches(mod, lambda launch: _infer(launch, ctx.target, facts, strict))

    return run
