"""From tile level to thread level: tile ops and T.Parallel nests become per-thread code, fragments
become per-thread register arrays.

Each T.Parallel nest runs as a loop over its layout's registers: register r of thread (lane, warp)
executes the iteration the layout maps it to. A fragment access inside it reads the register the
fragment's layout assigns to the same element in the same thread (a linear map of r that folds to a
constant once the loop is unrolled).

A dim indexed by an expression free of the nest's variables, which every thread holds whole (`lse[k, i]`,
k a loop counter), is read from the thread's own registers too (`_held_dims_register`).

A read no thread-local register can serve (the element lives in another thread's registers: a row
vector read by a nest partitioned differently, an index that does not follow the layout) is a
broadcast through shared memory: right before the nest (or the statement) the fragment's owners store
it into a shared copy, and the reads load from that copy; `insert-barriers` separates the two. Writes
must stay local: a thread cannot write another thread's registers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from tilecraft.backend.pipeline import module_pass
from tilecraft.backend.simt import SimtFacts, SimtTarget
from tilecraft.errors import LoweringError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import (
    BufferKeepingMutator,
    Mutator,
    Visitor,
    free_vars,
    map_launches,
    substitute,
    walk,
)
from tilecraft.layout.fragment import fragment_dims
from tilecraft.layout.inference import (
    block_positions,
    fragment_views,
    kernel_threads,
    parallel_nest,
    power_of_two_factor,
    shifted_positions,
    var_positions,
)
from tilecraft.layout.linear import LinearLayout, log2
from tilecraft.layout.tile import TileLayout, blocked_layout, register_map
from tilecraft.transform.buffer_views import copies_through_views, lower_tile_views
from tilecraft.transform.reductions import cumsum_loops, reduce_loops
from tilecraft.transform.simt.broadcast import SCALAR_STATEMENTS, Copies, RemoteReads
from tilecraft.transform.simt.copy import lower_copy as element_wise_copy
from tilecraft.transform.simt.copy import lower_fill as element_wise_fill
from tilecraft.transform.thread_groups import ThreadGroup, branch_groups, check_group, tile_level
from tilecraft.transform.tile_loops import atomic_as_loops, copy_as_loops, fill_as_loops
from tilecraft.transform.uniformity import ThreadVarying
from tilecraft.transform.written import written_buffers

FRAGMENT = "local.fragment"


@dataclass
class ThreadContext:
    """What op lowering needs to know about the kernel being lowered; `simt` is the target's thread
    groups, lane exchange and access width."""

    target: object
    threads: int  # of the current thread group's layouts (its span)
    tid: E.Expr  # the thread the current group's layouts see (thread_groups.ThreadGroup.local_thread)
    simt: SimtTarget
    layouts: dict[int, TileLayout] = field(default_factory=dict)
    shared_layouts: dict[int, object] = field(default_factory=dict)
    registers: dict[int, Buffer] = field(default_factory=dict)
    pipelined_depth: int = 0
    in_nest: bool = False
    fresh: int = 0
    thread: E.Var | None = None  # the kernel's own thread index
    group: ThreadGroup | None = None  # the thread group whose code is being lowered
    primary: E.Expr | None = None  # true on the threads that write memory (not twins); None: all of them
    varying: ThreadVarying | None = None  # what differs between the kernel's threads (per-thread code)
    reducers: frozenset[int] = frozenset()  # the fragments T.finalize_reducer finalizes (T.alloc_reducer's)
    views: dict[int, list[Buffer]] = field(default_factory=dict)  # a fragment's views (T.reshape), by its id

    def enter(self, group: ThreadGroup) -> tuple:
        """Lower the code of `group` from now on; returns what `leave` restores."""
        saved = (self.group, self.threads, self.tid, self.primary)
        self.group, self.threads = group, group.span
        self.tid, self.primary = group.local_thread(self.thread), group.primary(self.thread)
        return saved

    def leave(self, saved: tuple) -> None:
        self.group, self.threads, self.tid, self.primary = saved

    @property
    def lane(self) -> E.Expr:
        return E.floormod(self.tid, self.simt.width)

    @property
    def warp(self) -> E.Expr:
        return E.floordiv(self.tid, self.simt.width)

    def blocked(self, shape: tuple[int, ...], dtype=None) -> TileLayout:
        """The default layout of a tile of `shape` over this kernel's threads."""
        return blocked_layout(shape, self.threads, self.simt, dtype)

    def layout(self, buf: Buffer, span=None) -> TileLayout:
        layout = self.layouts.get(id(buf))
        if layout is None:
            raise LoweringError(f"fragment {buf.name} has no layout", span or buf.span, target=self.target)
        return layout

    def registers_of(self, buf: Buffer) -> Buffer:
        """The register array a fragment became."""
        return self.registers[id(buf)]

    def var(self, name: str) -> E.Var:
        self.fresh += 1
        return E.Var(dt.int32, f"{name}{self.fresh}")

    def fail(self, message: str, span, hint: str | None = None):
        raise LoweringError(message, span, hint, target=self.target)


