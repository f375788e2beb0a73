"""Prints lowered tile IR as the body of one WGSL compute entry point.

WGSL is not C: no pointers or casts between them, no implicit conversions (operands of one operator have
one type), `select(f, t, c)` instead of `?:`, atomics only on `atomic<T>` elements. So the statement walk
and names come from the shared C-family base and every expression and buffer access is printed here.

Global buffers are module-scope storage arrays (named by the codegen); workgroup buffers live in one
workgroup array per WGSL element type, at offsets `WorkgroupPlan` chose; per-invocation buffers are
function-scope arrays; `local.var` buffers are scalars. Helper functions (rounding to bfloat16, floor
division, erf) are collected as they are used and emitted once per module.
"""

from __future__ import annotations

import math

from tilecraft.codegen.addressing import offset_terms, row_major_strides
from tilecraft.codegen.c_family import CFamilyPrinter, narrow_constant, static_size
from tilecraft.codegen.reserved import ReservedNames, words
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.dtype import DataType
from tilecraft.ir.expr import Expr
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.op import DEVICE_ASSERT, FMA, FMAX, FMIN, RNG_CALLS
from tilecraft.webgpu import helpers
from tilecraft.webgpu.simt import SHUFFLE_XOR
from tilecraft.webgpu.target import NO_PRINTF
from tilecraft.webgpu.types import storage_type, value_type

SHARED = ("shared", "shared.dyn")
_COMPARE = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}
_LOGIC = {"And": "&&", "Or": "||"}
# 64-bit ordering as (swap the operands, negate the result) of one less-than helper: lavapipe (Mesa 22.3)
# gets `i64(1) > 200li` wrong, and the helper compares the 32-bit halves instead.
_ORDER = {"LT": (False, False), "GT": (True, False), "LE": (True, True), "GE": (False, True)}
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}
_SHIFTS = {"shift_left": "<<", "shift_right": ">>"}
MATH = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt", "floor": "floor",
        "ceil": "ceil", "round": "round", "sin": "sin", "cos": "cos", "pow": "pow", "abs": "abs"}  # fmt: skip
_WRAP = {"int8": "tc_wrap_i8", "int16": "tc_wrap_i16"}
_MASK = {"uint8": "0xffu", "uint16": "0xffffu"}
# WGSL keywords, reserved words and predeclared names (types and built-in functions): a kernel's names
# that are one, or match one of WGSL_PATTERNS, get `v_` in front.
WGSL_WORDS = frozenset(["alias", "break", "case", "const", "const_assert", "continue", "continuing", "default", "diagnostic", "discard", "else", "enable", "false", "fn", "for", "if", "let", "loop", "override", "requires", "return", "struct", "switch", "true", "var", "while", "bool", "f16", "f32", "f64", "i32", "i64", "u32", "u64", "array", "atomic", "vec2", "vec3", "vec4", "mat2x2", "mat3x3", "mat4x4", "ptr", "sampler", "texture_2d", "function", "private", "workgroup", "uniform", "storage", "read", "write", "read_write", "NULL", "Self", "abstract", "active", "alignas", "alignof", "as", "asm", "asm_fragment", "async", "attribute", "auto", "await", "become", "cast", "catch", "class", "co_await", "co_return", "co_yield", "coherent", "column_major", "common", "compile", "compile_fragment", "concept", "const_cast", "consteval", "constexpr", "constinit", "crate", "debugger", "decltype", "delete", "demote", "demote_to_helper", "do", "dynamic_cast", "enum", "explicit", "export", "extends", "extern", "external", "fallthrough", "filter", "final", "finally", "friend", "from", "fxgroup", "get", "goto", "groupshared", "highp", "impl", "implements", "import", "inline", "instanceof", "interface", "layout", "lowp", "macro", "macro_rules", "match", "mediump", "meta", "mod", "module", "move", "mut", "mutable", "namespace", "new", "nil", "noexcept", "noinline", "nointerpolation", "non_coherent", "noncoherent", "noperspective", "null", "nullptr", "of", "operator", "package", "packoffset", "partition", "pass", "patch", "pixelfragment", "precise", "precision", "premerge", "priv", "protected", "pub", "public", "readonly", "ref", "regardless", "register", "reinterpret_cast", "require", "resource", "restrict", "self", "set", "shared", "sizeof", "smooth", "snorm", "static", "static_assert", "static_cast", "std", "subroutine", "super", "target", "template", "this", "thread_local", "throw", "trait", "try", "type", "typedef", "typeid", "typename", "typeof", "union", "unless", "unorm", "unsafe", "unsized", "use", "using", "varying", "virtual", "volatile", "wgsl", "where", "with", "writeonly", "yield", "exp", "exp2", "log", "log2", "sqrt", "floor", "ceil", "round", "sin", "cos", "pow", "abs", "min", "max", "select", "bitcast", "tanh", "clamp", "inverseSqrt", "atomicLoad", "atomicStore", "atomicAdd", "atomicMax", "atomicMin", "atomicCompareExchangeWeak", "workgroupBarrier", "storageBarrier", "subgroupShuffleXor", "unpack2x16float", "pack2x16float"])


