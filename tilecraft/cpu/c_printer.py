"""Prints lowered tile IR as C for the CPU target.

On-chip buffers live in the block's scratch area (offsets planned by tilecraft/cpu/storage.py);
`local.var` buffers are plain C scalars; with bounds checks on, every access is checked and the first
bad one is recorded with its kernel line.
"""

from __future__ import annotations

from tilecraft.codegen.c_family import MATH32, BoundsSite, CFamilyPrinter, is_packed, value_type
from tilecraft.cpu.ir import CheckFailed, MatmulCall
from tilecraft.cpu.storage import SCRATCH_SCOPES
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.op import FMAX, FMIN


class CPrinter(CFamilyPrinter):
    """Writes C statements and expressions for one CPU function."""

    target_name = "the CPU target"
    arena_scopes = SCRATCH_SCOPES
    print_flush = True  # blocks run on worker threads; a crash must not swallow what was printed

    # the per-call report each check writes into (tc_cpu.h)
    bounds_report = "tc_report"
    # tc_cpu.h's exp and exp2 vectorize in `omp simd` loops; the C library's do not
    math32 = {**MATH32, "exp": "tc_expf", "exp2": "tc_exp2f"}

    def __init__(
        self, bounds_check: bool = False, sites: list[BoundsSite] | None = None, offsets: dict | None = None
    ) -> None:
        super().__init__(offsets)
        self.check_bounds(bounds_check, sites)

    # ------------------------------------------------------------------ statements

    def loop_pragma(self, s: S.For) -> str | None:
        reduction = S.annotation(s.annotations, "reduction")
        if reduction is not None:
            target = _reduction_target(s.body)
            if target is None:
                return None
            op = {"sum": "+", "abssum": "+", "max": "max", "absmax": "max", "min": "min"}[reduction]
            return f"#pragma omp simd reduction({op}:{self.name(target)})"
        if s.kind is S.ForKind.UNROLLED:
            return "TC_UNROLL"
        if s.kind in (S.ForKind.PARALLEL, S.ForKind.VECTORIZED) and _simd_safe(s.body):
            return "#pragma omp simd"
        return None

    def _s_For(self, s: S.For) -> None:
        extremum = _float_extremum(s)
        if extremum is None:
            super()._s_For(s)
        elif isinstance(extremum[0].value, E.Call):
            self._nan_ignoring_extremum_loop(s, *extremum)
        else:
            self._float_extremum_loop(s, *extremum)

    def _nan_ignoring_extremum_loop(self, s: S.For, update: S.BufferStore, pick: str) -> None:
        """An fmax / fmin reduction (NaN ignored), vectorized as OpenMP's max/min over the non-NaN
        elements (a NaN one loses every comparison) with a flag for whether there was one: the result is
        NaN only where neither the accumulator nor any element was a number, as fmax's is."""
        acc = self.name(update.buffer)
        value = update.value
        element = value.args[1] if _is_load_of(value.args[0], update.buffer) else value.args[0]
        var = self.name(s.loop_var)
        self.mark_nonneg(s.loop_var)
        start, end = self.expr(s.min), self.expr(E.add(s.min, s.extent))
        ctype = value_type(value.dtype)
        worst = f"({'-' if pick == 'max' else ''}({ctype})TC_INFINITY)"
        self.line("{")
        self.indent += 1
        self.line(f"int tc_seen = {acc} == {acc};")
        self.line(f"{ctype} tc_best = tc_seen ? {acc} : {worst};")
        self.line(f"#pragma omp simd reduction({pick}:tc_best) reduction(|:tc_seen)")
        self.line(f"for ({value_type(s.loop_var.dtype)} {var} = {start}; {var} < {end}; ++{var}) {{")
        self.indent += 1
        saved, self.span = self.span, update.span or self.span
        self.line(f"const {ctype} tc_x = {self.expr(element)};")
        self.span = saved
        self.line(f"tc_best = tc_x {'>' if pick == 'max' else '<'} tc_best ? tc_x : tc_best;")
        self.line("tc_seen |= tc_x == tc_x;")
        self.indent -= 1
        self.line("}")
        self.line(f"{acc} = tc_seen ? tc_best : {'TC_NAN' if ctype == 'float' else '((double)TC_NAN)'};")
        self.indent -= 1
        self.line("}")

    def _float_extremum_loop(self, s: S.For, update: S.BufferStore, pick: str) -> None:
        """A float max/min reduction, vectorized as OpenMP's own max/min (one maxps/minps per vector)
        with a NaN flag beside it: the header's NaN-propagating max inside the loop would put its test on
        the accumulator's dependency chain and run four times slower. The flag restores NumPy's
        semantics: NaN as soon as the accumulator or an element is NaN."""
        acc = self.name(update.buffer)
        value = update.value
        element = value.b if _is_load_of(value.a, update.buffer) else value.a
        var = self.name(s.loop_var)
        self.mark_nonneg(s.loop_var)
        start, end = self.expr(s.min), self.expr(E.add(s.min, s.extent))
        self.line("{")
        self.indent += 1
        self.line(f"int tc_nan = {acc} != {acc};")
        self.line(f"#pragma omp simd reduction({pick}:{acc}) reduction(|:tc_nan)")
        self.line(f"for ({value_type(s.loop_var.dtype)} {var} = {start}; {var} < {end}; ++{var}) {{")
        self.indent += 1
        saved, self.span = self.span, update.span or self.span
        self.line(f"const {value_type(value.dtype)} tc_x = {self.expr(element)};")
        self.span = saved
        self.line(f"{acc} = {acc} {'>' if pick == 'max' else '<'} tc_x ? {acc} : tc_x;")
        self.line("tc_nan |= tc_x != tc_x;")
        self.indent -= 1
        self.line("}")
        self.line(f"if (tc_nan) {acc} = TC_NAN;")
        self.indent -= 1
        self.line("}")

    def arena_pointer(self, buf: Buffer, ctype: str, offset: int) -> str:
        return f"{ctype}* const {self.name(buf)} = ({ctype}*)(tc_scratch + {offset});"

    def assumption(self, condition: E.Expr, text: str) -> None:
        """T.assume: where false, the call's failure (as a failed T.device_assert is), and the block
        stops there, since the code after it may rely on it (an index it bounds). Loops holding it are
        not `omp simd` (_simd_safe), so the return leaves no OpenMP construct."""
        self.sites.append(BoundsSite("", self.span, f"Assume: {text}"))
        failed = f"(void)tc_in_bounds(0, 0, {len(self.sites)}, {self.bounds_report}); return;"
        self.line(f"if (!({self.expr(condition)})) {{ {failed} }}")

    def device_assert(self, condition: E.Expr, message: str) -> str:
        # a failed check is recorded as the call's failure, through CheckFailed's slot; the block goes on
        self.sites.append(BoundsSite("", self.span, message))
        return f"(({self.expr(condition)}) || tc_in_bounds(0, 0, {len(self.sites)}, {self.bounds_report}))"

    def _s_CheckFailed(self, s: CheckFailed) -> None:
        # records the site as the call's failure, through the same slot as an out-of-bounds access
        self.sites.append(BoundsSite("", s.span or self.span, s.message))
        self.line(f"(void)tc_in_bounds(0, 0, {len(self.sites)}, {self.bounds_report});")

    def _s_MatmulCall(self, s: MatmulCall) -> None:
        suffix = "f64" if s.c.dtype == dt.float64 else "f32"
        a = f"{self.name(s.a)} + {self.expr(s.a_offset)}"
        b = f"{self.name(s.b)} + {self.expr(s.b_offset)}"
        c = f"{self.name(s.c)} + {self.expr(s.c_offset)}"
        am, ak = s.a_strides
        m = s.m if isinstance(s.m, int) else self.expr(s.m)
        shape = f"{m}, {s.n}, {s.k}"
        b_layout = f"{s.b_row_stride}, {s.b_panel_stride}"
        self.line(f"tc_matmul_{suffix}({shape}, {a}, {am}, {ak}, {b}, {b_layout}, {c}, {s.c_row_stride});")