class _Layouts(Visitor):
    def __init__(self, ctx: ThreadContext) -> None:
        self.ctx = ctx

    def visit_AnnotateLayout(self, s: S.AnnotateLayout) -> None:
        if isinstance(s.layout, TileLayout):
            self.ctx.layouts[id(s.buffer)] = s.layout
        else:
            self.ctx.shared_layouts[id(s.buffer)] = s.layout


class LowerToThreads(RemoteReads, Mutator):
    def __init__(self, ctx: ThreadContext, op_table) -> None:
        super().__init__()
        self.ctx = ctx
        self.op_table = op_table
        self.nest: tuple[TileLayout, list[E.Var], E.Var] | None = None
        self._init_remote_reads()

    def mutate_Buffer(self, buf):
        return self.ctx.registers.get(id(buf), buf)

    # ------------------------------------------------------------------ structure

    def mutate_AnnotateLayout(self, s: S.AnnotateLayout) -> S.Stmt:
        if isinstance(s.layout, TileLayout):
            return S.SeqStmt(())
        return s

    def mutate_Allocate(self, s: S.Allocate) -> S.Stmt:
        buf = s.buffer
        if buf.scope != FRAGMENT:
            return S.Allocate(buf, self.mutate(s.body), span=s.span)
        layout = self.ctx.layout(buf, s.span)
        regs = Buffer(buf.name, (E.const(layout.num_registers),), buf.dtype, "local", span=buf.span)
        self.ctx.registers[id(buf)] = regs
        for view in self.ctx.views.get(id(buf), ()):  # a reshape holds each element in the same register
            self.ctx.registers[id(view)] = regs
        return S.Allocate(regs, self.mutate(s.body), span=s.span)

    def mutate_For(self, s: S.For) -> S.Stmt:
        if s.kind is S.ForKind.PARALLEL:
            return self._partition(s)
        copies = (
            self._shared_copies(self._remote_reads((s.min, s.extent)), s.span) if self.nest is None else {}
        )
        if copies:
            with self._staging(copies):
                s = dataclasses.replace(s, min=self.mutate(s.min), extent=self.mutate(s.extent))
        invariant = self._shared_copies(self._invariant_remote_reads(s), s.span)
        with self._staging(invariant), self._branch((s.min, s.extent)):
            loop = self._serial_loop(s)
        return self._broadcast({**copies, **invariant}, loop, s.span)

    def _invariant_remote_reads(self, loop: S.For) -> list[Buffer]:
        """The fragments that T.Parallel nests in `loop` read at elements other threads hold and that the
        loop does not write: broadcast once before the loop instead of before each nest in every
        iteration (mhc_pre's row sums read a gemm operand 4 columns at a time in a loop over 64 blocks).
        Not inside a nest or a branch on the thread (no barrier there), nor for nests under such a branch
        in the loop (they run on a thread group, whose layouts this scan does not see)."""
        if self.nest is not None or self.divergent:
            return []
        written = written_buffers(loop.body)
        found: dict[int, Buffer] = {}
        for nest in _uniform_nests(loop.body, self.ctx.thread):
            layout = S.annotation(nest.annotations, "layout")
            loops, body = parallel_nest(nest)
            saved = self.nest
            self.nest = (layout, [f.loop_var for f in loops], E.Var(dt.int32, "r"))
            try:
                remote = self._remote_reads(body)
            finally:
                self.nest = saved
            for buf in remote:
                if id(buf) not in written and id(buf) not in self.staged and id(buf) in self.ctx.registers:
                    found[id(buf)] = buf
        return list(found.values())

    def _serial_loop(self, s: S.For) -> S.Stmt:
        if s.kind is S.ForKind.PIPELINED and (S.annotation(s.annotations, "num_stages") or 0) >= 2:
            self.ctx.pipelined_depth += 1
            try:
                return self.generic_mutate(s)
            finally:
                self.ctx.pipelined_depth -= 1
        return self.generic_mutate(s)

    def mutate(self, node):
        if isinstance(node, S.TileOp) and self._per_thread_op(node):
            return self.mutate(per_thread_loops(node, self.ctx))
        if copies_through_views(node):
            # a backend's wide and bulk copies address a buffer in its own layout and elements; a view's
            # elements are its base's, which an element-wise copy reaches through lower-buffer-views
            lower = element_wise_copy if isinstance(node, S.Copy) else element_wise_fill
            return self._primary_writes(self.mutate(lower(node, self.ctx)))
        if isinstance(node, S.TileOp):
            lower = self.op_table.get(type(node))
            if lower is None:
                supported = ", ".join(sorted(t.__name__ for t in self.op_table))
                self.ctx.fail(f"tile op {type(node).__name__} is not supported on this target", node.span,
                              f"supported tile ops: {supported}")  # fmt: skip
            return self._primary_writes(self.mutate(lower(node, self.ctx)))
        if isinstance(node, S.IfThenElse) and self.nest is None:
            sides = self._group_sides(node)
            if sides is not None:
                return self._group_branch(node, sides)
        if isinstance(node, SCALAR_STATEMENTS) and self.nest is None:
            return self._scalar_statement(node)
        return super().mutate(node)

    # ------------------------------------------------------------------ thread groups

    def _group_sides(self, s: S.IfThenElse) -> tuple[ThreadGroup | None, ThreadGroup | None] | None:
        """For a branch that splits the current group into thread groups running tile-level code, the group
        of each side (None for a side without tile-level code, which stays per-thread code)."""
        if self.ctx.thread is None or self.ctx.group is None:
            return None
        sides = branch_groups(s, self.ctx.thread, self.ctx.group)
        if sides is None:
            return None
        out = []
        for body, threads in ((s.then_case, sides[0]), (s.else_case, sides[1])):
            runs_tiles = body is not None and threads and tile_level(body)
            out.append(
                check_group(threads, self.ctx.simt.width, s.span, self.ctx.target) if runs_tiles else None
            )
        return (out[0], out[1]) if out[0] is not None or out[1] is not None else None

    def _group_branch(self, s: S.IfThenElse, sides) -> S.Stmt:
        """Each side lowered as the tile-level code of its group (scalar sides as per-thread code)."""
        cases = []
        for body, group in ((s.then_case, sides[0]), (s.else_case, sides[1])):
            if body is None or group is None:
                with self._branch(s.condition):
                    cases.append(None if body is None else self.mutate(body))
                continue
            saved = self.ctx.enter(group)
            try:
                cases.append(self.mutate(body))
            finally:
                self.ctx.leave(saved)
        return dataclasses.replace(s, then_case=cases[0], else_case=cases[1])

    def _per_thread_op(self, op: S.TileOp) -> bool:
        """A tile op of per-thread code (transform/uniformity.py): each thread does all of it, and no twin
        is skipped (the twins of a block that is not a power of two mirror tile-level code only)."""
        return self.ctx.varying is not None and self.ctx.varying.per_thread_tile_op(op)

    def _primary_writes(self, lowered: S.Stmt) -> S.Stmt:
        """In a group with twins, only the threads that are no twin write memory (a twin computes what the
        thread it mirrors computes, and an atomic or a store done twice would be done twice)."""
        if self.ctx.primary is None:
            return lowered
        return _GuardMemoryWrites(self.ctx.primary).mutate(lowered)

    def mutate_plain(self, node):
        """`mutate` without the scan for remote reads (done by the caller)."""
        return super().mutate(node)

    def mutate_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        with self._branch(s.condition):
            return self.generic_mutate(s)

    def mutate_While(self, s: S.While) -> S.Stmt:
        remote = self._remote_reads(s.condition)
        if remote:
            # A copy made before the loop would go stale; one per iteration would need the condition split.
            self.ctx.fail(
                f"the condition of this while loop reads fragment {remote[0].name} at an element the thread "
                "does not hold",
                s.span,
                "read the element into a T.alloc_var before the loop and at the end of its body, and test that",
            )
        with self._branch(s.condition):
            return self.generic_mutate(s)

    # ------------------------------------------------------------------ T.Parallel nests

    def _partition(self, s: S.For) -> S.Stmt:
        loops, body = parallel_nest(s)
        layout = S.annotation(s.annotations, "layout")
        if layout is None:
            self.ctx.fail("T.Parallel nest without a layout (infer-layouts must run first)", s.span)
        reg = self.ctx.var("r")
        coords = layout.coords(reg, self.ctx.lane, self.ctx.warp)
        loop_vars = [f.loop_var for f in loops]
        saved = self.nest
        self.nest = (layout, loop_vars, reg)
        self.ctx.in_nest = True
        copies: Copies = {}
        try:
            remote = [buf for buf in self._remote_reads(body) if id(buf) not in self.staged]
            copies = self._shared_copies(remote, s.span)
            with self._staging(copies):
                inner = self.mutate(body)
        finally:
            self.nest = saved
            self.ctx.in_nest = saved is not None
        return self._broadcast(copies, self._per_register(s, layout, reg, coords, loop_vars, inner), s.span)

    def _per_register(self, s: S.For, layout: TileLayout, reg: E.Var, coords, loop_vars, inner) -> S.Stmt:
        """The nest's body run for each register of the thread's share of the iterations."""
        inner = substitute(inner, dict(zip(loop_vars, coords)))
        guard = layout.in_bounds(coords)
        replica = self._replica_guard(layout, inner)
        if replica is not None:
            inner = _GuardMemoryWrites(replica).mutate(inner)
        inner = self._one_contribution(layout, inner)
        if guard is not None:
            inner = S.IfThenElse(guard, inner, span=s.span)
        return S.For(reg, E.const(0), E.const(layout.num_registers), S.ForKind.SERIAL, inner,
                     (("unroll", True),), span=s.span)  # fmt: skip

    def _replica_guard(self, layout: TileLayout, body: S.Stmt) -> E.Expr | None:
        """The one thread of each replica group that writes memory (registers are written by all); in a
        group with twins, of the threads that are no twin."""
        if not _writes_memory(body):
            return None
        return self._replica_condition(layout)

    def _one_contribution(self, layout: TileLayout, body: S.Stmt) -> S.Stmt:
        """A reducer's registers are updated (a store whose value reads the reducer) by one thread of each
        replica group of the nest (the others run the same iterations): the reducer's other copies keep
        the value T.finalize_reducer combines with, so each iteration counts once. Stores that do not
        read it (T.clear, T.fill) set every copy."""
        registers = {id(self.ctx.registers[b]) for b in self.ctx.reducers if b in self.ctx.registers}
        cond = self._replica_condition(layout) if registers else None
        if cond is None or not any(isinstance(n, S.BufferStore) and id(n.buffer) in registers for n in walk(body)):
            return body
        return _GuardStores(cond, registers).mutate(body)

    def _replica_condition(self, layout: TileLayout) -> E.Expr | None:
        lanes, warps = layout.replica_mask()
        if not (lanes or warps or self.ctx.primary is not None):
            return None
        cond = self.ctx.primary
        for value, mask in ((self.ctx.lane, lanes), (self.ctx.warp, warps)):
            if mask:
                term = E.compare(E.EQ, E.int_call("bitwise_and", value, mask), 0)
                cond = term if cond is None else E.logical_and(cond, term)
        return cond

    # ------------------------------------------------------------------ fragment accesses

    def _local_register(self, buf: Buffer, indices) -> E.Expr | None:
        """The register of the reading thread that holds `buf[indices]`, or None when another thread
        may hold it."""
        layout = self.ctx.layout(buf)
        if self.nest is not None:
            nest_layout, loop_vars, reg = self.nest
            dims = _positions(loop_vars, indices)
            offsets = None
            if dims is None:
                found = block_positions(loop_vars, nest_layout.shape, indices)
                dims, offsets = found if found is not None else (None, None)
            shifts = None
            if dims is None and (shifted := shifted_positions(loop_vars, nest_layout.shape, indices)) is not None:
                dims, shifts = shifted
            if dims is not None:
                mapping = register_map(nest_layout, dims, layout, shifts)
                extra = _block_register(layout, offsets) if offsets is not None else None
                if mapping is not None and (offsets is None or extra is not None):
                    out = mapping.apply_expr(register=reg, lane=self.ctx.lane, warp=self.ctx.warp)
                    return (
                        out["register"]
                        if extra is None
                        else E.int_call("bitwise_xor", out["register"], extra)
                    )
            held = _held_dims_register(layout, nest_layout, loop_vars, indices, (reg, self.ctx.lane, self.ctx.warp))
            if held is not None:
                return held
        return _owned_register(layout, indices)

    def mutate_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        indices = tuple(self.mutate(i) for i in e.indices)
        if e.buffer.scope != FRAGMENT:
            return E.BufferLoad(e.dtype, self.mutate_Buffer(e.buffer), indices)
        index = self._local_register(e.buffer, e.indices)
        if index is not None:
            return E.BufferLoad(e.dtype, self.ctx.registers[id(e.buffer)], (index,))
        staged = self.staged.get(id(e.buffer))
        if staged is None:  # every nest and statement is scanned, and its remote reads staged, first
            raise AssertionError(f"a read of fragment {e.buffer.name} another thread holds was not broadcast")
        return E.BufferLoad(e.dtype, staged[1], indices)

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        value = self.mutate(s.value)
        indices = tuple(self.mutate(i) for i in s.indices)
        if s.buffer.scope != FRAGMENT:
            return S.BufferStore(self.mutate_Buffer(s.buffer), value, indices, span=s.span)
        index = self._local_register(s.buffer, s.indices)
        if index is None:
            self.ctx.fail(
                f"fragment {s.buffer.name} is written at an element the writing thread does not hold (the "
                "indices do not follow its layout); a thread cannot write another thread's registers",
                s.span,
                "write fragments in a T.Parallel loop indexed by its variables, or write a shared buffer and "
                "T.copy it into the fragment",
            )
        return S.BufferStore(self.ctx.registers[id(s.buffer)], value, (index,), span=s.span)


