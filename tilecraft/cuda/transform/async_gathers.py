"""async-gathers: element gathers into shared memory inside a `T.Pipelined` loop become `cp.async`.

A `T.copy` into a shared tile is lowered to `cp.async` chunks (or TMA) and pipelined; a gather written as
a `T.Parallel` nest (T.im2col expands to one) is per-thread code after lower-to-threads: each thread
stores a few elements, one load and one guard at a time,

    for r in T.serial(8):                       # a thread's run of 8 consecutive columns
        k = r + (tx % 4) * 8 + k_iter * 32
        if h(k) >= 0 and ...:  tile[row, r + (tx % 4) * 8] = img[n, h(k), w(k), k % C]
        else:                  tile[row, r + (tx % 4) * 8] = 0

so the loop waits for every element before its gemm and nothing overlaps. This pass finds such runs and
proves, from the index arithmetic, that a run of V elements (V * element size = 16 or 4 bytes) is one
contiguous, aligned chunk on both sides and that the guard is the same for all of it; the run then
becomes one `cp.async` that zero-fills when the guard is false (`AsyncCopy.valid`), which the pipeline
pass stages like the chunks of a `T.copy`. What is decided follows from the arithmetic alone: the same
gather written with different loops or names gets the same code.

The proof writes the run's variable as `V * q + t` with `0 <= t < V` and tracks each subexpression as
`base + c * t` (base free of t, c a constant): a floor division or modulo by d keeps that form when the
base is a multiple of a divisor `a` of d with `c * (V - 1) < a` (no multiple of d falls inside the run),
a comparison `base + c * t < 0` when the base is a multiple of `a > c * (V - 1)`. Multiples are proved
by the analyzer (`base % a == 0`).
"""

from __future__ import annotations

import math

from tilecraft import settings
from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.ir import AsyncCopy
from tilecraft.cuda.shared_layout import SharedLayout
from tilecraft.cuda.storage import SHARED_SCOPES
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith.analyzer import Analyzer
from tilecraft.ir.buffer import Buffer, Range
from tilecraft.ir.function import IRModule
from tilecraft.ir.structural import structural_equal
from tilecraft.ir.visitor import BufferKeepingMutator, Visitor, substitute, walk

CHUNK_BYTES = (16, 4)  # the cp.async sizes the printer has, largest first
MAX_ALIGN = 1 << 12


@module_pass("async-gathers")
def async_gathers(mod: IRModule, ctx) -> IRModule:
    """Gathers into shared tiles in pipelined loops become zero-filling cp.async chunks."""
    out = []
    for f in mod.functions:
        finder = _SharedLayouts()
        finder.visit(f.body)
        out.append(f.with_body(_Rewrite(finder.layouts).mutate(f.body)))
    return mod.with_functions(out)


class _SharedLayouts(Visitor):
    def __init__(self) -> None:
        self.layouts: dict[int, SharedLayout] = {}

    def visit_AnnotateLayout(self, s: S.AnnotateLayout) -> None:
        if isinstance(s.layout, SharedLayout):
            self.layouts[id(s.buffer)] = s.layout


class _Rewrite(BufferKeepingMutator):
    def __init__(self, layouts: dict[int, SharedLayout]) -> None:
        super().__init__()
        self.layouts = layouts
        self.ranges: dict[E.Var, Range] = {}

    def mutate_For(self, s: S.For) -> S.Stmt:
        self.ranges[s.loop_var] = Range(s.min, s.extent)
        try:
            s = self.generic_mutate(s)
            if s.kind is not S.ForKind.PIPELINED or (S.annotation(s.annotations, "num_stages") or 0) < 2:
                return s
            body = [self._gather(x) for x in _stmts(s.body)]
        finally:
            self.ranges.pop(s.loop_var, None)
        return S.For(s.loop_var, s.min, s.extent, s.kind, S.seq(*body), s.annotations, span=s.span)

    def _gather(self, stmt: S.Stmt) -> S.Stmt:
        """`stmt` as cp.async chunks when it is a gather into a shared tile that qualifies, else itself."""
        nest = _Nest.of(stmt)
        if nest is None:
            return stmt
        rewritten, reason = _Chunks(nest, self.layouts, self.ranges).build()
        if rewritten is None:
            if reason is not None:
                settings.verbose_note(nest.store.span, f"a gather into {nest.store.buffer.name} in the "
                                      f"T.Pipelined loop stays synchronous: {reason}")  # fmt: skip
            return stmt
        return rewritten


def _stmts(body: S.Stmt) -> list[S.Stmt]:
    return list(body.stmts) if isinstance(body, S.SeqStmt) else [body]


