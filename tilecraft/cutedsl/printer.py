"""Prints lowered tile IR as the body of a CuTe DSL kernel (`@cute.kernel`, Python).

Placement mirrors the cuda printer's: global buffers are `cute.Pointer` parameters viewed as 1-D
tensors; shared buffers are tensors over the block's dynamic shared memory at the offsets the
shared-memory plan chose; per-thread buffers (fragments, `local`) are register tensors
(`cute.make_rmem_tensor`); a `local.var` is a register tensor of one element, so that loops and branches
may update it. Values of float16 and bfloat16 are computed in Float32 and rounded where the IR casts and
where they are stored, as the C-family printers do.

Instructions are CuTe atoms: cp.async copies are `cute.copy` through a `cpasync.CopyG2SOp` copy atom,
a tensor-core gemm (`GemmCall`, variant "ss") loads its operand fragments with ldmatrix copy atoms
(`warp.LdMatrix8x8x16bOp`) and issues m16n8k16 MMA atoms (`warp.MmaF16BF16Op`) with `cute.gemm`, in the
register order of tilecraft/cuda/include/tc_cuda.h's `tc::gemm_ss` (which the accumulator's layout
assumes). A construct without a CuTe DSL spelling here is refused with `feature:lowered-construct`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from tilecraft.codegen.addressing import offset_terms, row_major_strides
from tilecraft.codegen.reserved import printed_name, words
from tilecraft.cuda.intrinsics.simt import SHUFFLE_XOR
from tilecraft.cuda.ir import (
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    GemmCall,
    VectorCopy,
    VectorLoad,
    VectorStore,
    VectorZero,
)
from tilecraft.cuda.shared_layout import swizzle16_line_shift
from tilecraft.cuda.storage import SHARED_SCOPES
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith.exact import ExactTable
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.dtype import DataType
from tilecraft.ir.expr import Expr, Var
from tilecraft.ir.op import ASSUME, FMAX, FMIN
from tilecraft.ir.python_lines import PythonLines
from tilecraft.ir.span import Span

LOWERED = "feature:lowered-construct"
# CuTe DSL numeric types by tilecraft dtype (bool buffers hold one byte per element, as NumPy's)
DTYPES = {
    "bool": "cutlass.Boolean", "int8": "cutlass.Int8", "int16": "cutlass.Int16", "int32": "cutlass.Int32",
    "int64": "cutlass.Int64", "uint8": "cutlass.Uint8", "uint16": "cutlass.Uint16", "uint32": "cutlass.Uint32",
    "uint64": "cutlass.Uint64", "float16": "cutlass.Float16", "bfloat16": "cutlass.BFloat16",
    "float32": "cutlass.Float32",
}  # fmt: skip
STORAGE = {**DTYPES, "bool": "cutlass.Uint8"}
MATH = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt", "rsqrt": "rsqrt",
        "tanh": "tanh", "erf": "erf", "floor": "floor", "ceil": "ceil", "round": "roundeven", "sin": "sin",
        "cos": "cos", "pow": "pow"}  # fmt: skip
_BINARY = {"Add": "+", "Sub": "-", "Mul": "*", "EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">",
           "GE": ">=", "And": "&", "Or": "|"}  # fmt: skip
_BITWISE = {
    "bitwise_and": "&",
    "bitwise_or": "|",
    "bitwise_xor": "^",
    "shift_left": "<<",
    "shift_right": ">>",
}
PYTHON_RESERVED = words("""False None True and as assert async await break class continue def del elif else
except finally for from global if import in is lambda nonlocal not or pass raise return try while with
yield cute cutlass cpasync warp math range int float bool print len min max abs""")
# A constant-extent loop marked unrolled (per-thread register loops), up to this many iterations, is
# unrolled while the kernel is traced: its index is a Python int, so register tensors are indexed by
# constants and stay in registers. Other loops are scf.for loops (short constant ones unrolled too).
UNROLL_LIMIT = 512
SHORT_LOOP = 8


def dtype_name(dtype: DataType) -> str:
    try:
        return DTYPES[dtype.name]
    except KeyError:
        raise LoweringError(f"dtype {dtype} has no CuTe DSL type here", None, unsupported=LOWERED) from None


def value_type(dtype: DataType) -> str:
    """The DSL type a value of `dtype` is computed in: Float32 for the 16-bit floats."""
    if dtype.name in ("float16", "bfloat16"):
        return "cutlass.Float32"
    return dtype_name(dtype)


class CuteDslPrinter(PythonLines):
    """Writes the body of one `@cute.kernel` function."""

    def __init__(self, arena_offsets: Mapping[int, int]) -> None:
        super().__init__(indent=1)
        self.arena_offsets = arena_offsets
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.nonneg: set[int] = set()
        self.exact = ExactTable()
        self.span: Span | None = None
        self.atoms: dict[str, str] = {}  # atom name -> its construction, declared at the kernel's top
        self.counter = 0
        self.select_depth = 0  # selects being printed around the current expression

    # ------------------------------------------------------------------ names and lines

    def name(self, obj: Var | Buffer) -> str:
        if isinstance(obj, Buffer) and obj.address is not None:
            self.fail(f"T.make_tensor of an address ({obj.name})")
        return printed_name(obj, self.names, self.used, self.is_reserved)

    @staticmethod
    def is_reserved(name: str) -> bool:
        """A Python keyword or a name the kernel function uses, or one of the generated `tc_` names."""
        return name in PYTHON_RESERVED or name.startswith("tc_")

    def fresh(self, stem: str) -> str:
        self.counter += 1
        name = f"tc_{stem}{self.counter}"
        self.used.add(name)
        return name

    def fail(self, message: str):
        raise LoweringError(
            f"{message}: the CuTe DSL codegen does not emit it", self.span,
            "use target='cuda' (the CUDA C++ backend) for this kernel", unsupported=LOWERED,
        )  # fmt: skip

    def atom(self, key: str, construction: str) -> str:
        if key not in self.atoms:
            self.atoms[key] = construction
        return key

    # ------------------------------------------------------------------ expressions

    def expr(self, e: Expr) -> str:
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is not None:
            return method(e)
        if isinstance(e, E.BinaryOp) and type(e).__name__ in _BINARY:
            return f"({self.expr(e.a)} {_BINARY[type(e).__name__]} {self.expr(e.b)})"
        self.fail(f"expression {type(e).__name__}")

    def _e_IntImm(self, e: E.IntImm) -> str:
        if e.dtype.is_bool:
            return "True" if e.value else "False"
        if e.dtype.name == "int32":
            return f"({e.value})" if e.value < 0 else str(e.value)
        return f"{dtype_name(e.dtype)}({e.value})"

    def _e_FloatImm(self, e: E.FloatImm) -> str:
        v = float(e.value)
        if math.isnan(v) or math.isinf(v):
            return f"{value_type(e.dtype)}(float({str(v)!r}))"
        return f"{value_type(e.dtype)}({v!r})"

    def _e_Var(self, e: Var) -> str:
        return self.name(e)

    def _e_Div(self, e: E.Div) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        if e.dtype.is_float:
            return f"({a} / {b})"
        if self.is_nonneg(e.a) and self.is_nonneg(e.b):
            return f"({a} // {b})"
        return f"(({a} - {a} % {b}) // {b})"  # C's truncating division: % is remsi here, // floordivsi

    def _e_TruncMod(self, e: E.TruncMod) -> str:
        return f"({self.expr(e.a)} % {self.expr(e.b)})"

    def _e_FloorDiv(self, e: E.FloorDiv) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        if e.dtype.is_float:
            return f"cute.math.floor({a} / {b})"
        return f"({a} // {b})"

    def _e_FloorMod(self, e: E.FloorMod) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        if e.dtype.is_float:
            return f"({a} - cute.math.floor({a} / {b}) * {b})"
        if self.is_nonneg(e.a) and self.is_nonneg(e.b):
            return f"({a} % {b})"
        return f"({a} - ({a} // {b}) * {b})"

    def _e_Min(self, e: E.Min) -> str:
        return f"cutlass.min({self.expr(e.a)}, {self.expr(e.b)})"

    def _e_Max(self, e: E.Max) -> str:
        return f"cutlass.max({self.expr(e.a)}, {self.expr(e.b)})"

    def _e_Not(self, e: E.Not) -> str:
        return f"({self.expr(e.a)} == False)"  # noqa: E712 - a DSL Boolean has no Python truth value

    def _e_Select(self, e: E.Select) -> str:
        dtype = value_type(e.dtype)
        self.select_depth += 1
        try:
            return (
                f"({dtype}({self.expr(e.true_value)}) if {self.expr(e.condition)} "
                f"else {dtype}({self.expr(e.false_value)}))"
            )
        finally:
            self.select_depth -= 1

    def _e_Cast(self, e: E.Cast) -> str:
        value = self.expr(e.value)
        if e.dtype.is_bool:
            return f"({value} != 0)"
        if e.dtype.name in ("float16", "bfloat16"):  # rounded to the type, computed on as Float32
            return f"cutlass.Float32({dtype_name(e.dtype)}({value}))"
        if e.dtype.is_integer and e.value.dtype.is_bool:
            return f"{dtype_name(e.dtype)}(cutlass.Int32({value}))"
        return f"{value_type(e.dtype)}({value})"

    def _e_Call(self, e: E.Call) -> str:
        args = [self.expr(a) for a in e.args]
        if e.op in _BITWISE:
            return f"({args[0]} {_BITWISE[e.op]} {args[1]})"
        if e.op == "bitwise_not":
            return f"(~{args[0]})"
        if e.op == "abs":
            return (
                f"cute.math.abs({args[0]})" if e.dtype.is_float else f"cutlass.max({args[0]}, -({args[0]}))"
            )
        if e.op == "sigmoid":
            return f"(cutlass.Float32(1.0) / (cutlass.Float32(1.0) + cute.math.exp(-({args[0]}))))"
        if e.op in MATH and e.dtype.is_float:
            return f"cute.math.{MATH[e.op]}({', '.join(args)})"
        if e.op in (FMAX, FMIN):
            return self.nan_ignoring_extremum(e, args)
        if e.op == SHUFFLE_XOR:
            return f"cute.arch.shuffle_sync_bfly({value_type(e.dtype)}({args[0]}), offset={args[1]})"
        if e.op == "thread_index":
            return "cute.arch.thread_idx()[0]"
        self.fail(f"intrinsic {e.op!r}")

    def nan_ignoring_extremum(self, e: E.Call, args: list[str]) -> str:
        """C's fmax / fmin as selects on NaN tests (`x != x`, unordered): the DSL's max and min do not
        promise to ignore a NaN operand. An operand named more than once is first bound to a name when
        it is more than a variable or a load (a lane shuffle must run once, and in every lane), unless
        the call sits in a branch of a select, where it stays inline (evaluated in that branch only)."""
        t = value_type(e.dtype)
        a, b = (text if isinstance(x, (Var, E.BufferLoad, E.FloatImm)) or self.select_depth
                else self.bound(t, text) for x, text in zip(e.args, args))  # fmt: skip
        pick = "cutlass.max" if e.op == FMAX else "cutlass.min"
        return f"({t}({b}) if ({a}) != ({a}) else ({t}({a}) if ({b}) != ({b}) else {t}({pick}({a}, {b}))))"

    def bound(self, dtype: str, text: str) -> str:
        """`text` evaluated once, on a line of its own before the statement being printed."""
        name = self.fresh("v")
        self.line(f"{name} = {dtype}({text})")
        return name

    def _e_AtomicValue(self, e: E.AtomicValue) -> str:
        self.fail(f"T.atomic_{e.kind} as an expression (atomic_load, atomic_store, return_prev=True)")

    def _e_BufferLoad(self, e: E.BufferLoad) -> str:
        buf = e.buffer
        if buf.scope == "local.var":
            return f"{self.name(buf)}[0]"
        return self.from_storage(f"{self.name(buf)}[{self.offset(buf, e.indices)}]", buf.dtype)

    def from_storage(self, raw: str, dtype: DataType) -> str:
        if dtype.name in ("float16", "bfloat16"):
            return f"cutlass.Float32({raw})"
        if dtype.is_bool:
            return f"({raw} != 0)"
        return raw

    def to_storage(self, value: str, dtype: DataType) -> str:
        return f"{STORAGE[dtype.name]}({value})"

    # ------------------------------------------------------------------ addressing

    def strides(self, buf: Buffer) -> list[str]:
        if buf.strides:
            return [self.expr(s) for s in buf.strides]
        return row_major_strides(buf.shape, self.expr)

    def offset(self, buf: Buffer, indices) -> str:
        terms = offset_terms(indices, self.strides(buf), self.expr)
        return " + ".join(terms) if terms else "0"

    def extent(self, buf: Buffer) -> str:
        """Elements addressable from the buffer's base (the 1-D layout of its tensor)."""
        if not buf.shape:
            return "1"
        if not buf.strides:
            sizes = [E.const_value(d) for d in buf.shape]
            if all(isinstance(d, int) for d in sizes):
                return str(max(1, math.prod(sizes)))
            return " * ".join(self.expr(d) for d in buf.shape)
        parts = [f"({self.expr(d)} - 1) * {self.expr(s)}" for d, s in zip(buf.shape, buf.strides)]
        return "(" + " + ".join(parts) + " + 1)"

    def is_nonneg(self, e: Expr) -> bool:
        if e.dtype.is_uint:
            return True
        if isinstance(e, E.IntImm):
            return e.value >= 0
        if isinstance(e, Var):
            return id(e) in self.nonneg
        if isinstance(e, (E.Add, E.Mul, E.FloorDiv, E.FloorMod, E.Min, E.Max, E.Div)):
            return self.is_nonneg(e.a) and self.is_nonneg(e.b)
        if isinstance(e, E.Cast):
            return e.value.dtype.is_integer and e.dtype.bits >= e.value.dtype.bits and self.is_nonneg(e.value)
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
            self.fail(f"statement {type(s).__name__}")
        method(s)
        self.span = saved

    def _s_SeqStmt(self, s: S.SeqStmt) -> None:
        for x in s.stmts:
            self.stmt(x)

    def _s_Evaluate(self, s: S.Evaluate) -> None:
        if isinstance(s.value, E.Call) and s.value.op == "sync_threads":
            self.line("cute.arch.sync_threads()")
            return
        if isinstance(s.value, (E.IntImm, E.FloatImm)):
            return
        if isinstance(s.value, E.Call) and s.value.op == ASSUME:  # accepted, not relied on
            return
        self.fail(f"evaluation of {type(s.value).__name__} {getattr(s.value, 'op', '')}".rstrip())

    def _s_BufferStore(self, s: S.BufferStore) -> None:
        buf = s.buffer
        if s.value.dtype.lanes != 1:
            self.fail(f"a {s.value.dtype} vector store")
        value = self.to_storage(self.expr(s.value), buf.dtype)
        if buf.scope == "local.var":
            self.line(f"{self.name(buf)}[0] = {value}")
            return
        self.line(f"{self.name(buf)}[{self.offset(buf, s.indices)}] = {value}")

    def _s_LetStmt(self, s: S.LetStmt) -> None:
        if self.is_nonneg(s.value):
            self.mark_nonneg(s.var)
        self.line(f"{self.name(s.var)} = {value_type(s.var.dtype)}({self.expr(s.value)})")
        self.stmt(s.body)

    def _s_IfThenElse(self, s: S.IfThenElse) -> None:
        self.if_else(self.expr(s.condition), s.then_case, s.else_case)

    def _s_For(self, s: S.For) -> None:
        var = self.name(s.loop_var)
        if self.is_nonneg(s.min):
            self.mark_nonneg(s.loop_var)
        start, extent = E.const_value(s.min), E.const_value(s.extent)
        unrolled = s.kind is S.ForKind.UNROLLED or S.annotation(s.annotations, "unroll")
        constant = isinstance(start, int) and isinstance(extent, int)
        if constant and ((unrolled and extent <= UNROLL_LIMIT) or extent <= SHORT_LOOP):
            self.line(f"for {var} in cutlass.range_constexpr({start}, {start + extent}):")
        else:
            end = self.expr(E.add(s.min, s.extent)) if start != 0 else self.expr(s.extent)
            self.line(f"for {var} in cutlass.range({self.expr(s.min)}, {end}, 1):")
        self.block(s.body)

    def _s_While(self, s: S.While) -> None:
        self.line(f"while {self.expr(s.condition)}:")
        self.block(s.body)

    def _s_Allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        if buf.scope == "local.var":
            self.line(f"{self.name(buf)} = cute.make_rmem_tensor(1, {STORAGE[buf.dtype.name]})")
        elif buf.scope in SHARED_SCOPES:
            offset = self.arena_offsets[id(buf)]
            self.line(
                f"{self.name(buf)} = cute.make_tensor(cute.recast_ptr(tc_smem + {offset}, "
                f"dtype={STORAGE[buf.dtype.name]}), cute.make_layout({self.extent(buf)}))"
            )
        elif buf.scope in ("local", "local.fragment"):
            self.line(
                f"{self.name(buf)} = cute.make_rmem_tensor({self.extent(buf)}, {STORAGE[buf.dtype.name]})"
            )
        else:
            self.fail(f"a {buf.scope} buffer")
        self.stmt(s.body)

    # ------------------------------------------------------------------ async copies (cp.async atoms)

    def _view(self, buf: Buffer, offset: str, count: int) -> str:
        """`count` elements of `buf` from `offset`, as a tensor (the offset a multiple of `count`)."""
        return f"cute.make_tensor({self.name(buf)}.iterator + cute.assume({offset}, divby={count}), cute.make_layout({count}))"

    def _s_AsyncCopy(self, s: AsyncCopy) -> None:
        if s.dst.dtype != s.src.dtype:
            self.fail(f"cp.async between {s.src.dtype} and {s.dst.dtype} buffers")
        count = s.bytes // s.dst.dtype.bytes
        dtype = STORAGE[s.dst.dtype.name]
        atom = self.atom(f"tc_g2s_{s.dst.dtype.name}_{s.bytes}",
                         f"cute.make_copy_atom(cpasync.CopyG2SOp(), {dtype}, num_bits_per_copy={s.bytes * 8})")  # fmt: skip
        dst_off, src_off = self.expr(s.dst_offset), self.expr(s.src_offset)
        copy = f"cute.copy({atom}, {self._view(s.src, src_off, count)}, {self._view(s.dst, dst_off, count)})"
        if E.const_value(s.valid) == 1:
            self.line(copy)
            return
        self.line(f"if {self.expr(s.valid)}:")
        self.indent += 1
        self.line(copy)
        self.indent -= 1
        self.line("else:")  # cp.async's zero fill: no read, zeros written
        self.indent += 1
        index = self.fresh("z")
        self.line(f"for {index} in cutlass.range_constexpr({count}):")
        self.line(f"    {self.name(s.dst)}[{dst_off} + {index}] = {dtype}(0)")
        self.indent -= 1

    def _s_AsyncCommit(self, s: AsyncCommit) -> None:
        self.line("cute.arch.cp_async_commit_group()")

    def _s_AsyncWait(self, s: AsyncWait) -> None:
        self.line(f"cute.arch.cp_async_wait_group({s.pending})")

    # ------------------------------------------------------------------ vector accesses (as elements)

    def _s_VectorCopy(self, s: VectorCopy) -> None:
        if s.dst.dtype != s.src.dtype:
            self.fail(f"a vector copy between {s.src.dtype} and {s.dst.dtype} buffers")
        index = self.fresh("v")
        dst, src = self.expr(s.dst_offset), self.expr(s.src_offset)
        self.line(f"for {index} in cutlass.range_constexpr({s.bytes // s.dst.dtype.bytes}):")
        self.line(f"    {self.name(s.dst)}[{dst} + {index}] = {self.name(s.src)}[{src} + {index}]")

    def _s_VectorLoad(self, s: VectorLoad) -> None:
        """Element by element, each converted as a cast to the registers' dtype would."""
        index = self.fresh("v")
        dst, src = self.expr(s.dst_offset), self.expr(s.src_offset)
        element = E.Var(s.src.dtype, "tc_elem")
        self.names[id(element)] = self.from_storage(f"{self.name(s.src)}[{src} + {index}]", s.src.dtype)
        try:
            converted = element if s.dst.dtype == s.src.dtype else E.cast(element, s.dst.dtype)
            value = self.to_storage(self.expr(converted), s.dst.dtype)
        finally:
            del self.names[id(element)]
        self.line(f"for {index} in cutlass.range_constexpr({s.count}):")
        self.line(f"    {self.name(s.dst)}[{dst} + {index}] = {value}")

    def _s_VectorZero(self, s: VectorZero) -> None:
        index = self.fresh("v")
        dst = self.expr(s.dst_offset)
        self.line(f"for {index} in cutlass.range_constexpr({s.bytes // s.dst.dtype.bytes}):")
        self.line(f"    {self.name(s.dst)}[{dst} + {index}] = {STORAGE[s.dst.dtype.name]}(0)")

    def _s_VectorStore(self, s: VectorStore) -> None:
        dst = self.expr(s.dst_offset)
        for k, value in enumerate(s.values):
            stored = self.to_storage(self.expr(value), s.dst.dtype)
            self.line(f"{self.name(s.dst)}[{dst} + {k}] = {stored}")

    # ------------------------------------------------------------------ tensor cores (MMA and ldmatrix atoms)

    def _s_GemmCall(self, s: GemmCall) -> None:
        if s.variant != "ss" or s.a.dtype.name not in ("float16", "bfloat16") or s.a.dtype != s.b.dtype:
            self.fail(f"a {s.variant} tensor-core gemm of {s.a.dtype} x {s.b.dtype}")
        if s.c.dtype.name != "float32":
            self.fail(f"a tensor-core gemm accumulating in {s.c.dtype}")
        ab = dtype_name(s.a.dtype)
        mma = self.atom(f"tc_mma_{s.a.dtype.name}",
                        f"cute.make_mma_atom(warp.MmaF16BF16Op({ab}, cutlass.Float32, (16, 8, 16)))")  # fmt: skip
        ldm = self.atom("tc_ldmatrix", f"cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), {ab})")
        ldm_t = self.atom("tc_ldmatrix_t", f"cute.make_copy_atom(warp.LdMatrix8x8x16bOp(True, 4), {ab})")
        wm_, wn_ = s.m // s.warps_m, s.n // s.warps_n
        mt, nt = wm_ // 16, wn_ // 8
        g = self.fresh("g")  # a prefix for this call's names
        a, b, c = self.name(s.a), self.name(s.b), self.name(s.c)
        # a stage of a stacked operand tile starts a whole tile in: ldmatrix's 16-byte rows stay aligned
        a_off = "" if E.const_value(s.a_offset) == 0 else f"{self.expr(E.convert(s.a_offset))} + "
        b_off = "" if E.const_value(s.b_offset) == 0 else f"{self.expr(E.convert(s.b_offset))} + "
        warp_index = "cute.arch.thread_idx()[0] // 32" if s.warp is None else self.expr(E.convert(s.warp))
        line = self.line
        line(f"# T.gemm: C[{s.m}x{s.n}] += A[{s.m}x{s.k}] @ B[{s.k}x{s.n}] on a {s.warps_m}x{s.warps_n} grid of "
             f"warps: ldmatrix copy atoms, m16n8k16 MMA atoms")  # fmt: skip
        line(f"{g}_lane = cute.arch.thread_idx()[0] % 32")
        line(f"{g}_warp = {warp_index}")
        line(f"{g}_wm = {g}_warp // {s.warps_n}")
        line(f"{g}_wn = {g}_warp % {s.warps_n}")
        line(f"{g}_lr = ({g}_lane % 8) + (({g}_lane // 8) % 2) * 8")
        line(f"{g}_lc = ({g}_lane // 16) * 8")
        line(f"{g}_xr = ({g}_lane % 8) + ({g}_lane // 16) * 8")  # the transposed x4's row within 16
        line(f"{g}_xc = (({g}_lane // 8) % 2) * 8")
        line(f"{g}_a = cute.make_rmem_tensor({mt * 8}, {ab})")
        line(f"{g}_b = cute.make_rmem_tensor({nt * 4}, {ab})")
        line(f"for {g}_kk in cutlass.range_constexpr(0, {s.k}, 16):")
        self.indent += 1
        line(f"for {g}_mi in cutlass.range_constexpr({mt}):")
        self.indent += 1
        m0 = f"({g}_wm * {wm_} + {g}_mi * 16)"
        if not s.trans_a:
            src, atom = self._swizzled(f"({m0} + {g}_lr) * {s.k} + {g}_kk + {g}_lc", s.k), ldm
        else:
            src, atom = self._swizzled(f"({g}_kk + {g}_xr) * {s.m} + {m0} + {g}_xc", s.m), ldm_t
        line(f"cute.copy({atom}, {self._smem8(a, a_off + src)}, {self._reg(f'{g}_a', f'{g}_mi * 8', 8)})")
        self.indent -= 1
        line(f"for {g}_nj in cutlass.range_constexpr(0, {nt}, 2):")
        self.indent += 1
        n0 = f"({g}_wn * {wn_} + {g}_nj * 8)"
        if not s.trans_b:
            src, atom = self._swizzled(f"({g}_kk + {g}_lr) * {s.n} + {n0} + {g}_lc", s.n), ldm_t
        else:
            src, atom = self._swizzled(f"({n0} + {g}_xr) * {s.k} + {g}_kk + {g}_xc", s.k), ldm
        # registers r0, r1 are n-tile nj's B fragment, r2, r3 n-tile nj + 1's
        line(f"cute.copy({atom}, {self._smem8(b, b_off + src)}, {self._reg(f'{g}_b', f'{g}_nj * 4', 8)})")
        self.indent -= 1
        line(f"for {g}_mi in cutlass.range_constexpr({mt}):")
        line(f"    for {g}_ni in cutlass.range_constexpr({nt}):")
        acc = self._reg(c, f"({g}_mi * {nt} + {g}_ni) * 4", 4, rank3=True)
        frag_a = self._reg(f"{g}_a", f"{g}_mi * 8", 8, rank3=True)
        frag_b = self._reg(f"{g}_b", f"{g}_ni * 4", 4, rank3=True)
        line(f"        cute.gemm({mma}, {acc}, {frag_a}, {frag_b}, {acc})")
        self.indent -= 1

    def _swizzled(self, offset: str, width: int) -> str:
        """tc_swizzle16<width>: the 16-byte chunk index within each line XOR-ed with the line's row."""
        shift = swizzle16_line_shift(width)
        return f"(({offset}) ^ (((({offset}) >> {shift}) & 7) << 3))"

    def _smem8(self, buf: str, offset: str) -> str:
        return f"cute.make_tensor({buf}.iterator + cute.assume({offset}, divby=8), cute.make_layout(8))"

    def _reg(self, buf: str, offset: str, count: int, rank3: bool = False) -> str:
        layout = f"({count}, 1, 1)" if rank3 else f"{count}"
        return f"cute.make_tensor({buf}.iterator + {offset}, cute.make_layout({layout}))"