def _uniform_nests(body: S.Stmt, thread: E.Var | None) -> list[S.For]:
    """The outer loops of the T.Parallel nests in `body` with a layout, outside branches on `thread`."""
    found: list[S.For] = []
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, S.For) and node.kind is S.ForKind.PARALLEL:
            if S.annotation(node.annotations, "layout") is not None:
                found.append(node)
            continue
        if (
            isinstance(node, S.IfThenElse)
            and thread is not None
            and any(v is thread for v in free_vars(node.condition))
        ):
            continue
        if isinstance(node, S.Stmt):
            stack.extend(v for v in _child_stmts(node))
    return found


def _child_stmts(node: S.Stmt) -> list[S.Stmt]:
    out = []
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if isinstance(value, S.Stmt):
            out.append(value)
        elif isinstance(value, tuple):
            out.extend(v for v in value if isinstance(v, S.Stmt))
    return out


def _block_register(layout: TileLayout, offsets: list[E.Expr | None]) -> E.Expr | None:
    """For an access `F[v + c, ...]` of an aligned block at offsets `c` (`block_positions`): the register
    that holds the block's offset itself in every thread, to XOR with the register of `F[v, ...]` (F is
    linear over the bits, and c shares no bit with v); None when offsets reach elements that are not
    in registers alone (which threads hold a block depends on the block)."""
    names = layout.linear.out_names
    registers = layout.linear.sublayout(["register"], names)
    solve = registers.pseudo_invert()
    for name, offset in zip(names, offsets):  # every element bit an offset may set is a register's
        if offset is None:
            continue
        for bit in range(log2(min(power_of_two_factor(offset), layout.linear.out_size(name))),
                         layout.linear.out_bits(name)):  # fmt: skip
            unit = {n: (1 << bit if n == name else 0) for n in names}
            if registers.apply(**solve.apply(**unit)) != unit:
                return None
    values = {name: (offset if offset is not None else E.const(0)) for name, offset in zip(names, offsets)}
    return solve.apply_expr(**values)["register"]