class _Nest:
    """A statement of the form: serial loops (outermost first), let bindings, and one store of a global
    load into a shared buffer, either plain or `if guard: store else: store zero` at the same index."""

    def __init__(self, loops: list[S.For], store: S.BufferStore, guard: E.Expr | None) -> None:
        self.loops, self.store, self.guard = loops, store, guard

    @staticmethod
    def of(stmt: S.Stmt) -> _Nest | None:
        loops: list[S.For] = []
        binds: dict[E.Var, E.Expr] = {}
        while True:
            if isinstance(stmt, S.For) and stmt.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED):
                loops.append(stmt)
                stmt = stmt.body
            elif isinstance(stmt, S.LetStmt):
                binds[stmt.var] = substitute(stmt.value, binds)
                stmt = stmt.body
            else:
                break
        guard = None
        if isinstance(stmt, S.IfThenElse):
            store, zero = stmt.then_case, stmt.else_case
            if not (_is_store(store) and _is_store(zero) and _zero_of(zero, store)):
                return None
            guard = substitute(stmt.condition, binds)
        elif _is_store(stmt):
            store = stmt
        else:
            return None
        store = substitute(store, binds)
        if not (loops and store.buffer.scope in SHARED_SCOPES and isinstance(store.value, E.BufferLoad)):
            return None
        src = store.value.buffer
        if src.scope != "global" or src.dtype != store.buffer.dtype:
            return None
        return _Nest(loops, store, guard)


def _is_store(s) -> bool:
    return isinstance(s, S.BufferStore)


def _zero_of(zero: S.BufferStore, store: S.BufferStore) -> bool:
    return (
        zero.buffer is store.buffer
        and E.const_value(zero.value) == 0
        and len(zero.indices) == len(store.indices)
        and all(structural_equal(a, b) for a, b in zip(zero.indices, store.indices))
    )


