"""A printer of lowered tile IR as C-family source, shared by the backends that emit C-like code.

Values are computed in their computation type (float16, bfloat16 and float8 as float); buffers hold the
storage type (float16 and bfloat16 as their uint16_t bit patterns, float8 as its byte) and convert on
load and store, through helper functions each backend's device header defines (`tc_h2f`, `tc_f2h`,
`tc_bf2f`, `tc_f2bf`, `tc_e4m3_to_f32`, `tc_f32_to_e4m3`, `tc_e5m2_to_f32`, `tc_f32_to_e5m2`, their
`tc_round_*`, `tc_floordiv`, `tc_floormod`). `local.var` buffers are scalars.

Integer arithmetic on data wraps around at its declared width, as in NumPy (docs/language.md): C
computes 8- and 16-bit operands as `int` and leaves signed overflow undefined, so data results narrower
than 32 bits are cast back to their type and signed 32/64-bit data arithmetic goes through the unsigned
type. Index arithmetic is printed as written: `widen-index-arithmetic` made it overflow-free.
Subclasses decide where buffers live and add their own statements and intrinsics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from tilecraft.backend.capabilities import no_mbarriers
from tilecraft.codegen.addressing import offset_terms, row_major_strides
from tilecraft.codegen.reserved import C_RESERVED, ReservedNames, printed_name
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith.exact import ExactTable
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.dtype import DataType, int32
from tilecraft.ir.expr import Expr, Var
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.narrowing import round_scalar_once
from tilecraft.ir.op import ASSUME, DEVICE_ASSERT, FMA, RNG_CALLS, RNG_INIT, RNG_RAND
from tilecraft.ir.span import Span

_STORAGE = {
    "bool": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float16": "uint16_t", "bfloat16": "uint16_t", "float32": "float", "float64": "double",
    "float8_e4m3fn": "uint8_t", "float8_e5m2": "uint8_t", "float8_e4m3fnuz": "uint8_t", "float8_e5m2fnuz": "uint8_t",
    # one code a byte in its low bits on chip (a 4-bit type's nibble, int4's two's complement); packed
    # global memory holds two a byte (is_packed)
    "int4": "uint8_t", "uint4": "uint8_t", "float4_e2m1fn": "uint8_t", "float6_e2m3fn": "uint8_t",
    "float6_e3m2fn": "uint8_t", "float8_e8m0fnu": "uint8_t",
}  # fmt: skip
_BINARY = {"Add": "+", "Sub": "-", "Mul": "*", "EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">",
           "GE": ">=", "And": "&&", "Or": "||"}  # fmt: skip
_BITWISE = {
    "bitwise_and": "&",
    "bitwise_or": "|",
    "bitwise_xor": "^",
    "shift_left": "<<",
    "shift_right": ">>",
}
MATH32 = {"exp": "expf", "exp2": "exp2f", "log": "logf", "log2": "log2f", "sqrt": "sqrtf", "tanh": "tanhf",
          "erf": "erff", "floor": "floorf", "ceil": "ceilf", "round": "nearbyintf", "sin": "sinf",
          "cos": "cosf", "pow": "powf", "abs": "fabsf", "fmax": "fmaxf", "fmin": "fminf"}  # fmt: skip
# The device headers' atomic helpers: tc_atomic_<kind>_<suffix> for integers, tc_atomic_rmw_<suffix>
# (op: 0 add, 1 max, 2 min) for floating-point types.
ATOMIC_SUFFIX = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int32": "i32",
                  "int64": "i64", "uint32": "u32", "uint64": "u64"}  # fmt: skip
ATOMIC_OP = {"add": 0, "max": 1, "min": 2}
# Atomic expressions (AtomicValue): tc_atomic_load_<bits> / tc_atomic_store_<bits> move the stored form
# (16-bit floats as their bits), tc_atomic_fetch_<suffix> updates and gives the previous value; the order
# is the memory order's id (E.MEMORY_ORDERS, as __ATOMIC_* and cuda::memory_order number them).
ATOMIC_BITS = {"float32": "f32", "float64": "f64", "float16": "u16", "bfloat16": "u16", "int32": "i32",
               "int64": "i64", "uint32": "u32", "uint64": "u64"}  # fmt: skip
MATH64 = {
    op: ("fabs" if op == "abs" else "nearbyint" if op == "round" else fn[:-1]) for op, fn in MATH32.items()
}


def _minmax_suffix(dtype: DataType) -> str:
    """The device headers' min/max helpers are functions, so operands are evaluated once."""
    value = value_type(dtype)
    return {"float": "f32", "double": "f64", "int64_t": "i64", "uint64_t": "u64", "uint32_t": "u32"}.get(
        value, "i32"
    )


_UNSIGNED = {"int32": "uint32_t", "int64": "uint64_t", "uint16": "uint32_t", "int16": "uint32_t",
             "int8": "uint32_t", "uint8": "uint32_t"}  # fmt: skip


# A float8 or microscaling format's helper-name stem: tc_<stem>_to_f32, tc_f32_to_<stem>, tc_round_<stem>.
_FP8_STEM = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2", "float8_e4m3fnuz": "e4m3fnuz", "float8_e5m2fnuz": "e5m2fnuz",
             "float4_e2m1fn": "e2m1", "float6_e2m3fn": "e2m3",
             "float6_e3m2fn": "e3m2", "float8_e8m0fnu": "e8m0"}  # fmt: skip