def _held_dims_register(layout: TileLayout, nest: TileLayout, loop_vars, indices, inputs) -> E.Expr | None:
    """The register of `F[indices]` for an access that indexes some dims of F by the nest's variables
    and the others by any expression free of them (`lse[k, i]`: a loop counter k, and i of the nest),
    where every thread holds all of those other dims (no lane or warp moves along them, no register
    moves along both kinds): the nest's variables find the thread's own part, the expression selects
    the register within it (a runtime index where it is not constant). None where that does not hold."""
    linear, names = layout.linear, fragment_dims(len(layout.shape))
    ids = [id(v) for v in loop_vars]
    var_dims, positions, fixed = [], [], {}
    for d, idx in enumerate(indices):
        if isinstance(idx, E.Var) and id(idx) in ids:
            var_dims.append(d)
            positions.append(ids.index(id(idx)))
        elif any(id(v) in ids for v in free_vars(idx)):
            return None
        else:
            fixed[names[d]] = idx
    if not fixed or not var_dims or len(set(positions)) != len(positions):
        return None
    var_names = [names[d] for d in var_dims]

    def part(name: str, bit: int, outs) -> tuple[int, ...]:
        return tuple(linear.basis(name, bit)[n] for n in outs)

    if any(any(part(n, b, fixed)) for n in ("lane", "warp") for b in range(linear.in_bits(n))):
        return None
    var_bits, fixed_bits = [], []
    for b in range(linear.in_bits("register")):
        on_fixed, on_var = any(part("register", b, fixed)), any(part("register", b, var_names))
        if on_fixed and on_var:
            return None
        (fixed_bits if on_fixed else var_bits).append(b)
    own = LinearLayout(
        {"register": [part("register", b, var_names) for b in var_bits],
         **{n: [part(n, b, var_names) for b in range(linear.in_bits(n))] for n in ("lane", "warp")}},
        {n: linear.out_size(n) for n in var_names},
    ).rename_outs(dict(zip(var_names, fragment_dims(len(var_names)))))  # fmt: skip
    mapping = register_map(nest, positions, TileLayout(tuple(layout.shape[d] for d in var_dims), own))
    held = LinearLayout({"register": [part("register", b, fixed) for b in fixed_bits]},
                        {n: linear.out_size(n) for n in fixed})  # fmt: skip
    if mapping is None or not held.is_surjective():
        return None
    reg, lane, warp = inputs
    own_register = mapping.apply_expr(register=reg, lane=lane, warp=warp)["register"]
    held_register = held.pseudo_invert().apply_expr(**fixed)["register"]
    own_register, held_register = _spread(own_register, var_bits), _spread(held_register, fixed_bits)
    if E.const_value(own_register) == 0:
        return held_register
    return E.int_call("bitwise_or", own_register, held_register)