class _Chunks:
    """The cp.async chunks of one gather nest, or why there are none."""

    def __init__(self, nest: _Nest, layouts: dict[int, SharedLayout], ranges: dict[E.Var, Range]) -> None:
        self.nest, self.layouts, self.ranges = nest, layouts, ranges

    def build(self) -> tuple[S.Stmt | None, str | None]:
        store, inner = self.nest.store, self.nest.loops[-1]
        dst, src = store.buffer, store.value.buffer
        if dst.strides or src.strides:
            return None, "a buffer with explicit strides"
        extent = E.const_value(inner.extent)
        if not isinstance(extent, int) or E.const_value(inner.min) != 0:
            return None, None
        layout = self.layouts.get(id(dst))
        if layout is None and any(not isinstance(E.const_value(d), int) for d in dst.shape):
            return None, None
        reason = None
        for chunk_bytes in CHUNK_BYTES:
            lanes = chunk_bytes // dst.dtype.bytes
            if lanes < 1 or chunk_bytes % dst.dtype.bytes or extent % lanes:
                continue
            built, reason = self._with_lanes(lanes, chunk_bytes, extent)
            if built is not None:
                return built, None
        return None, reason or "no run of 4 or 16 bytes fits the loop"

    def _with_lanes(self, lanes: int, chunk_bytes: int, extent: int) -> tuple[S.Stmt | None, str | None]:
        store, inner = self.nest.store, self.nest.loops[-1]
        q, t = E.Var(dt.int32, f"{inner.loop_var.name}_c"), E.Var(dt.int32, f"{inner.loop_var.name}_l")
        ranges = {**self.ranges, **{lp.loop_var: Range(lp.min, lp.extent) for lp in self.nest.loops[:-1]}}
        ranges[q] = Range(E.const(0), E.const(extent // lanes))
        ranges[t] = Range(E.const(0), E.const(lanes))
        run = _Run(t, lanes, Analyzer(ranges))
        split = {inner.loop_var: E.add(E.mul(q, lanes), t)}
        dst_flat = run.linear(substitute(_flat(store.buffer, store.indices), split))
        src_flat = run.linear(substitute(_flat(store.value.buffer, store.value.indices), split))
        if dst_flat is None or dst_flat[1] != 1 or src_flat is None or src_flat[1] != 1:
            return None, "the elements of a thread's run are not consecutive in both buffers"
        if not (run.multiple_of(dst_flat[0], lanes) and run.multiple_of(src_flat[0], lanes)):
            return None, f"a run of {lanes} elements does not start on a {chunk_bytes}-byte boundary"
        valid: E.Expr = E.const(True)
        if self.nest.guard is not None:
            guard = run.invariant(substitute(self.nest.guard, split))
            if guard is None:
                return None, "its guard is not the same for every element of a run"
            valid = guard
        layout = self.layouts.get(id(store.buffer))
        dst_offset = run.ana.simplify(E.cast(dst_flat[0], "int32"))
        if layout is not None:
            dst_offset = layout.physical(dst_offset)
        src_offset = run.ana.simplify(E.cast(src_flat[0], "int64"))
        copy = AsyncCopy(store.buffer, dst_offset, store.value.buffer, src_offset, chunk_bytes,
                         run.ana.simplify(valid), span=store.span)  # fmt: skip
        body: S.Stmt = copy
        if extent // lanes > 1:
            body = S.For(q, E.const(0), E.const(extent // lanes), S.ForKind.SERIAL, body, (("unroll", True),),
                         span=inner.span)  # fmt: skip
        else:
            body = substitute(body, {q: E.const(0)})
        for lp in reversed(self.nest.loops[:-1]):
            body = S.For(lp.loop_var, lp.min, lp.extent, lp.kind, body, lp.annotations, span=lp.span)
        return body, None


def _flat(buf: Buffer, indices) -> E.Expr:
    """The row-major element offset of `indices` in `buf`."""
    flat: E.Expr = E.const(0)
    for idx, dim in zip(indices, buf.shape):
        flat = E.add(E.mul(flat, dim), idx)
    return flat


class _Run:
    """Expressions over a run `t` in [0, lanes) as `base + c * t` (module docstring)."""

    def __init__(self, t: E.Var, lanes: int, ana: Analyzer) -> None:
        self.t, self.lanes, self.ana = t, lanes, ana

    def has_t(self, e: E.Expr) -> bool:
        return any(n is self.t for n in walk(e))

    def multiple_of(self, e: E.Expr, a: int) -> bool:
        return a <= 1 or self.ana.can_prove(E.compare(E.EQ, E.floormod(e, a), 0))

    def alignment(self, e: E.Expr, limit: int) -> int:
        """The largest power of two up to `limit` that `e` provably is a multiple of."""
        a = 1 << int(math.log2(max(1, limit)))
        while a > 1 and not self.multiple_of(e, a):
            a //= 2
        return a

    def linear(self, e: E.Expr) -> tuple[E.Expr, int] | None:
        if not self.has_t(e):
            return e, 0
        if e is self.t:
            return E.const(0), 1
        if isinstance(e, (E.Add, E.Sub)):
            a, b = self.linear(e.a), self.linear(e.b)
            if a is None or b is None:
                return None
            sign = 1 if isinstance(e, E.Add) else -1
            base = E.add(a[0], b[0]) if sign == 1 else E.sub(a[0], b[0])
            return base, a[1] + sign * b[1]
        if isinstance(e, E.Mul):
            for x, k in ((e.a, e.b), (e.b, e.a)):
                c = E.const_value(k)
                if isinstance(c, int):
                    inner = self.linear(x)
                    return None if inner is None else (E.mul(inner[0], c), inner[1] * c)
            return None
        if isinstance(e, (E.FloorDiv, E.FloorMod)):
            return self._division(e)
        if isinstance(e, E.Call):
            return self._bits(e)
        if isinstance(e, E.Cast) and e.dtype.is_integer and e.dtype.bits >= e.value.dtype.bits:
            inner = self.linear(e.value)
            return None if inner is None else (E.cast(inner[0], e.dtype), inner[1])
        return None

    def _bits(self, e: E.Call) -> tuple[E.Expr, int] | None:
        """Shifts and masks by constants, as the divisions they are on two's complement integers:
        `x >> s` is x // 2**s, `x & (2**s - 1)` is x % 2**s, `x << s` is x * 2**s."""
        if len(e.args) != 2 or not isinstance(E.const_value(e.args[1]), int) or E.const_value(e.args[1]) < 0:
            return None
        x, k = e.args[0], E.const_value(e.args[1])
        if e.op == "shift_right":
            return self._division(E.FloorDiv(e.dtype, x, E.const(1 << k, x.dtype)))
        if e.op == "shift_left":
            return self.linear(E.mul(x, 1 << k))
        if e.op == "bitwise_and" and k > 0 and k & (k + 1) == 0:
            return self._division(E.FloorMod(e.dtype, x, E.const(k + 1, x.dtype)))
        return None

    def _division(self, e: E.FloorDiv | E.FloorMod) -> tuple[E.Expr, int] | None:
        d = E.const_value(e.b)
        inner = self.linear(e.a)
        if inner is None or not isinstance(d, int) or d <= 0:
            return None
        base, c = inner
        div = isinstance(e, E.FloorDiv)
        op = E.floordiv if div else E.floormod
        if c == 0:
            return op(base, d), 0
        if c % d == 0:  # whole steps of d: the quotient moves by c / d, the remainder stays
            return (op(base, d), c // d) if div else (op(base, d), 0)
        reach = abs(c) * (self.lanes - 1)
        if c > 0 and reach < self.alignment(base, math.gcd(d, MAX_ALIGN)):
            return (op(base, d), 0) if div else (op(base, d), c)
        return None

    def invariant(self, cond: E.Expr) -> E.Expr | None:
        """`cond` with t = 0, when its value is the same for every t in the run; else None."""
        if not self.has_t(cond):
            return cond
        if isinstance(cond, (E.And, E.Or)):
            a, b = self.invariant(cond.a), self.invariant(cond.b)
            if a is None or b is None:
                return None
            return E.logical_and(a, b) if isinstance(cond, E.And) else E.logical_or(a, b)
        if isinstance(cond, E.Not):
            a = self.invariant(cond.a)
            return None if a is None else E.logical_not(a)
        if isinstance(cond, (E.LT, E.GE)):
            diff = self.linear(E.sub(cond.a, cond.b))
            if diff is None:
                return None
            base, c = diff
            if c == 0 or (c > 0 and c * (self.lanes - 1) < self.alignment(base, MAX_ALIGN)):
                return E.compare(type(cond), base, 0)
        return None