def _storage_conversion(dtype: DataType) -> tuple[str, str] | None:
    """The header functions that widen a stored element to float and narrow it back, for the dtypes
    stored narrower than they compute (float16, bfloat16, float8); None for the others."""
    if dtype.name == "float16":
        return "tc_h2f", "tc_f2h"
    if dtype.kind == "bfloat":
        return "tc_bf2f", "tc_f2bf"
    if dtype.kind in ("float8", "microfloat"):
        stem = _FP8_STEM[dtype.name]
        return f"tc_{stem}_to_f32", f"tc_f32_to_{stem}"
    if dtype.is_packed:  # 4-bit integers: the nibble, sign-extended when read as int4
        return ("tc_i4_from_nibble" if dtype.is_int else ""), "tc_wrap_u4"
    return None


def is_packed(buf: Buffer) -> bool:
    """A buffer of global memory holding two 4-bit values per byte (element i in byte i >> 1, the low
    nibble for even i); on-chip buffers hold one per byte."""
    return buf.scope == "global" and buf.dtype.is_packed




def storage_type(dtype: DataType) -> str:
    return _STORAGE[dtype.name]


def value_type(dtype: DataType) -> str:
    """The C type a value of `dtype` is computed in."""
    if dtype.kind in ("bfloat", "float8", "microfloat") or dtype.name == "float16":
        return "float"
    if dtype.is_bool:
        return "int"
    if dtype.is_packed and dtype.is_int:
        return "int8_t"
    return _STORAGE[dtype.name]


@dataclass
class BoundsSite:
    """A checked buffer access, reported when it goes out of bounds; or, with `message`, a check the
    kernel made that failed (a backend's failed-check statement), reported as that message."""

    buffer: str
    span: Span | None
    message: str | None = None

    def describe(self) -> str:
        """`buffer X at file:line:col: the source line`, as an out-of-bounds report names it; a failed
        check's message in its place, marked with a leading "!" for the execution backend."""
        where = f" at {self.span}" if self.span else ""
        line = self.span.source_line() if self.span else None
        text = f"{where}" + (f": {line.strip()}" if line else "")
        return f"buffer {self.buffer}{text}" if self.message is None else f"!{self.message}{text}"