def _spread(value: E.Expr, positions: list[int]) -> E.Expr:
    """`value`'s bit j moved to bit positions[j]."""
    if positions == list(range(len(positions))):
        return value
    out: E.Expr = E.const(0, value.dtype)
    for j, p in enumerate(positions):
        bit = E.int_call("bitwise_and", E.int_call("shift_right", value, j), 1)
        out = E.int_call("bitwise_or", out, E.int_call("shift_left", bit, p))
    return out


def _owned_register(layout: TileLayout, indices) -> E.Expr | None:
    """The register of an element every thread holds (a layout that does not depend on the thread)."""
    linear = layout.linear
    for name in ("lane", "warp"):
        if name in linear.in_names and any(
            any(linear.basis(name, b).values()) for b in range(linear.in_bits(name))
        ):
            return None
    inverse = linear.pseudo_invert()
    values = {name: idx for name, idx in zip(inverse.in_names, indices)}
    return inverse.apply_expr(**values)["register"]


def _positions(loop_vars: list[E.Var], indices) -> list[int] | None:
    class _Nest:
        vars = loop_vars

    return var_positions(_Nest, indices)


class _GuardStores(BufferKeepingMutator):
    """Each update of one of `buffers` (ids): a store whose value reads the buffer, runs under `cond`."""

    def __init__(self, cond: E.Expr, buffers: set[int]) -> None:
        super().__init__()
        self.cond = cond
        self.buffers = buffers

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        reads = any(isinstance(n, E.BufferLoad) and n.buffer is s.buffer for n in walk(s.value))
        if id(s.buffer) in self.buffers and reads:
            return S.IfThenElse(self.cond, s, span=s.span)
        return s