WGSL_BUILTINS = words("""acos acosh all any arrayLength asin asinh atan atan2 atanh cosh countLeadingZeros
countOneBits countTrailingZeros cross degrees determinant distance dot dot4U8Packed dot4I8Packed
extractBits faceForward firstLeadingBit firstTrailingBit fma fract frexp insertBits ldexp length mix modf
normalize quantizeToF16 radians reflect refract reverseBits saturate sign sinh smoothstep step tan
transpose trunc dpdx dpdxCoarse dpdxFine dpdy dpdyCoarse dpdyFine fwidth fwidthCoarse fwidthFine
textureBarrier workgroupUniformLoad mat2x3 mat2x4 mat3x2 mat3x4 mat4x2 mat4x3 sampler_comparison""")
# Shorthand vector and matrix types, the packing, atomic, subgroup, quad, texture and barrier families,
# and WGSL's own reservation of names that start with two underscores.
WGSL_PATTERNS = (r"__\w*", r"vec[2-4][fhiu]", r"mat[2-4]x[2-4][fh]", r"(pack|unpack)\w+", r"atomic\w*",
                 r"subgroup\w*", r"quad\w*", r"texture\w*", r"workgroup\w*", r"storage\w*")
WGSL_RESERVED = ReservedNames(WGSL_WORDS | WGSL_BUILTINS, WGSL_PATTERNS)