class CFamilyPrinter:
    """Writes statements and expressions of one function; subclasses add placement and intrinsics.

    `arena_offsets` are the byte offsets the storage pass planned for the buffers of the `arena_scopes`,
    which live in the block's arena (by buffer id: `tilecraft.transform.storage.planned_offsets`).
    """

    target_name = "this target"
    # Names the language or its libraries define: a kernel's names that are one get `v_` in front.
    reserved_names: ReservedNames = C_RESERVED
    math32 = MATH32
    math64 = MATH64
    # Scopes of on-chip buffers, small enough for 32-bit offsets (cheaper); the others' need 64 bits.
    int32_index_scopes: tuple[str, ...] = ()
    # Scopes of the buffers that live in the block's arena, at the offsets the storage pass planned.
    arena_scopes: tuple[str, ...] = ()

    def __init__(self, arena_offsets: Mapping[int, int] | None = None) -> None:
        self.arena_offsets = arena_offsets or {}
        self.lines: list[str] = []
        self.indent = 1
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.nonneg: set[int] = set()
        self.exact = ExactTable()
        self.span: Span | None = None
        self.sites: list[BoundsSite] = []

    # ------------------------------------------------------------------ names and lines

    def name(self, obj: Var | Buffer) -> str:
        """`obj`'s name in the source: as written, unless the language reserves it (codegen/reserved.py),
        and unique in the function."""
        if isinstance(obj, Buffer) and obj.address is not None:
            return self.address_pointer(obj)
        return printed_name(obj, self.names, self.used, self.is_reserved)

    def is_reserved(self, name: str) -> bool:
        """A name the language reserves, or one the generated code's own (`tc_`) names could meet."""
        return name in self.reserved_names or name.lower().startswith("tc_")

    def address_pointer(self, buf: Buffer) -> str:
        """A tensor made from an address (T.make_tensor) as a pointer to its stored elements, where its
        accesses name the buffer. Targets whose kernels cannot turn an integer into a pointer override it
        (`refuse_address`)."""
        return f"(({storage_type(buf.dtype)}*)(uintptr_t)({self.expr(buf.address)}))"

    def refuse_address(self, buf: Buffer, why: str, fix: str):
        """The error of a target that cannot address memory by an integer, at the T.make_tensor line."""
        raise LoweringError(f"T.make_tensor of an address ({buf.name}) is not supported on {self.target_name}: {why}",
                            buf.span or self.span, fix)  # fmt: skip

    def reserve(self, *names: str) -> None:
        self.used.update(names)

    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def text(self) -> str:
        return "\n".join(self.lines)

    def fail(self, message: str, hint: str | None = None):
        raise LoweringError(message, self.span, hint)

    # ------------------------------------------------------------------ expressions

    def expr(self, e: Expr) -> str:
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is not None:
            return method(e)
        if isinstance(e, E.BinaryOp) and type(e).__name__ in _BINARY:
            return f"({self.expr(e.a)} {_BINARY[type(e).__name__]} {self.expr(e.b)})"
        self.fail(f"the code generator for {self.target_name} cannot print {type(e).__name__}")

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
        v = narrow_constant(e.value, e.dtype)
        single = value_type(e.dtype) == "float"
        if math.isnan(v):
            return "TC_NAN" if single else "((double)TC_NAN)"
        if math.isinf(v):
            text = "TC_INFINITY" if single else "((double)TC_INFINITY)"
            return text if v > 0 else f"(-{text})"
        text = repr(float(v))
        if "e" not in text and "." not in text:
            text += ".0"
        return f"{text}f" if single else text

    def _e_Var(self, e: Var) -> str:
        return self.name(e)

    def _e_Add(self, e: E.Add) -> str:
        return self.arithmetic(e, "+")

    def _e_Sub(self, e: E.Sub) -> str:
        return self.arithmetic(e, "-")

    def _e_Mul(self, e: E.Mul) -> str:
        return self.arithmetic(e, "*")

    def arithmetic(self, e: E.BinaryOp, op: str) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        if not self.wraps(e):
            return f"({a} {op} {b})"
        ctype = value_type(e.dtype)
        # Through an unsigned type: its overflow is defined (and the same bits as two's complement).
        wide = _UNSIGNED.get(e.dtype.name)
        if wide is None:
            return f"(({ctype})({a} {op} {b}))"
        return f"(({ctype})(({wide})({a}) {op} ({wide})({b})))"

    def wraps(self, e: E.Expr) -> bool:
        """Integer arithmetic on data, which must wrap around at its width (index arithmetic does not)."""
        return e.dtype.is_integer and e.dtype.lanes == 1 and not self.exact.is_index(e)

    def narrowed(self, e: E.Expr, text: str) -> str:
        """`text` cast back to the type of `e` where C computed it wider (8- and 16-bit data)."""
        if self.wraps(e) and e.dtype.bits < 32:
            return f"(({value_type(e.dtype)})({text}))"
        return text

    def _e_Div(self, e: E.Div) -> str:
        return self.narrowed(e, f"({self.expr(e.a)} / {self.expr(e.b)})")

    def _e_TruncMod(self, e: E.TruncMod) -> str:
        return f"({self.expr(e.a)} % {self.expr(e.b)})"

    def _e_FloorDiv(self, e: E.FloorDiv) -> str:
        if e.dtype.is_float:
            return f"floor({self.expr(e.a)} / {self.expr(e.b)})"
        if self.is_nonneg(e.a) and self.is_nonneg(e.b):
            return self.narrowed(e, f"({self.expr(e.a)} / {self.expr(e.b)})")
        return f"(({value_type(e.dtype)})tc_floordiv({self.expr(e.a)}, {self.expr(e.b)}))"

    def _e_FloorMod(self, e: E.FloorMod) -> str:
        if e.dtype.is_float:
            a, b = self.expr(e.a), self.expr(e.b)
            return f"({a} - floor({a} / {b}) * {b})"
        if self.is_nonneg(e.a) and self.is_nonneg(e.b):
            return f"({self.expr(e.a)} % {self.expr(e.b)})"
        return f"(({value_type(e.dtype)})tc_floormod({self.expr(e.a)}, {self.expr(e.b)}))"

    def _e_Min(self, e: E.Min) -> str:
        return f"tc_min_{_minmax_suffix(e.dtype)}({self.expr(e.a)}, {self.expr(e.b)})"

    def _e_Max(self, e: E.Max) -> str:
        return f"tc_max_{_minmax_suffix(e.dtype)}({self.expr(e.a)}, {self.expr(e.b)})"

    def _e_Not(self, e: E.Not) -> str:
        return f"(!{self.expr(e.a)})"

    def _e_Select(self, e: E.Select) -> str:
        return f"({self.expr(e.condition)} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"

    def _e_Cast(self, e: E.Cast) -> str:
        if e.dtype.is_bool:
            return f"({self.expr(e.value)} != 0)"
        if e.dtype.name == "float16":
            return f"tc_round_f16({self.narrowing_source(e.value, e.dtype)})"
        if e.dtype.kind == "bfloat":
            return f"tc_round_bf16({self.narrowing_source(e.value, e.dtype)})"
        if e.dtype.kind in ("float8", "microfloat"):
            return f"tc_round_{_FP8_STEM[e.dtype.name]}({self.narrowing_source(e.value, e.dtype)})"
        if e.dtype.is_packed and e.dtype.is_integer:  # wraps to 4 bits
            return f"{'tc_wrap_i4' if e.dtype.is_int else 'tc_wrap_u4'}((int32_t)({self.expr(e.value)}))"
        return f"(({value_type(e.dtype)})({self.expr(e.value)}))"

    def narrowing_source(self, value: Expr, dtype: DataType) -> str:
        """`value` as the float32 that float16, bfloat16 or float8 `dtype` is rounded from, so that the
        result is rounded once: float64 and (for bfloat16, whose range holds them) integers of 32 bits
        or more are rounded to odd, not to nearest (tc_common.h says why)."""
        text = self.expr(value)
        src = value.dtype
        if value_type(src) == "double":
            return f"tc_f64_to_f32_odd({text})"
        if src.is_integer and src.bits >= 32 and dtype.kind == "bfloat":
            if src.is_uint:
                return f"tc_u64_to_f32_odd((uint64_t)({text}))"
            return f"tc_i64_to_f32_odd((int64_t)({text}))"
        return f"(float)({text})"

    def _e_Call(self, e: E.Call) -> str:
        if e.op == "call_extern":  # T.call_extern: the function the imported source or toolchain provides
            return f"{e.args[0].value}({', '.join(self.extern_argument(a) for a in e.args[1:])})"
        if e.op == "access_ptr":
            return self.access_pointer(e)
        if e.op == DEVICE_ASSERT:
            return self.device_assert(e.args[0], e.args[1].value or "T.device_assert failed")
        if e.op in RNG_CALLS:
            return self.random_call(e)
        args = [self.expr(a) for a in e.args]
        if e.op == "shift_left" and self.wraps(e) and e.dtype.is_int:
            # A negative value shifted left is undefined in C; its unsigned twin is not.
            wide = _UNSIGNED[e.dtype.name]
            return f"(({value_type(e.dtype)})(({wide})({args[0]}) << {args[1]}))"
        if e.op in _BITWISE:
            return self.narrowed(e, f"({args[0]} {_BITWISE[e.op]} {args[1]})")
        if e.op == "bitwise_not":
            return self.narrowed(e, f"(~{args[0]})")
        if e.op == "abs" and not e.dtype.is_float:
            return self.narrowed(e, f"(({args[0]}) < 0 ? -({args[0]}) : ({args[0]}))")
        if e.op == "reinterpret":
            return self.reinterpret(e.args[0].dtype, e.dtype, args[0])
        return self.math_call(e, args)

    def random_call(self, e: E.Call) -> str:
        """T.rng_init / T.rng_rand / T.rng_rand_float: the generator functions of tc_rng.h (which the
        codegen adds to a source that draws, `headers.used_texts`) on the thread's state array."""
        state = self.expr(e.args[0])
        if e.op == RNG_INIT:
            seed, seq, off = (f"(uint64_t)({self.expr(a)})" for a in e.args[1:4])
            return f"tc_rng_init_{e.args[4].value}({state}, {seed}, {seq}, {off})"
        if e.op == RNG_RAND:
            return f"tc_rng_{e.args[1].value}({state})"
        return f"tc_rng_{e.args[2].value}_f{e.dtype.bits}_{e.args[1].value}({state})"

    def extern_argument(self, e: Expr) -> str:
        """An argument of an extern call: a string as a C string literal, the rest as values."""
        if isinstance(e, E.StringImm):
            return '"' + e.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
        return self.expr(e)

    def access_pointer(self, e: E.Call) -> str:
        """`T.access_ptr`: the address of a thread's own array element, typed as its stored elements."""
        load = e.args[0]
        buf = load.buffer
        if buf.scope == "local.var":
            return f"(&{self.name(buf)})"
        offset = self.offset(buf, load.indices)
        return f"({self.name(buf)} + {offset})" if offset != "0" else f"({self.name(buf)})"

    def reinterpret(self, source: DataType, dest: DataType, value: str) -> str:
        """The bits of `value` (of dtype `source`) read as `dest`: a dtype stored narrower than it
        computes (float16, bfloat16, float8) goes through its stored bit pattern; 4-bit types through
        their nibble (int4 is stored sign-extended)."""
        if source.is_packed:  # stored as its nibble, whatever the 4-bit type
            return self.from_storage(self.to_storage(value, source), dest)
        bits = self.to_storage(value, source) if _storage_conversion(source) else value
        moved = self.bitcast(bits, storage_type(source), storage_type(dest))
        return self.from_storage(moved, dest) if _storage_conversion(dest) else moved

    def bitcast(self, value: str, source: str, dest: str) -> str:
        """`value`, of C type `source`, with its bits read as `dest` (the same size): a C99 union."""
        if source == dest:
            return value
        return f"((union {{ {source} from; {dest} to; }}){{ .from = ({value}) }}.to)"

    def math_call(self, e: E.Call, args: list[str]) -> str:
        if e.op == FMA:
            return self.fused_multiply_add(e.dtype, args)
        single = value_type(e.dtype) == "float"
        if e.op == "rsqrt":
            return f"(1.0f / sqrtf({args[0]}))" if single else f"(1.0 / sqrt({args[0]}))"
        table = self.math32 if single else self.math64
        if e.op == "sigmoid":
            one = "1.0f" if single else "1.0"
            return f"({one} / ({one} + {table['exp']}(-({args[0]}))))"
        if e.op in table:
            return f"{table[e.op]}({', '.join(args)})"
        return self.intrinsic(e, args)

    # The target's correctly rounded fused multiply-add of float32 and float64 values.
    fma_functions: Mapping[str, str] = {"float32": "fmaf", "float64": "fma"}

    def fused_multiply_add(self, dtype: DataType, args: list[str]) -> str:
        """`x * y + z` rounded once (T.fma2's lanes): the target's fma for float32 and float64; for
        float16 and bfloat16 the exact result rounded to odd in float32 (tc_common.h), which the store's
        rounding to the 16-bit type then rounds once."""
        if dtype.kind in ("float", "bfloat") and dtype.bits == 16:
            return f"tc_fma_odd({', '.join(args)})"
        function = self.fma_functions.get(dtype.name)
        if function is None:
            self.fail(f"a fused multiply-add of {dtype} is not supported on {self.target_name}",
                      "use float32, float64, float16 or bfloat16 operands")  # fmt: skip
        return f"{function}({', '.join(args)})"

    def intrinsic(self, e: E.Call, args: list[str]) -> str:
        """Target intrinsics by name; the base knows only the thread index, where a target has one."""
        if e.op == "thread_index" and self.thread_index:
            return self.thread_index
        self.fail(f"intrinsic {e.op!r} is not supported on {self.target_name}")

    def device_assert(self, condition: Expr, message: str) -> str:
        """T.device_assert: an expression that checks `condition` and, where it is false, reports
        `message` (with the statement's line) as the kernel's failure. Targets that can do so override it."""
        self.fail(
            f"T.device_assert is not supported on {self.target_name}: its code generator has no way to "
            "stop a kernel and report the failed check",
            hint="run the kernel on a target that checks it (docs/language.md lists them), or remove the check",
        )

    def _e_BufferLoad(self, e: E.BufferLoad) -> str:
        buf = e.buffer
        if buf.scope == "local.var":
            return self.name(buf)
        if is_packed(buf):
            return self.from_storage(self.load_nibble(buf, self.offset(buf, e.indices)), buf.dtype)
        return self.from_storage(self.load_raw(buf, self.offset(buf, e.indices)), buf.dtype)

    def load_raw(self, buf: Buffer, offset: str) -> str:
        raw = f"{self.name(buf)}[{offset}]"
        if not self.bounds_check:
            return raw
        return f"({self.in_bounds(buf, offset)} ? {raw} : ({storage_type(buf.dtype)})0)"

    def load_nibble(self, buf: Buffer, offset: str) -> str:
        """Element `offset` of packed memory (its stored form: the nibble of byte offset >> 1)."""
        return f"tc_nibble_at({self.load_raw(buf, f'(({offset}) >> 1)')}, {offset})"

    def from_storage(self, raw: str, dtype: DataType) -> str:
        conversion = _storage_conversion(dtype)
        return f"{conversion[0]}({raw})" if conversion else raw

    def to_storage(self, value: str, dtype: DataType) -> str:
        conversion = _storage_conversion(dtype)
        if conversion:
            return f"{conversion[1]}({value})"
        if dtype.is_bool:
            return f"(uint8_t)(({value}) != 0)"
        return value

    # ------------------------------------------------------------------ buffer addressing

    def strides(self, buf: Buffer) -> list[str]:
        if buf.strides:
            return [f"(int64_t)({self.expr(s)})" for s in buf.strides]
        # packed rows start on a byte: an odd row has a padding nibble
        even_row = (lambda text: f"(({text} + 1) & ~(int64_t)1)") if is_packed(buf) else None
        return row_major_strides(buf.shape, lambda dim: f"(int64_t)({self.expr(dim)})", even_row)

    def index_type(self, buf: Buffer) -> str:
        return "int32_t" if buf.scope in self.int32_index_scopes else "int64_t"

    def offset(self, buf: Buffer, indices) -> str:
        cast = f"({self.index_type(buf)})"
        terms = offset_terms(indices, self.strides(buf), lambda index: f"{cast}{self.expr(index)}")
        return " + ".join(terms) if terms else "0"

    # ------------------------------------------------------------------ non-negativity (index math)

    def is_nonneg(self, e: Expr) -> bool:
        if e.dtype.is_uint:
            return True
        if isinstance(e, E.IntImm):
            return e.value >= 0
        if isinstance(e, Var):
            return id(e) in self.nonneg or e.dtype.is_uint
        if isinstance(e, (E.Add, E.Mul, E.FloorDiv, E.FloorMod, E.Min, E.Max, E.Div)):
            return self.is_nonneg(e.a) and self.is_nonneg(e.b)
        if isinstance(e, E.Cast):
            # A nonnegative value stays so only where the new type holds it (int8 of 200 is negative).
            src = e.value.dtype
            widening = e.dtype.bits > src.bits or (e.dtype.bits == src.bits and src.kind == e.dtype.kind)
            return src.is_integer and widening and self.is_nonneg(e.value)
        if isinstance(e, E.Call) and e.op in ("shift_right", "bitwise_and"):
            return self.is_nonneg(e.args[0])
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
            self.fail(f"the code generator for {self.target_name} cannot print {type(s).__name__}")
        method(s)
        self.span = saved

    def _s_BarrierInit(self, s: S.BarrierInit) -> None:
        self._no_mbarriers()

    def _s_Mbarrier(self, s: S.Mbarrier) -> None:
        self._no_mbarriers()

    def _no_mbarriers(self) -> None:
        lack = no_mbarriers(self.target_name)
        self.fail(lack.reason, lack.fix)

    def block(self, s: S.Stmt | None) -> None:
        self.indent += 1
        if s is not None:
            self.stmt(s)
        self.indent -= 1

    def scoped(self, opening: str, body: S.Stmt, declaration: str | None = None) -> None:
        """`body` in the block `opening` starts, after `declaration` (a name that ends with the block)."""
        self.line(opening)
        self.indent += 1
        if declaration is not None:
            self.line(declaration)
        self.stmt(body)
        self.indent -= 1
        self.line("}")

    def _s_SeqStmt(self, s: S.SeqStmt) -> None:
        for x in s.stmts:
            self.stmt(x)

    # Targets that run a block as a group of threads: the statement(s) of a block-wide barrier (one a
    # line), and the thread index (T.get_thread_binding after lowering).
    barrier_statement: str | None = None
    thread_index: str | None = None
    # The statement that evaluates an expression (`{}`) for its effects only.
    discard_statement = "(void)({});"

    def _s_Evaluate(self, s: S.Evaluate) -> None:
        if isinstance(s.value, E.Call) and s.value.op == "sync_threads" and self.barrier_statement:
            for line in self.barrier_statement.splitlines():
                self.line(line)
            return
        if isinstance(s.value, E.Call) and s.value.op == ASSUME:
            self.assumption(s.value.args[0], s.value.args[1].value)
            return
        self.line(self.discard_statement.format(self.expr(s.value)))

    def assumption(self, condition: Expr, text: str) -> None:
        """T.assume: nothing, unless the target checks it where the kernel runs (an assumption the code
        does not rely on cannot make it wrong)."""

    def _s_BufferStore(self, s: S.BufferStore) -> None:
        buf = s.buffer
        if buf.scope == "local.var":
            self.line(f"{self.name(buf)} = {self.expr(s.value)};")
            return
        if is_packed(buf):
            self.packed_store(s)
            return
        raw = self.raw_copy(s)
        if raw is None:
            raw = self.fused_store(s)
        value = raw if raw is not None else self.to_storage(self.stored(s.value, buf.dtype), buf.dtype)
        self.line(self.store_line(buf, self.offset(buf, s.indices), value))

    def fused_store(self, s: S.BufferStore) -> str | None:
        """The stored form of `s.value` computed by one instruction of the target in the storage type,
        where that gives the value the computation type would round to (None: compute it as usual)."""
        return None

    def packed_store(self, s: S.BufferStore) -> None:
        """A store into packed memory: a pair of values (a 2-lane `vector`, whose first element is even)
        writes their whole byte; a lone value updates its nibble atomically, since another thread (or
        another block) may be writing the byte's other nibble at the same time."""
        buf, offset = s.buffer, self.offset(s.buffer, s.indices)
        if s.value.dtype.lanes == 1:
            self.line(self.nibble_store_line(buf, offset, self.nibble(s.value, buf.dtype)))
            return
        if not (isinstance(s.value, E.Call) and s.value.op == "vector" and len(s.value.args) == 2):
            self.fail(f"a {s.value.dtype} store into {buf.name}: packed memory takes one value or a pair")
        low, high = (self.nibble(v, buf.dtype) for v in s.value.args)
        self.line(self.store_line(buf, f"(({offset}) >> 1)", f"tc_nibble_pair({low}, {high})"))

    def nibble(self, e: Expr, dtype: DataType) -> str:
        """The nibble that stores `e` as the 4-bit type `dtype`: copied bits where `e` loads that type."""
        bits = self.raw_value(e, dtype)
        return bits if bits is not None else self.to_storage(self.stored(e, dtype), dtype)

    def nibble_store_line(self, buf: Buffer, offset: str, nibble: str) -> str:
        """The statement that sets the nibble of element `offset` of packed `buf`, atomically."""
        store = f"tc_store_nibble({self.name(buf)}, {offset}, {nibble});"
        return f"if ({self.in_bounds(buf, f'(({offset}) >> 1)')}) {store}" if self.bounds_check else store

    def stored(self, e: Expr, dtype: DataType) -> str:
        """The value a store of `e` into a `dtype` buffer converts: a cast to the buffer's 16-bit float
        or float8 type is dropped, since converting to storage rounds the same way (round to nearest
        even twice is once; saturation and NaN map the same) and the cast's round trip would cost two
        more conversions per element (an epilogue's f32 -> f16 store is three cvt instructions
        otherwise, and float8's software conversions are a dozen integer operations each)."""
        if isinstance(e, E.Cast) and e.dtype == dtype and (
            (dtype.kind in ("float", "bfloat") and dtype.bits == 16) or dtype.kind == "float8"
        ):
            return self.narrowing_source(e.value, dtype)
        if isinstance(e, E.Cast) and e.dtype == dtype and (dtype.kind == "microfloat" or dtype.is_packed):
            # rounding (wrapping, for 4-bit integers) twice is rounding once
            return f"({value_type(e.value.dtype)})({self.expr(e.value)})"
        return self.expr(e)

    def raw_copy(self, s: S.BufferStore) -> str | None:
        """The stored bits of an element copied unchanged between two buffers of one dtype (guarded
        loads at a tensor's edge included): converting through float would canonicalize NaN payloads
        and costs two conversions."""
        return self.raw_value(s.value, s.buffer.dtype)

    def raw_value(self, e: Expr, dtype: DataType) -> str | None:
        if isinstance(e, E.BufferLoad) and e.buffer.scope != "local.var" and e.buffer.dtype == dtype:
            offset = self.offset(e.buffer, e.indices)
            if is_packed(e.buffer):  # a 4-bit type is stored as its nibble on chip too
                return self.load_nibble(e.buffer, offset)
            return self.load_raw(e.buffer, offset)
        if isinstance(e, (E.FloatImm, E.IntImm)) and e.value == 0 and not math.copysign(1.0, e.value) < 0:
            return f"({storage_type(dtype)})0"  # +0 is all zero bits in every storage type
        if isinstance(e, E.Select):
            when_true = self.raw_value(e.true_value, dtype)
            when_false = self.raw_value(e.false_value, dtype)
            if when_true is not None and when_false is not None:
                return f"({self.expr(e.condition)} ? {when_true} : {when_false})"
        return None

    def store_line(self, buf: Buffer, offset: str, value: str) -> str:
        store = f"{self.name(buf)}[{offset}] = {value};"
        return f"if ({self.in_bounds(buf, offset)}) {store}" if self.bounds_check else store

    # ------------------------------------------------------------------ bounds checks (debug)

    # Bounds checks (pass config tilecraft.bounds_check): every load and store of a buffer calls the
    # device header's `tc_in_bounds(offset, size, site[, report])`, which records the first bad access
    # and says whether to make it; `sites` lists what each site number names. `bounds_report` is the
    # extra argument of targets whose record is per call.
    bounds_check = False
    bounds_report: str | None = None

    def check_bounds(self, enabled: bool, sites: list[BoundsSite] | None = None) -> None:
        """Check every buffer access from now on (when `enabled`), numbering the sites into `sites`."""
        self.bounds_check = enabled
        self.sites = sites if sites is not None else []

    def in_bounds(self, buf: Buffer, offset: str) -> str:
        self.sites.append(BoundsSite(buf.name, self.span))
        report = f", {self.bounds_report}" if self.bounds_report else ""
        return f"tc_in_bounds({offset}, {self.extent(buf)}, {len(self.sites)}{report})"

    def extent(self, buf: Buffer) -> str:
        """Elements addressable from the buffer's base (for bounds checks); bytes of packed memory."""
        if is_packed(buf):
            strides = self.strides(buf)
            last = " + ".join(f"((int64_t)({self.expr(d)}) - 1) * {st}" for d, st in zip(buf.shape, strides))
            return f"(({last} + 1 + 1) >> 1)" if buf.shape else "1"
        if not buf.strides:
            parts = [f"(int64_t)({self.expr(d)})" for d in buf.shape]
            return " * ".join(parts) if parts else "1"
        parts = [
            f"((int64_t)({self.expr(d)}) - 1) * (int64_t)({self.expr(s)})"
            for d, s in zip(buf.shape, buf.strides)
        ]
        return "(" + " + ".join(parts) + " + 1)"

    def _s_LetStmt(self, s: S.LetStmt) -> None:
        if self.is_nonneg(s.value):
            self.mark_nonneg(s.var)
        if not self.exact.is_index(s.value):
            self.exact.data_vars.add(s.var)
        self.scoped("{", s.body, self.let_declaration(s.var, s.value))

    def let_declaration(self, var: Var, value: Expr) -> str:
        """The declaration of a LetStmt's variable, in the block its body is printed in."""
        return f"const {value_type(var.dtype)} {self.name(var)} = {self.expr(value)};"

    def truth(self, e: Expr) -> str:
        """A branch or loop condition as the language tests it (C tests any scalar)."""
        return self.expr(e)

    def _s_IfThenElse(self, s: S.IfThenElse) -> None:
        self.line(f"if ({self.truth(s.condition)}) {{")
        self.block(s.then_case)
        if s.else_case is not None:
            self.line("} else {")
            self.block(s.else_case)
        self.line("}")

    def loop_pragma(self, s: S.For) -> str | None:
        """Pragma lines for the loop, if the target wants them: by default `#pragma unroll` for loops
        marked to be unrolled (per-thread register loops), which keeps their arrays in registers."""
        if s.kind is S.ForKind.UNROLLED or S.annotation(s.annotations, "unroll"):
            return "#pragma unroll"
        return None

    def _s_For(self, s: S.For) -> None:
        var = self.name(s.loop_var)
        if self.is_nonneg(s.min):
            self.mark_nonneg(s.loop_var)
        pragma = self.loop_pragma(s)
        for line in pragma.splitlines() if pragma else ():
            self.line(line)
        start = self.expr(s.min)
        end = self.expr(E.add(s.min, s.extent)) if E.const_value(s.min) != 0 else self.expr(s.extent)
        ctype = value_type(s.loop_var.dtype)
        self.line(f"for ({ctype} {var} = {start}; {var} < {end}; ++{var}) {{")
        self.block(s.body)
        self.line("}")

    def _s_While(self, s: S.While) -> None:
        self.line(f"while ({self.truth(s.condition)}) {{")
        self.block(s.body)
        self.line("}")

    def _s_AtomicUpdate(self, s: AtomicUpdate) -> None:
        suffix = ATOMIC_SUFFIX.get(s.buffer.dtype.name)
        if suffix is None:
            self.fail(f"atomic {s.kind} on {s.buffer.dtype} is not supported on {self.target_name}")
        ptr = f"&{self.name(s.buffer)}[{self.offset(s.buffer, s.indices)}]"
        value = self.expr(s.value)
        if s.buffer.dtype.is_float:
            self.line(f"tc_atomic_rmw_{suffix}({ptr}, {value}, {ATOMIC_OP[s.kind]});")
        else:
            self.line(f"tc_atomic_{s.kind}_{suffix}({ptr}, {value});")

    def _e_AtomicValue(self, e: E.AtomicValue) -> str:
        buf = e.target.buffer
        bits = ATOMIC_BITS.get(buf.dtype.name)
        if bits is None or buf.scope != "global":
            self.fail(f"T.atomic_{e.kind} on a {buf.scope} buffer of {buf.dtype} is not supported on "
                      f"{self.target_name}", "use a global buffer of float16, bfloat16, float32, float64 or "
                      "32- or 64-bit integers")  # fmt: skip
        ptr = self.atomic_pointer(buf, self.offset(buf, e.target.indices))
        order = E.MEMORY_ORDERS.index(e.memory_order)
        if e.kind == "load":
            return self.from_storage(f"tc_atomic_load_{bits}({ptr}, {order})", buf.dtype)
        value = self.expr(e.value)
        if e.kind == "store":
            return f"tc_atomic_store_{bits}({ptr}, {self.to_storage(value, buf.dtype)}, {order})"
        return f"tc_atomic_fetch_{ATOMIC_SUFFIX[buf.dtype.name]}({ptr}, {value}, {ATOMIC_OP[e.kind]}, {order})"

    def atomic_pointer(self, buf: Buffer, offset: str) -> str:
        """The address an atomic expression works on."""
        return f"&{self.name(buf)}[{offset}]"

    def _s_Allocate(self, s: S.Allocate) -> None:
        if s.buffer.scope == "local.var":
            self.declare_var_buffer(s)
            return
        self.scoped("{", s.body, self.declare_buffer(s.buffer))

    def declare_buffer(self, buf: Buffer) -> str:
        """The declaration of an allocated buffer: a pointer into the block's arena at its planned offset
        for the `arena_scopes`, else a per-thread array."""
        ctype = storage_type(buf.dtype)
        if buf.scope in self.arena_scopes:
            return self.arena_pointer(buf, ctype, self.arena_offsets[id(buf)])
        return self.private_array(buf, ctype)

    def arena_pointer(self, buf: Buffer, ctype: str, offset: int) -> str:
        self.fail(f"the code generator for {self.target_name} cannot place {buf.scope} buffer {buf.name}")

    def private_array(self, buf: Buffer, ctype: str) -> str:
        return f"{ctype} {self.name(buf)}[{static_size(buf)}];"

    # ------------------------------------------------------------------ T.print

    # A printed line starts with where it comes from: `print_where` (printf conversions), filled by
    # `print_ids`.
    print_where = "[block %d,%d,%d] "
    print_ids = "tc_bx, tc_by, tc_bz"
    print_flush = False

    def print_format(self, dtype: DataType, value: str) -> tuple[str, str]:
        return printf_format(dtype, value)

    def _s_Print(self, s: S.Print) -> None:
        prefix = c_string(f"{s.msg}: " if s.msg else "")
        if isinstance(s.value, BufferRegion):
            self._print_region(s.value, prefix)
        else:
            fmt, value = self.print_format(s.value.dtype, self.expr(s.value))
            self.line(f'printf("{self.print_where}{prefix}{fmt}\\n", {self.print_ids}, {value});')
        if self.print_flush:
            self.line("fflush(stdout);")

    def _print_region(self, r: BufferRegion, prefix: str) -> None:
        """One line per element, with its indices in the buffer."""
        loops = [Var(int32, f"p{k}") for k in range(len(r.ranges))]
        index = tuple(E.add(rng.min, v) for rng, v in zip(r.ranges, loops))
        fmt, value = self.print_format(r.dtype, self.expr(E.BufferLoad(r.dtype, r.buffer, index)))
        for v, rng in zip(loops, r.ranges):
            n = self.name(v)
            self.line(f"for (int32_t {n} = 0; {n} < {self.expr(rng.extent)}; ++{n})")
        where = ", ".join("%d" for _ in loops)
        args = ", ".join(f"(int)({self.expr(i)})" for i in index)
        text = f"{self.print_where}{prefix}{r.buffer.name}[{where}] = {fmt}\\n"
        self.line(f'    printf("{text}", {self.print_ids}, {args}, {value});')

    def declare_var_buffer(self, s: S.Allocate) -> None:
        self.scoped("{", s.body, f"{value_type(s.buffer.dtype)} {self.name(s.buffer)};")


def narrow_constant(value: float, dtype: DataType) -> float:
    """A constant of float16, bfloat16 or float8 rounded once to its type (tilecraft.ir.narrowing), so
    that the generated code, which writes it as a float32 literal and converts that, rounds it once: a
    literal rounded to float32 first is rounded twice. A value past the range of float8_e4m3fn (which
    has no infinity; ml_dtypes gives NaN) is kept as it is, for the conversion to saturate as it does
    at run time."""
    if dtype.bits > 16 or dtype.kind not in ("float", "bfloat", "float8") or not math.isfinite(value):
        return value
    rounded = round_scalar_once(value, dtype)
    return value if math.isnan(rounded) else rounded


def static_size(buf: Buffer) -> int:
    """Elements of a per-thread array, whose shape must be static."""
    from tilecraft.transform.storage import static_elements

    return static_elements(buf, "per-thread buffer")


def printf_format(dtype: DataType, value: str) -> tuple[str, str]:
    """A printf conversion and the argument for a value of `dtype`."""
    if dtype.is_float:
        return "%.6g", f"(double)({value})"
    if dtype.bits == 64:
        return "%lld", f"(long long)({value})"
    return "%d", f"(int)({value})"


def c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
