"""Prints lowered tile IR as C.

Values are computed in their C computation type (float16 and bfloat16 as float); buffers hold the
storage type (their bit patterns as uint16_t) and convert on load and store. On-chip buffers live
in the block's scratch area (offsets planned here, reused when an allocation's scope ends);
`local.var` buffers are plain C scalars.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tilecraft.cpu.ir import AtomicUpdate, MatmulCall
from tilecraft.errors import LoweringError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.dtype import DataType
from tilecraft.ir.expr import Expr, Var
from tilecraft.ir.span import Span

_STORAGE = {
    "bool": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float16": "uint16_t", "bfloat16": "uint16_t", "float32": "float", "float64": "double",
}  # fmt: skip
_C_WORDS = """auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while bool main"""
_C_KEYWORDS = frozenset(_C_WORDS.split())
_BINARY_C = {"Add": "+", "Sub": "-", "Mul": "*", "EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">",
             "GE": ">=", "And": "&&", "Or": "||"}  # fmt: skip
_BITWISE = {
    "bitwise_and": "&",
    "bitwise_or": "|",
    "bitwise_xor": "^",
    "shift_left": "<<",
    "shift_right": ">>",
}
_MATH32 = {"exp": "expf", "exp2": "exp2f", "log": "logf", "log2": "log2f", "sqrt": "sqrtf", "tanh": "tanhf",
           "erf": "erff", "floor": "floorf", "ceil": "ceilf", "round": "nearbyintf", "sin": "sinf",
           "cos": "cosf", "pow": "powf", "abs": "fabsf"}  # fmt: skip
_ATOMIC_SUFFIX = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int32": "i32",
                  "int64": "i64", "uint32": "u32", "uint64": "u64"}  # fmt: skip
_ATOMIC_OP = {"add": 0, "max": 1, "min": 2}


def storage_type(dtype: DataType) -> str:
    return _STORAGE[dtype.name]


def value_type(dtype: DataType) -> str:
    """The C type a value of `dtype` is computed in."""
    if dtype.kind == "bfloat" or dtype.name == "float16":
        return "float"
    if dtype.is_bool:
        return "int"
    return _STORAGE[dtype.name]


@dataclass
class BoundsSite:
    """A checked buffer access, reported when it goes out of bounds."""

    buffer: str
    span: Span | None


class CPrinter:
    """Writes C statements and expressions for one function."""

    def __init__(
        self, bounds_check: bool = False, sites: list[BoundsSite] | None = None, offsets: dict | None = None
    ) -> None:
        self.lines: list[str] = []
        self.indent = 1
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.nonneg: set[int] = set()
        self.offsets = offsets or {}
        self.bounds_check = bounds_check
        self.sites = sites if sites is not None else []
        self.span: Span | None = None

    # ------------------------------------------------------------------ names and lines

    def name(self, obj: Var | Buffer) -> str:
        key = id(obj)
        if key not in self.names:
            base = re.sub(r"\W", "_", obj.name) or "v"
            if base[0].isdigit() or base in _C_KEYWORDS or base.startswith("tc_"):
                base = "v_" + base
            name, k = base, 1
            while name in self.used:
                name, k = f"{base}_{k}", k + 1
            self.used.add(name)
            self.names[key] = name
        return self.names[key]

    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def fail(self, message: str, hint: str | None = None):
        raise LoweringError(message, self.span, hint)

    # ------------------------------------------------------------------ expressions

    def expr(self, e: Expr) -> str:
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is not None:
            return method(e)
        if isinstance(e, E.BinaryOp) and type(e).__name__ in _BINARY_C:
            return f"({self.expr(e.a)} {_BINARY_C[type(e).__name__]} {self.expr(e.b)})"
        self.fail(f"the CPU code generator cannot print {type(e).__name__}")

    def _e_IntImm(self, e: E.IntImm) -> str:
        v = e.value
        if e.dtype.name == "int64":
            return f"INT64_C({v})" if v >= 0 else f"(INT64_C({v + 1}) - 1)"
        if e.dtype.is_uint:
            return f"UINT64_C({v})" if e.dtype.bits == 64 else f"{v}u"
        if e.dtype.name == "int32" and v == -(2**31):
            return "(-2147483647 - 1)"
        return f"({v})" if v < 0 else str(v)

    def _e_FloatImm(self, e: E.FloatImm) -> str:
        v = e.value
        single = value_type(e.dtype) == "float"
        if math.isnan(v):
            return "NAN" if single else "((double)NAN)"
        if math.isinf(v):
            text = "INFINITY" if single else "((double)INFINITY)"
            return text if v > 0 else f"(-{text})"
        text = repr(float(v))
        if "e" not in text and "." not in text:
            text += ".0"
        return f"{text}f" if single else text

    def _e_Var(self, e: Var) -> str:
        return self.name(e)

    def _e_Div(self, e: E.Div) -> str:
        return f"({self.expr(e.a)} / {self.expr(e.b)})"

    def _e_TruncMod(self, e: E.TruncMod) -> str:
        return f"({self.expr(e.a)} % {self.expr(e.b)})"

    def _e_FloorDiv(self, e: E.FloorDiv) -> str:
        if e.dtype.is_float:
            return f"floor({self.expr(e.a)} / {self.expr(e.b)})"
        if self.is_nonneg(e.a) and self.is_nonneg(e.b):
            return f"({self.expr(e.a)} / {self.expr(e.b)})"
        return f"(({value_type(e.dtype)})tc_floordiv({self.expr(e.a)}, {self.expr(e.b)}))"

    def _e_FloorMod(self, e: E.FloorMod) -> str:
        if e.dtype.is_float:
            a, b = self.expr(e.a), self.expr(e.b)
            return f"({a} - floor({a} / {b}) * {b})"
        if self.is_nonneg(e.a) and self.is_nonneg(e.b):
            return f"({self.expr(e.a)} % {self.expr(e.b)})"
        return f"(({value_type(e.dtype)})tc_floormod({self.expr(e.a)}, {self.expr(e.b)}))"

    def _e_Min(self, e: E.Min) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        return f"(({a}) < ({b}) ? ({a}) : ({b}))"

    def _e_Max(self, e: E.Max) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        return f"(({a}) > ({b}) ? ({a}) : ({b}))"

    def _e_Not(self, e: E.Not) -> str:
        return f"(!{self.expr(e.a)})"

    def _e_Select(self, e: E.Select) -> str:
        return f"({self.expr(e.condition)} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"

    def _e_Cast(self, e: E.Cast) -> str:
        inner = self.expr(e.value)
        if e.dtype.is_bool:
            return f"({inner} != 0)"
        if e.dtype.name == "float16":
            return f"tc_round_f16((float)({inner}))"
        if e.dtype.kind == "bfloat":
            return f"tc_round_bf16((float)({inner}))"
        return f"(({value_type(e.dtype)})({inner}))"

    def _e_Call(self, e: E.Call) -> str:
        args = [self.expr(a) for a in e.args]
        if e.op in _BITWISE:
            return f"({args[0]} {_BITWISE[e.op]} {args[1]})"
        if e.op == "bitwise_not":
            return f"(~{args[0]})"
        if e.op == "abs" and not e.dtype.is_float:
            return f"(({args[0]}) < 0 ? -({args[0]}) : ({args[0]}))"
        single = value_type(e.dtype) == "float"
        if e.op == "rsqrt":
            return f"(1.0f / sqrtf({args[0]}))" if single else f"(1.0 / sqrt({args[0]}))"
        if e.op == "sigmoid":
            return f"(1.0f / (1.0f + expf(-({args[0]}))))" if single else f"(1.0 / (1.0 + exp(-({args[0]}))))"
        if e.op in _MATH32:
            fn = _MATH32[e.op] if single else _MATH32[e.op].rstrip("f").replace("fabs", "fabs")
            if not single and e.op == "round":
                fn = "nearbyint"
            return f"{fn}({', '.join(args)})"
        self.fail(f"intrinsic {e.op!r} is not supported on the CPU target")

    def _e_BufferLoad(self, e: E.BufferLoad) -> str:
        buf = e.buffer
        if buf.scope == "local.var":
            return self.name(buf)
        offset = self.offset(buf, e.indices)
        raw = f"{self.name(buf)}[{offset}]"
        if self.bounds_check:
            site = self.site(buf)
            zero = f"({storage_type(buf.dtype)})0"
            raw = f"(tc_in_bounds({offset}, {self.extent(buf)}, {site}) ? {raw} : {zero})"
        return self.from_storage(raw, buf.dtype)

    def from_storage(self, raw: str, dtype: DataType) -> str:
        if dtype.name == "float16":
            return f"tc_h2f({raw})"
        if dtype.kind == "bfloat":
            return f"tc_bf2f({raw})"
        return raw

    def to_storage(self, value: str, dtype: DataType) -> str:
        if dtype.name == "float16":
            return f"tc_f2h({value})"
        if dtype.kind == "bfloat":
            return f"tc_f2bf({value})"
        if dtype.is_bool:
            return f"(uint8_t)(({value}) != 0)"
        return value

    # ------------------------------------------------------------------ buffer addressing

    def strides(self, buf: Buffer) -> list[str]:
        if buf.strides:
            return [f"(int64_t)({self.expr(s)})" for s in buf.strides]
        out, acc = [], "1"
        for dim in reversed(buf.shape):
            out.append(acc)
            d = E.const_value(dim)
            acc = (
                str(int(acc) * d)
                if acc.isdigit() and isinstance(d, int)
                else f"{acc} * (int64_t)({self.expr(dim)})"
            )
        return list(reversed(out))

    def offset(self, buf: Buffer, indices) -> str:
        terms = []
        for index, stride in zip(indices, self.strides(buf)):
            if E.const_value(index) == 0:
                continue
            idx = self.expr(index)
            terms.append(f"(int64_t){idx}" if stride == "1" else f"(int64_t){idx} * {stride}")
        return " + ".join(terms) if terms else "0"

    def extent(self, buf: Buffer) -> str:
        """Elements addressable from the buffer's base (for bounds checks)."""
        if not buf.strides:
            parts = [f"(int64_t)({self.expr(d)})" for d in buf.shape]
            return " * ".join(parts) if parts else "1"
        parts = [
            f"((int64_t)({self.expr(d)}) - 1) * (int64_t)({self.expr(s)})"
            for d, s in zip(buf.shape, buf.strides)
        ]
        return "(" + " + ".join(parts) + " + 1)"

    def site(self, buf: Buffer) -> int:
        self.sites.append(BoundsSite(buf.name, self.span))
        return len(self.sites)

    # ------------------------------------------------------------------ non-negativity (index math)

    def is_nonneg(self, e: Expr) -> bool:
        if isinstance(e, E.IntImm):
            return e.value >= 0
        if isinstance(e, Var):
            return id(e) in self.nonneg or e.dtype.is_uint
        if isinstance(e, (E.Add, E.Mul, E.FloorDiv, E.FloorMod, E.Min, E.Max, E.Div)):
            return self.is_nonneg(e.a) and self.is_nonneg(e.b)
        if isinstance(e, E.Cast):
            return e.value.dtype.is_integer and self.is_nonneg(e.value)
        return False

    def mark_nonneg(self, *variables: Var) -> None:
        self.nonneg.update(id(v) for v in variables)

    # ------------------------------------------------------------------ statements

    def stmt(self, s: S.Stmt) -> None:
        saved = self.span
        if s.span is not None:
            self.span = s.span
        method = getattr(self, "_s_" + type(s).__name__, None)
        if method is None:
            self.fail(f"the CPU code generator cannot print {type(s).__name__}")
        method(s)
        self.span = saved

    def block(self, s: S.Stmt | None) -> None:
        self.indent += 1
        if s is not None:
            self.stmt(s)
        self.indent -= 1

    def _s_SeqStmt(self, s: S.SeqStmt) -> None:
        for x in s.stmts:
            self.stmt(x)

    def _s_Evaluate(self, s: S.Evaluate) -> None:
        self.line(f"(void)({self.expr(s.value)});")

    def _s_BufferStore(self, s: S.BufferStore) -> None:
        buf = s.buffer
        value = self.expr(s.value)
        if buf.scope == "local.var":
            self.line(f"{self.name(buf)} = {value};")
            return
        offset = self.offset(buf, s.indices)
        store = f"{self.name(buf)}[{offset}] = {self.to_storage(value, buf.dtype)};"
        if self.bounds_check:
            store = f"if (tc_in_bounds({offset}, {self.extent(buf)}, {self.site(buf)})) {store}"
        self.line(store)

    def _s_LetStmt(self, s: S.LetStmt) -> None:
        self.line("{")
        self.indent += 1
        if self.is_nonneg(s.value):
            self.mark_nonneg(s.var)
        self.line(f"const {value_type(s.var.dtype)} {self.name(s.var)} = {self.expr(s.value)};")
        self.stmt(s.body)
        self.indent -= 1
        self.line("}")

    def _s_IfThenElse(self, s: S.IfThenElse) -> None:
        self.line(f"if ({self.expr(s.condition)}) {{")
        self.block(s.then_case)
        if s.else_case is not None:
            self.line("} else {")
            self.block(s.else_case)
        self.line("}")

    def _s_For(self, s: S.For) -> None:
        var = self.name(s.loop_var)
        if self.is_nonneg(s.min):
            self.mark_nonneg(s.loop_var)
        ctype = value_type(s.loop_var.dtype)
        reduction = S.annotation(s.annotations, "reduction")
        if reduction is not None:
            self._reduction_pragma(s, reduction)
        elif s.kind is S.ForKind.UNROLLED:
            self.line("TC_UNROLL")
        elif s.kind in (S.ForKind.PARALLEL, S.ForKind.VECTORIZED) and _simd_safe(s.body):
            self.line("#pragma omp simd")
        start = self.expr(s.min)
        end = self.expr(E.add(s.min, s.extent)) if E.const_value(s.min) != 0 else self.expr(s.extent)
        self.line(f"for ({ctype} {var} = {start}; {var} < {end}; ++{var}) {{")
        self.block(s.body)
        self.line("}")

    def _reduction_pragma(self, s: S.For, kind: str) -> None:
        target = _reduction_target(s.body)
        op = {"sum": "+", "abssum": "+", "max": "max", "absmax": "max", "min": "min"}[kind]
        if target is not None:
            self.line(f"#pragma omp simd reduction({op}:{self.name(target)})")

    def _s_Allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        if buf.scope == "local.var":
            self.line("{")
            self.indent += 1
            self.line(f"{value_type(buf.dtype)} {self.name(buf)};")
            self.stmt(s.body)
            self.indent -= 1
            self.line("}")
            return
        ctype = storage_type(buf.dtype)
        self.line("{")
        self.indent += 1
        self.line(f"{ctype}* const {self.name(buf)} = ({ctype}*)(tc_scratch + {self.offsets[id(buf)]});")
        self.stmt(s.body)
        self.indent -= 1
        self.line("}")

    def _s_AtomicUpdate(self, s: AtomicUpdate) -> None:
        suffix = _ATOMIC_SUFFIX.get(s.buffer.dtype.name)
        if suffix is None:
            self.fail(f"atomic {s.kind} on {s.buffer.dtype} is not supported on the CPU target")
        ptr = f"&{self.name(s.buffer)}[{self.offset(s.buffer, s.indices)}]"
        value = self.expr(s.value)
        if s.buffer.dtype.is_float:
            self.line(f"tc_atomic_rmw_{suffix}({ptr}, {value}, {_ATOMIC_OP[s.kind]});")
        else:
            self.line(f"tc_atomic_{s.kind}_{suffix}({ptr}, {value});")

    def _s_MatmulCall(self, s: MatmulCall) -> None:
        suffix = "f64" if s.c.dtype == dt.float64 else "f32"
        a = f"{self.name(s.a)} + {self.expr(s.a_offset)}"
        b = f"{self.name(s.b)} + {self.expr(s.b_offset)}"
        c = f"{self.name(s.c)} + {self.expr(s.c_offset)}"
        am, ak = s.a_strides
        shape = f"{s.m}, {s.n}, {s.k}"
        self.line(
            f"tc_matmul_{suffix}({shape}, {a}, {am}, {ak}, {b}, {s.b_row_stride}, {c}, {s.c_row_stride});"
        )

    def _s_Print(self, s: S.Print) -> None:
        prefix = f"{s.msg}: " if s.msg else ""
        if isinstance(s.value, BufferRegion):
            self._print_region(s.value, prefix)
            return
        fmt, value = _printf(s.value.dtype, self.expr(s.value))
        self.line(f'printf("[block %d,%d,%d] {_c_string(prefix)}{fmt}\\n", tc_bx, tc_by, tc_bz, {value});')

    def _print_region(self, r: BufferRegion, prefix: str) -> None:
        loops = [Var(dt.int32, f"p{k}") for k in range(len(r.ranges))]
        index = tuple(E.add(rng.min, v) for rng, v in zip(r.ranges, loops))
        fmt, value = _printf(r.dtype, self.expr(E.BufferLoad(r.dtype, r.buffer, index)))
        for v, rng in zip(loops, r.ranges):
            n = self.name(v)
            self.line(f"for (int32_t {n} = 0; {n} < {self.expr(rng.extent)}; ++{n})")
        where = ", ".join("%d" for _ in loops)
        args = ", ".join(self.name(v) for v in loops)
        text = f"[block %d,%d,%d] {_c_string(prefix)}{r.buffer.name}[{where}] = {fmt}\\n"
        self.line(f'    printf("{text}", tc_bx, tc_by, tc_bz, {args}, {value});')


def _printf(dtype: DataType, value: str) -> tuple[str, str]:
    if dtype.is_float:
        return "%.6g", f"(double)({value})"
    if dtype.bits == 64:
        return "%lld", f"(long long)({value})"
    return "%d", f"(int)({value})"


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


_NOT_SIMD = (S.For, AtomicUpdate, MatmulCall, S.Print, S.Evaluate)


def _simd_safe(s: S.Stmt) -> bool:
    """An innermost loop of plain loads and stores (atomics and calls must stay scalar)."""
    from tilecraft.ir.visitor import walk

    return not any(isinstance(n, _NOT_SIMD) for n in walk(s))


def _reduction_target(body: S.Stmt) -> Buffer | None:
    """The local.var accumulator a reduction loop updates, when its body is that single store."""
    if isinstance(body, S.BufferStore) and body.buffer.scope == "local.var":
        return body.buffer
    return None