class WgslPrinter(CFamilyPrinter):
    """Writes the body of one WGSL entry point.

    `globals` maps each global buffer parameter to its module-scope name and `atomics` the ones declared
    as atomic arrays to their atomic element type (`atomic<u32>` holds a float32 updated by
    compare-exchange). Workgroup buffers live in one array of u32 words, `arena`, at the byte offsets of
    `arena_offsets`; elements narrower than a word are packed, and their stores change only their own
    bits through atomicAnd/atomicOr, so the array is `atomic<u32>` (`arena_atomic`) when a kernel has one;
    an 8-byte element takes two words (low, high).
    """

    target_name = "the WebGPU target"
    reserved_names = WGSL_RESERVED
    # like __syncthreads: workgroup memory and the workgroup's view of storage buffers
    barrier_statement = "storageBarrier();\nworkgroupBarrier();"
    discard_statement = "_ = {};"

    def __init__(self, f16: bool, globals_: dict[int, str], atomics: dict[int, str],
                 arena: str, arena_offsets: dict[int, int], arena_atomic: bool) -> None:  # fmt: skip
        super().__init__()
        self.f16 = f16
        self.globals = globals_
        self.atomics = atomics
        self.arena = arena
        self.arena_offsets = arena_offsets
        self.arena_atomic = arena_atomic
        self.helpers: set[str] = set()

    def name(self, obj) -> str:
        if isinstance(obj, Buffer) and obj.address is not None:
            self.refuse_address(obj, "WGSL reaches memory only through the storage buffers bound to the "
                                "pipeline, never through an address", "pass the tensor as a T.Tensor parameter")
        if id(obj) in self.globals:
            return self.globals[id(obj)]
        return super().name(obj)

    def is_reserved(self, name: str) -> bool:
        return name[0] == "_" or super().is_reserved(name)  # `_` alone is WGSL's phony assignment

    def helper(self, name: str) -> str:
        self.helpers.add(name)
        return name

    # ------------------------------------------------------------------ types and conversions

    def typed(self, e: Expr, dtype: DataType) -> str:
        """`e` printed as a value of `dtype`'s WGSL type, converted when its own type differs."""
        text = self.expr(e)
        want, have = value_type(dtype), value_type(e.dtype)
        return text if want == have else _conversion(have, want, text)

    def wrap(self, dtype: DataType, text: str) -> str:
        """An integer value of a dtype narrower than 32 bits brought back into its range."""
        if dtype.name in _WRAP:
            return f"{self.helper(_WRAP[dtype.name])}({text})"
        if dtype.name in _MASK:
            return f"({text} & {_MASK[dtype.name]})"
        return text

    def arithmetic(self, e: E.BinaryOp, op: str) -> str:
        """WGSL's i32 and i64 arithmetic wraps around; narrower data wraps at its width."""
        return self.narrowed(e, f"({self.typed(e.a, e.dtype)} {op} {self.typed(e.b, e.dtype)})")

    def narrowed(self, e: Expr, text: str) -> str:
        return self.wrap(e.dtype, text) if self.wraps(e) else text

    # ------------------------------------------------------------------ expressions

    def expr(self, e: Expr) -> str:
        kind = type(e).__name__
        method = getattr(self, "_e_" + kind, None)
        if method is not None:
            return method(e)
        if kind in _COMPARE:
            common = _common(e.a.dtype, e.b.dtype)
            a, b = self.typed(e.a, common), self.typed(e.b, common)
            if common.is_integer and common.bits == 64 and kind in _ORDER:
                return self._order64(kind, value_type(common), a, b)
            return f"({a} {_COMPARE[kind]} {b})"
        if kind in _LOGIC:
            return f"({self.truth(e.a)} {_LOGIC[kind]} {self.truth(e.b)})"
        self.fail(f"the code generator for {self.target_name} cannot print {kind}")

    def _order64(self, kind: str, wgsl: str, a: str, b: str) -> str:
        swap, negate = _ORDER[kind]
        call = f"{self.helper('tc_lt_' + wgsl)}({b if swap else a}, {a if swap else b})"
        return f"(!{call})" if negate else call

    def truth(self, e: Expr) -> str:
        return self.expr(e) if e.dtype.is_bool else f"({self.expr(e)} != {value_type(e.dtype)}(0))"

    def _e_IntImm(self, e: E.IntImm) -> str:
        v = e.value
        if e.dtype.is_bool:
            return "true" if v else "false"
        wgsl = value_type(e.dtype)
        if e.dtype.is_float:
            return self._e_FloatImm(E.FloatImm(e.dtype, float(v)))
        suffix = {"i32": "i", "u32": "u", "i64": "li", "u64": "lu"}[wgsl]
        low = -(2 ** (64 if wgsl == "i64" else 32) // 2)
        if v == low:
            return f"({v + 1}{suffix} - 1{suffix})"
        return f"({v}{suffix})" if v < 0 else f"{v}{suffix}"

    def _e_FloatImm(self, e: E.FloatImm) -> str:
        v = narrow_constant(e.value, e.dtype)
        wgsl = value_type(e.dtype)
        if math.isnan(v) or math.isinf(v):
            bits = "0x7fc00000u" if math.isnan(v) else "0x7f800000u"
            text = f"bitcast<f32>({bits})"
            if wgsl == "f64":
                text = f"f64({text})"
            return text if math.isnan(v) or v > 0 else f"(-{text})"
        text = repr(float(v))
        if "e" not in text and "." not in text:
            text += ".0"
        return f"{text}{'lf' if wgsl == 'f64' else 'f'}" if v >= 0 else f"({text}{'lf' if wgsl == 'f64' else 'f'})"

    def _e_Div(self, e: E.Div) -> str:
        return self.narrowed(e, f"({self.typed(e.a, e.dtype)} / {self.typed(e.b, e.dtype)})")

    def _e_TruncMod(self, e: E.TruncMod) -> str:
        return self.narrowed(e, f"({self.typed(e.a, e.dtype)} % {self.typed(e.b, e.dtype)})")

    def _e_FloorDiv(self, e: E.FloorDiv) -> str:
        a, b = self.typed(e.a, e.dtype), self.typed(e.b, e.dtype)
        if e.dtype.is_float:
            return f"floor({a} / {b})"
        if e.dtype.is_uint or (self.is_nonneg(e.a) and self.is_nonneg(e.b)):
            return self.narrowed(e, f"({a} / {b})")
        return self.narrowed(e, f"{self.helper('tc_floordiv_' + value_type(e.dtype))}({a}, {b})")

    def _e_FloorMod(self, e: E.FloorMod) -> str:
        a, b = self.typed(e.a, e.dtype), self.typed(e.b, e.dtype)
        if e.dtype.is_float:
            return f"({a} - floor({a} / {b}) * {b})"
        if e.dtype.is_uint or (self.is_nonneg(e.a) and self.is_nonneg(e.b)):
            return self.narrowed(e, f"({a} % {b})")
        return self.narrowed(e, f"{self.helper('tc_floormod_' + value_type(e.dtype))}({a}, {b})")

    def _e_Min(self, e: E.Min) -> str:
        return self._extremum("min", e)

    def _e_Max(self, e: E.Max) -> str:
        return self._extremum("max", e)

    def _extremum(self, op: str, e: E.Min | E.Max) -> str:
        """WGSL's min and max; for floats NumPy's minimum and maximum, through a helper that gives NaN
        when an operand is NaN (WGSL's own return the other operand, or anything)."""
        a, b = self.typed(e.a, e.dtype), self.typed(e.b, e.dtype)
        if not e.dtype.is_float:
            return f"{op}({a}, {b})"
        return f"{self.helper(f'tc_{op}_{value_type(e.dtype)}')}({a}, {b})"

    def _e_Not(self, e: E.Not) -> str:
        return f"(!{self.truth(e.a)})"

    def _e_Select(self, e: E.Select) -> str:
        t, f = self.typed(e.true_value, e.dtype), self.typed(e.false_value, e.dtype)
        return f"select({f}, {t}, {self.truth(e.condition)})"

    def _e_Cast(self, e: E.Cast) -> str:
        return self.convert(self.expr(e.value), e.value.dtype, e.dtype)

    def convert(self, text: str, src: DataType, dst: DataType) -> str:
        """A value of `src` as one of `dst`, rounded or wrapped to `dst` where its WGSL type is wider."""
        if dst.is_bool:
            return text if src.is_bool else f"({text} != {value_type(src)}(0))"
        wgsl = value_type(dst)
        plain = text if value_type(src) == wgsl else _conversion(value_type(src), wgsl, text)
        if dst.name in ("float16", "bfloat16"):
            plain = self._rounded_to_odd(text, src, dst) or plain
        if dst.name == "float16":
            return f"f32(f16({plain}))" if self.f16 else f"{self.helper('tc_round_f16')}({plain})"
        if dst.name == "bfloat16":
            return f"{self.helper('tc_round_bf16')}({plain})"
        return self.wrap(dst, plain) if dst.bits < 32 else plain

    def _rounded_to_odd(self, text: str, src: DataType, dst: DataType) -> str | None:
        """`text` as the f32 that float16 or bfloat16 `dst` rounds from in one rounding, where a plain f32()
        would round first: float64, and integers of 32 bits or more for bfloat16 (helpers.py)."""
        have = value_type(src)
        if have != "f64" and not (dst.name == "bfloat16" and src.is_integer and src.bits >= 32):
            return None
        for needed in {"i32": ("u32",), "i64": ("u64", "u32"), "u64": ("u32",)}.get(have, ()):
            self.helper(f"tc_{needed}_to_f32_odd")
        return f"{self.helper(f'tc_{have}_to_f32_odd')}({text})"

    def _shift_amount(self, amount: Expr) -> str:
        # WGSL shifts by a u32; naga refuses to convert a 64-bit literal (`u32(8lu)`), so constants are
        # written as u32 literals
        value = E.const_value(amount)
        if isinstance(value, int) and 0 <= value < 2**32:
            return f"{value}u"
        return f"u32({self.expr(amount)})"

    def _e_Call(self, e: E.Call) -> str:
        if e.op in _BITWISE:
            return f"({self.typed(e.args[0], e.dtype)} {_BITWISE[e.op]} {self.typed(e.args[1], e.dtype)})"
        if e.op in _SHIFTS:
            shifted = f"({self.typed(e.args[0], e.dtype)} {_SHIFTS[e.op]} {self._shift_amount(e.args[1])})"
            return self.narrowed(e, shifted)
        if e.op == "bitwise_not":
            return self.narrowed(e, f"(~{self.typed(e.args[0], e.dtype)})")
        if e.op == SHUFFLE_XOR:
            return f"subgroupShuffleXor({self.typed(e.args[0], e.dtype)}, u32({self.expr(e.args[1])}))"
        if e.op == "thread_index":
            return "i32(tc_lix)"
        if e.op == "reinterpret":
            return self._reinterpret(e)
        if e.op == DEVICE_ASSERT:
            return self.device_assert(e.args[0], e.args[1].value)
        if e.op in RNG_CALLS:
            self.fail(f"T.{e.op} is not supported on {self.target_name}: cuRAND's generators are C-family "
                      "device functions (tc_rng.h), which WGSL has no translation of",
                      "draw the numbers on the cpu, cuda, hip or opencl target, or pass them in")  # fmt: skip
        args = [self.typed(a, e.dtype) for a in e.args]
        if e.op == "abs" and not e.dtype.is_float:
            return self.narrowed(e, f"abs({args[0]})")
        return self.math_call(e, args)

    def _reinterpret(self, e: E.Call) -> str:
        source, dest = e.args[0].dtype, e.dtype
        narrow_integers = source.is_integer and dest.is_integer and source.bits == dest.bits < 32
        if narrow_integers and source.lanes == 1:
            # held widened in an i32 / u32: the bits as the other type's word, wrapped to its width
            return self.wrap(dest, f"bitcast<{value_type(dest)}>({self.expr(e.args[0])})")
        if source.bits != 32 or source.lanes != 1:
            self.fail(
                f"T.reinterpret of {source} as {dest} is not supported on {self.target_name}: WGSL's "
                "bitcast takes 32-bit scalars here (f32, i32, u32)"
            )
        return f"bitcast<{value_type(dest)}>({self.expr(e.args[0])})"

    def math_call(self, e: E.Call, args: list[str]) -> str:
        one = "1.0lf" if value_type(e.dtype) == "f64" else "1.0f"
        if e.op == "rsqrt":
            return f"inverseSqrt({args[0]})"
        if e.op == "sigmoid":
            return f"({one} / ({one} + exp(-({args[0]}))))"
        if e.op == "tanh":
            # tanh of a large |x| is NaN on some drivers (exp overflows); it is +-1 to f32 precision by 10.
            return f"tanh(clamp({args[0]}, -10.0f, 10.0f))"
        if e.op == "erf" and value_type(e.dtype) == "f32":
            return f"{self.helper('tc_erf')}({args[0]})"
        if e.op in MATH:
            return f"{MATH[e.op]}({', '.join(args)})"
        if e.op in (FMAX, FMIN):
            # WGSL's max / min of a NaN may return anything: a helper tests the operands' bits.
            a, b = (self.typed(x, e.dtype) for x in e.args)
            return f"{self.helper(f'tc_{e.op}_{value_type(e.dtype)}')}({a}, {b})"
        if e.op == FMA:
            self.fail(f"a fused multiply-add (T.fma2) is not supported on {self.target_name}: WGSL's fma may "
                      "round the product and the sum separately, and WGSL has no float64 to round it once",
                      "write x * y + z (rounded twice), or run the kernel on the cpu, cuda, hip or opencl target")  # fmt: skip
        self.fail(f"intrinsic {e.op!r} is not supported on {self.target_name}")

    # ------------------------------------------------------------------ buffer access

    def element(self, buf: Buffer, offset: str) -> str:
        """The array element `offset` of `buf` (an l-value)."""
        return f"{self.name(buf)}[{offset}]"

    # ------------------------------------------------------------------ workgroup memory (packed words)

    def _word(self, buf: Buffer, offset: str) -> tuple[str, str | None]:
        """The arena word holding element `offset` of `buf`, and the bit shift of a sub-word element."""
        base, size = self.arena_offsets[id(buf)], buf.dtype.bytes
        per_word = 4 // size
        if per_word == 1:
            return f"{self.arena}[{base // 4} + {offset}]", None
        word = f"{self.arena}[{base // 4} + ({offset}) / {per_word}]"
        return word, f"u32(({offset}) % {per_word}) * {8 * size}u"

    def _read_word(self, word: str) -> str:
        return f"atomicLoad(&{word})" if self.arena_atomic else word

    def _word_pair(self, buf: Buffer, offset: str) -> tuple[str, str]:
        """The two arena words (low, high) holding 8-byte element `offset` of `buf`."""
        first = f"{self.arena_offsets[id(buf)] // 4} + 2 * ({offset})"
        return f"{self.arena}[{first}]", f"{self.arena}[{first} + 1]"

    def _shared_load_wide(self, buf: Buffer, offset: str) -> str:
        lo, hi = (self._read_word(w) for w in self._word_pair(buf, offset))
        bits = f"((u64({hi}) << 32u) | u64({lo}))"
        kind = value_type(buf.dtype)
        return bits if kind == "u64" else f"bitcast<{kind}>({bits})"

    def _shared_store_wide(self, buf: Buffer, offset: str, value: str) -> str:
        # WGSL has no 64-bit workgroup word here: the element is split over two u32 words of its own.
        lo, hi = self._word_pair(buf, offset)
        bits = value if value_type(buf.dtype) == "u64" else f"bitcast<u64>({value})"
        halves = ((lo, "u32(tc_bits & 0xfffffffflu)"), (hi, "u32(tc_bits >> 32u)"))
        stores = " ".join(f"atomicStore(&{w}, {v});" if self.arena_atomic else f"{w} = {v};" for w, v in halves)
        return f"{{ let tc_bits = {bits}; {stores} }}"

    def shared_load(self, buf: Buffer, offset: str) -> str:
        if buf.dtype.bytes == 8:
            return self._shared_load_wide(buf, offset)
        word, shift = self._word(buf, offset)
        bits = self._read_word(word)
        dtype = buf.dtype
        if shift is None:
            return bits if value_type(dtype) == "u32" else f"bitcast<{value_type(dtype)}>({bits})"
        width = 8 * dtype.bytes
        raw = f"(({bits} >> ({shift})) & {hex((1 << width) - 1)}u)"
        if dtype.name == "float16":
            return f"unpack2x16float({raw}).x"
        if dtype.name == "bfloat16":
            return f"bitcast<f32>({raw} << 16u)"
        if dtype.is_bool:
            return f"({raw} != 0u)"
        if dtype.is_int:
            return f"(bitcast<i32>({raw} << {32 - width}u) >> {32 - width}u)"
        return raw

    def shared_store(self, buf: Buffer, offset: str, value: str) -> str:
        if buf.dtype.bytes == 8:
            return self._shared_store_wide(buf, offset, value)
        word, shift = self._word(buf, offset)
        dtype = buf.dtype
        if shift is None:
            bits = value if value_type(dtype) == "u32" else f"bitcast<u32>({value})"
            return f"atomicStore(&{word}, {bits});" if self.arena_atomic else f"{word} = {bits};"
        mask = hex((1 << (8 * dtype.bytes)) - 1) + "u"
        if dtype.name == "float16":
            bits = f"(pack2x16float(vec2<f32>({value}, 0.0f)) & {mask})"
        elif dtype.name == "bfloat16":
            bits = f"(bitcast<u32>({self.helper('tc_round_bf16')}({value})) >> 16u)"
        elif dtype.is_bool:
            bits = f"select(0u, 1u, {value})"
        else:
            bits = f"(bitcast<u32>({value}) & {mask})"
        return (f"atomicAnd(&{word}, ~({mask} << ({shift}))); "
                f"atomicOr(&{word}, {bits} << ({shift}));")  # fmt: skip

    def load_raw(self, buf: Buffer, offset: str) -> str:
        atomic = self.atomics.get(id(buf))
        if atomic is None:
            return self.element(buf, offset)
        loaded = f"atomicLoad(&{self.element(buf, offset)})"
        return f"bitcast<f32>({loaded})" if atomic == "u32" and buf.dtype.is_float else loaded

    def store_line(self, buf: Buffer, offset: str, value: str) -> str:
        atomic = self.atomics.get(id(buf))
        if atomic is None:
            return f"{self.element(buf, offset)} = {value};"
        if atomic == "u32" and buf.dtype.is_float:
            value = f"bitcast<u32>({value})"
        return f"atomicStore(&{self.element(buf, offset)}, {value});"

    def storage(self, buf: Buffer) -> str:
        return storage_type(buf.dtype, buf.scope, self.f16)

    def from_storage(self, raw: str, buf_or_dtype) -> str:
        buf = buf_or_dtype
        stored = self.storage(buf)
        if stored == "f16":
            return f"f32({raw})"
        if buf.dtype.is_bool and stored == "u32":
            return f"({raw} != 0u)"
        return raw

    def to_storage(self, value: str, buf) -> str:
        stored = self.storage(buf)
        dtype = buf.dtype
        if stored == "f16":
            return f"f16({value})"
        if dtype.name == "float16":
            return f"{self.helper('tc_round_f16')}({value})"
        if dtype.name == "bfloat16":
            return f"{self.helper('tc_round_bf16')}({value})"
        if dtype.is_bool:
            return f"select(0u, 1u, {value})" if stored == "u32" else value
        return self.wrap(dtype, value)

    def _e_BufferLoad(self, e: E.BufferLoad) -> str:
        buf = e.buffer
        if buf.scope == "local.var":
            return self.name(buf)
        if buf.scope in SHARED:
            return self.shared_load(buf, self.offset(buf, e.indices))
        return self.from_storage(self.load_raw(buf, self.offset(buf, e.indices)), buf)

    def strides(self, buf: Buffer) -> list[str]:
        if buf.strides:
            return [self._index(s) for s in buf.strides]
        return row_major_strides(buf.shape, self._index)

    def _index(self, e: Expr) -> str:
        """An index expression as i32 (WGSL indexes arrays with 32-bit integers)."""
        value = E.const_value(e)
        if isinstance(value, int):
            return str(value)
        text = self.expr(e)
        return text if value_type(e.dtype) == "i32" else f"i32({text})"

    def offset(self, buf: Buffer, indices) -> str:
        terms = offset_terms(indices, self.strides(buf), self._index)
        return "(" + " + ".join(terms) + ")" if len(terms) > 1 else terms[0] if terms else "0"

    # ------------------------------------------------------------------ statements

    def _s_BufferStore(self, s: S.BufferStore) -> None:
        buf = s.buffer
        if buf.scope == "local.var":
            self.line(f"{self.name(buf)} = {self.typed(s.value, buf.dtype)};")
            return
        if buf.scope in SHARED:
            self.line(self.shared_store(buf, self.offset(buf, s.indices), self.typed(s.value, buf.dtype)))
            return
        raw = self.raw_copy(s)
        value = raw if raw is not None else self.to_storage(self.typed(s.value, buf.dtype), buf)
        self.line(self.store_line(buf, self.offset(buf, s.indices), value))

    def raw_value(self, e: Expr, buf_or_dtype) -> str | None:
        """The stored form of `e`, copied unchanged, when it is an element of a buffer with the same
        dtype and WGSL storage (guarded selects of such included)."""
        target = buf_or_dtype
        if (isinstance(e, E.BufferLoad) and e.buffer.scope not in ("local.var", *SHARED)
                and e.buffer.dtype == target.dtype and self.storage(e.buffer) == self.storage(target)
                and id(e.buffer) not in self.atomics):  # fmt: skip
            return self.load_raw(e.buffer, self.offset(e.buffer, e.indices))
        if isinstance(e, E.Select):
            t, f = self.raw_value(e.true_value, target), self.raw_value(e.false_value, target)
            if t is not None and f is not None:
                return f"select({f}, {t}, {self.truth(e.condition)})"
        return None

    def raw_copy(self, s: S.BufferStore) -> str | None:
        if id(s.buffer) in self.atomics:
            return None
        return self.raw_value(s.value, s.buffer)

    def let_declaration(self, var: E.Var, value: Expr) -> str:
        return f"let {self.name(var)}: {value_type(var.dtype)} = {self.typed(value, var.dtype)};"

    def _s_For(self, s: S.For) -> None:
        var = self.name(s.loop_var)
        if self.is_nonneg(s.min):
            self.mark_nonneg(s.loop_var)
        dtype = s.loop_var.dtype
        start = self.typed(s.min, dtype)
        end = self.typed(E.add(s.min, s.extent), dtype) if E.const_value(s.min) != 0 else self.typed(s.extent, dtype)
        self.line(f"for (var {var}: {value_type(dtype)} = {start}; {var} < {end}; {var}++) {{")
        self.block(s.body)
        self.line("}")

    def _e_AtomicValue(self, e: E.AtomicValue) -> str:
        self.fail(f"T.atomic_{e.kind} as an expression (atomic_load, atomic_store, return_prev=True) is not "
                  f"supported on {self.target_name}: WGSL's atomicLoad / atomicStore / atomicAdd work on atomic<i32> and atomic<u32> storage, which this target does not declare for them",
                  "run the kernel on the CPU, CUDA or HIP target, or use the statement form (T.atomic_add without "
                  "return_prev) and plain loads and stores ordered by the kernel's barriers")

    def _s_AtomicUpdate(self, s: AtomicUpdate) -> None:
        buf = s.buffer
        atomic = self.atomics.get(id(buf))
        if atomic is None:
            self.fail(f"buffer {buf.name} is updated atomically but was not declared atomic")
        where = f"&{self.element(buf, self.offset(buf, s.indices))}"
        value = self.typed(s.value, buf.dtype)
        if atomic != "u32" or not buf.dtype.is_float:
            fn = {"add": "atomicAdd", "max": "atomicMax", "min": "atomicMin"}[s.kind]
            self.line(f"_ = {fn}({where}, {value});")
            return
        combine = {"add": "tc_old_value + tc_value", "max": "max(tc_old_value, tc_value)",
                   "min": "min(tc_old_value, tc_value)"}[s.kind]  # fmt: skip
        for text in ("{", f"    let tc_value: f32 = {value};", f"    let tc_at = {where};",
                     "    var tc_old: u32 = atomicLoad(tc_at);", "    loop {",
                     "        let tc_old_value = bitcast<f32>(tc_old);",
                     f"        let tc_swap = atomicCompareExchangeWeak(tc_at, tc_old, bitcast<u32>({combine}));",
                     "        if (tc_swap.exchanged) { break; }", "        tc_old = tc_swap.old_value;", "    }", "}"):  # fmt: skip
            self.line(text)

    def _s_Allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        if buf.scope in SHARED:
            self.stmt(s.body)  # its bytes are in the kernel's workgroup array
            return
        if buf.scope == "local.var":
            declaration = f"var {self.name(buf)}: {value_type(buf.dtype)};"
        else:
            declaration = f"var {self.name(buf)}: array<{self.storage(buf)}, {static_size(buf)}>;"
        self.scoped("{", s.body, declaration)

    def _s_Print(self, s: S.Print) -> None:
        self.fail(f"T.print is not supported on WebGPU: {NO_PRINTF.reason}", NO_PRINTF.fix)

    def helper_text(self) -> list[str]:
        return [helpers.SOURCES[name] for name in sorted(self.helpers)]


def _common(a: DataType, b: DataType) -> DataType:
    """The dtype two compared operands are both converted to."""
    if value_type(a) == value_type(b):
        return a
    if a.is_float != b.is_float:
        return a if a.is_float else b
    return a if a.bits >= b.bits else b


def _conversion(have: str, want: str, text: str) -> str:
    """`text` of WGSL type `have` as a `want`. u32 -> i64 goes through u64: lavapipe (Mesa 22.3) sign-extends
    `i64(x)` of a u32 at or above 2**31."""
    if have == "u32" and want == "i64":
        return f"i64(u64({text}))"
    return f"{want}({text})"