_NOT_SIMD = (S.For, S.While, AtomicUpdate, MatmulCall, S.Print, S.Evaluate)


def _simd_safe(s: S.Stmt) -> bool:
    """An innermost loop of plain loads and stores (atomics and calls must stay scalar)."""
    from tilecraft.ir.visitor import walk

    return not any(isinstance(n, _NOT_SIMD) or _nibble_store(n) for n in walk(s))


def _nibble_store(n) -> bool:
    """A lone store into packed memory: a compare-and-swap loop (a pair of values is a plain byte)."""
    return isinstance(n, S.BufferStore) and is_packed(n.buffer) and n.value.dtype.lanes == 1


def _float_extremum(s: S.For) -> tuple[S.BufferStore, str] | None:
    """The update and OpenMP operator of a float max or min reduction loop `acc = max(acc, x)`."""
    kind = S.annotation(s.annotations, "reduction")
    target = _reduction_target(s.body) if kind in ("max", "absmax", "min") else None
    if target is None or not target.dtype.is_float:
        return None
    value = s.body.value
    if isinstance(value, E.Call) and value.op in (FMAX, FMIN):  # NaN ignored
        if not any(_is_load_of(a, target) for a in value.args):
            return None
        return s.body, "max" if value.op == FMAX else "min"
    if not isinstance(value, (E.Max, E.Min)):
        return None
    if not (_is_load_of(value.a, target) or _is_load_of(value.b, target)):
        return None
    return s.body, "max" if isinstance(value, E.Max) else "min"


def _is_load_of(e: E.Expr, buf: Buffer) -> bool:
    return isinstance(e, E.BufferLoad) and e.buffer is buf


def _reduction_target(body: S.Stmt) -> Buffer | None:
    """The local.var accumulator a reduction loop updates, when its body is that single store."""
    if isinstance(body, S.BufferStore) and body.buffer.scope == "local.var":
        return body.buffer
    return None