class _GuardMemoryWrites(BufferKeepingMutator):
    """Each write outside registers runs under `cond`; register writes stay unguarded, because every
    thread that replicates a fragment element must hold its value (a later loop reads it there)."""

    def __init__(self, cond: E.Expr) -> None:
        super().__init__()
        self.cond = cond

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        if s.buffer.scope in (FRAGMENT, "local", "local.var"):
            return s
        return S.IfThenElse(self.cond, s, span=s.span)

    def _guarded(self, s: S.Stmt) -> S.Stmt:
        return S.IfThenElse(self.cond, s, span=s.span)

    mutate_AtomicUpdate = _guarded
    mutate_Print = _guarded


def per_thread_loops(op: S.TileOp, ctx) -> S.Stmt:
    """The tile op as loops one thread runs alone (per-thread code)."""
    if isinstance(op, S.Copy):
        nest = copy_as_loops(op)
    elif isinstance(op, S.Fill):
        nest = fill_as_loops(op)
    elif isinstance(op, S.Reduce):
        nest = reduce_loops(op)
    elif isinstance(op, S.Cumsum):
        nest = cumsum_loops(op)
    elif isinstance(op, S.AtomicOp):
        nest = atomic_as_loops(op)
    else:
        ctx.fail(f"{type(op).__name__} of a thread's own buffers (per-thread code) is not supported on this target",
                 op.span, "write the per-thread loop with T.serial, or use fragments and tile-level code")  # fmt: skip
    return _Serial().mutate(nest)


class _Serial(BufferKeepingMutator):
    def mutate_For(self, s: S.For) -> S.Stmt:
        s = self.generic_mutate(s)
        if s.kind is not S.ForKind.PARALLEL:
            return s
        # a static trip count unrolls (as register loops do), so a thread's small array stays in registers
        static = isinstance(E.const_value(s.extent), int)
        return dataclasses.replace(s, kind=S.ForKind.UNROLLED if static else S.ForKind.SERIAL, annotations=())


def _writes_memory(body: S.Stmt) -> bool:
    from tilecraft.ir.lowered import AtomicUpdate

    for n in walk(body):
        if isinstance(n, S.BufferStore) and n.buffer.scope not in (FRAGMENT, "local", "local.var"):
            return True
        if isinstance(n, (AtomicUpdate, S.Print)):
            return True
    return False


def _lower(launch: S.KernelLaunch, target, op_table, simt: SimtTarget) -> S.Stmt:
    threads = kernel_threads(launch, target, simt)
    ctx = ThreadContext(
        target, threads, launch.thread_vars[0], simt, thread=launch.thread_vars[0]
    )
    ctx.varying = ThreadVarying(launch)
    ctx.reducers = frozenset(id(n.buffer) for n in walk(launch.body) if isinstance(n, S.FinalizeReducer))
    for view in fragment_views(launch.body):
        ctx.views.setdefault(id(view.base), []).append(view)
    ctx.enter(ThreadGroup(0, threads))
    _Layouts(ctx).visit(launch.body)
    body = LowerToThreads(ctx, op_table).mutate(launch.body)
    return dataclasses.replace(launch, body=body)


def lower_to_threads(op_table, simt: SimtFacts):
    """The `lower-to-threads` pass with the backend's op table, for the thread groups `simt(target)`
    describes (their width, and the lane exchange cross-thread reductions use where there is one)."""

    @module_pass("lower-to-threads")
    def run(mod: IRModule, ctx) -> IRModule:
        """Tile ops and T.Parallel nests are per-thread code; fragments are per-thread register arrays (a
        fragment's views its registers); accesses through views of shared tiles and local arrays address
        the tiles, before later passes multiply-buffer or re-scope them."""
        facts = simt(ctx.target)
        mod = map_launches(mod, lambda launch: _lower(launch, ctx.target, op_table, facts))
        return mod.with_functions(lower_tile_views(f, ctx.target) for f in mod.functions)

    return run
