"""Prints lowered tile IR as the Metal Shading Language (MSL, a C++14 dialect).

Global buffers are `device` kernel parameters; shared buffers are `threadgroup` pointers into the
threadgroup's memory (one `threadgroup uint4*` argument, at offsets the plan chose); per-thread buffers
are `thread` arrays; `local.var` buffers are scalars. Math uses MSL's overloaded functions.
"""

from __future__ import annotations

from tilecraft.codegen.c_family import CFamilyPrinter
from tilecraft.codegen.reserved import CPP_RESERVED, words
from tilecraft.codegen.space_atomics import print_space_atomic
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.metal.simt import GROUP_REDUCTIONS, SHUFFLE_XOR
from tilecraft.metal.target import NO_PRINTF

MATH = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt", "tanh": "tanh",
        "erf": "tc_erf", "floor": "floor", "ceil": "ceil", "round": "rint", "sin": "sin", "cos": "cos",
        "pow": "pow", "abs": "fabs", "fmax": "fmax", "fmin": "fmin"}  # fmt: skip
SHARED = ("shared", "shared.dyn")
ON_CHIP_32BIT = (*SHARED, "local", "local.fragment")
SMEM = "tc_smem"
SIMDGROUP_GEMM = "metal_simdgroup_gemm"
_ATOMIC_SUFFIX = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "uint32": "u32"}
_SIMD_REDUCE = {op: f"simd_{kind}" for kind, op in GROUP_REDUCTIONS.items()}
_MATRIX_ELEMENT = {"float32": "float", "float16": "half"}
# The Metal Shading Language's keywords, attributes and types beyond C++'s, and the functions of
# metal_stdlib (the generated source says `using namespace metal`): math, integer, geometric,
# relational, SIMD-group and quad, atomic, synchronization and texture functions.
METAL_RESERVED = CPP_RESERVED.extended(
    words("""kernel vertex fragment visible device threadgroup threadgroup_imageblock constant thread
    ray_data object_data stage_in metal precise fast simd half bfloat uchar ushort uint ulong ptrdiff_t
    size_t sampler texture access coord filter address mem_flags as_type abs min max clamp fma mix saturate
    sign smoothstep step select popcount clz ctz extract_bits insert_bits reverse_bits rotate madhi madsat
    mulhi absdiff addsat subsat hadd rhadd dot cross distance distance_squared length length_squared
    normalize reflect refract faceforward determinant transpose fract rsqrt sincos sinpi cospi tanpi exp10
    maxmag minmag powr rint any all isordered threadgroup_barrier simdgroup_barrier"""),
    (
        r"(u?(char|short|int|long)|float|half|bfloat|bool)[2-4]",
        r"packed_\w+",
        r"(float|half|bfloat)[2-4]x[2-4]",
        r"(simd|simdgroup|quad|quadgroup|atomic|threadgroup)_\w+",
        r"(texture|depth)[1-3]d\w*",
        r"metal_\w+",
    ),
)


def address_space(buf: Buffer) -> str:
    return "threadgroup" if buf.scope in SHARED else "device" if buf.scope == "global" else "thread"


class MetalPrinter(CFamilyPrinter):
    """Writes the body of one MSL kernel function."""

    target_name = "the Metal target"
    reserved_names = METAL_RESERVED
    # like __syncthreads: threadgroup memory and the threadgroup's view of device memory
    barrier_statement = "threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);"
    thread_index = "(int32_t)tc_tid.x"
    math32 = MATH
    math64 = MATH
    fma_functions = {"float32": "fma"}
    int32_index_scopes = ON_CHIP_32BIT
    arena_scopes = SHARED

    # ------------------------------------------------------------------ expressions

    def bitcast(self, value: str, source: str, dest: str) -> str:
        return value if source == dest else f"as_type<{dest}>({value})"

    def math_call(self, e: E.Call, args: list[str]) -> str:
        if e.op == "rsqrt":
            return f"rsqrt({args[0]})"
        if e.op == "sigmoid":
            return f"(1.0f / (1.0f + exp(-({args[0]}))))"
        return super().math_call(e, args)

    def fused_multiply_add(self, dtype, args: list[str]) -> str:
        if dtype.bits == 16:
            self.fail(f"a fused multiply-add of {dtype} (T.fma2) is not supported on {self.target_name}: rounding "
                      "it once takes float64 arithmetic, which Metal lacks",
                      "use float32 lanes, or run the kernel on the cpu, cuda, hip or opencl target")  # fmt: skip
        return super().fused_multiply_add(dtype, args)

    def intrinsic(self, e: E.Call, args: list[str]) -> str:
        if e.op == SHUFFLE_XOR:
            return f"tc_simd_shuffle_xor(({self._value_type(e)})({args[0]}), (ushort){args[1]})"
        if e.op in _SIMD_REDUCE:
            reduce = _SIMD_REDUCE[e.op]
            if e.dtype.is_float and reduce != "simd_sum":  # NaN-propagating: tc_metal.h
                return f"tc_{reduce}_f32({args[0]})"
            return f"{reduce}({args[0]})"
        return super().intrinsic(e, args)

    @staticmethod
    def _value_type(e: E.Expr) -> str:
        from tilecraft.codegen.c_family import value_type

        return value_type(e.dtype)

    def address_pointer(self, buf: Buffer) -> str:
        self.refuse_address(buf, "its kernels reach device memory through their buffer arguments", "pass the "
                            "tensor as a T.Tensor parameter, or run the kernel on the cpu, cuda or hip target")  # fmt: skip

    def arena_pointer(self, buf: Buffer, ctype: str, offset: int) -> str:
        name = self.name(buf)
        return f"threadgroup {ctype}* {name} = (threadgroup {ctype}*)((threadgroup char*){SMEM} + {offset});"

    # ------------------------------------------------------------------ statements

    def _s_Evaluate(self, s: S.Evaluate) -> None:
        if isinstance(s.value, E.Call) and s.value.op == SIMDGROUP_GEMM:
            self.line(self.simdgroup_gemm(s.value) + ";")
            return
        super()._s_Evaluate(s)

    def simdgroup_gemm(self, call: E.Call) -> str:
        """tc_simdgroup_gemm(c, ldc, a, lda, ta, b, ldb, tb, m_tiles, n_tiles, ksteps, clear, simdgroup,
        simdgroups): c, a and b are the first elements of their tiles (BufferLoads), the flags 0 or 1,
        the rest integers (op/gemm.py)."""
        c, ldc, a, lda, ta, b, ldb, tb, *counts, clear, simdgroup, groups = call.args
        parts = [self.address(c), self.expr(ldc), self.address(a), self.expr(lda), self._flag(ta),
                 self.address(b), self.expr(ldb), self._flag(tb), *(self.expr(x) for x in counts),
                 self._flag(clear), self.expr(simdgroup), self.expr(groups)]  # fmt: skip
        return f"tc_simdgroup_gemm({', '.join(parts)})"

    def address(self, load: E.Expr) -> str:
        """A pointer to the element a BufferLoad names, as the matrix element type."""
        if not isinstance(load, E.BufferLoad):
            self.fail(f"a simdgroup_matrix operand must be a buffer element, got {load}")
        buf = load.buffer
        element = _MATRIX_ELEMENT[buf.dtype.name]
        return f"(threadgroup {element}*)&{self.name(buf)}[{self.offset(buf, load.indices)}]"

    @staticmethod
    def _flag(e: E.Expr) -> str:
        return "true" if E.const_value(e) else "false"

    def _e_AtomicValue(self, e: E.AtomicValue) -> str:
        self.fail(f"T.atomic_{e.kind} as an expression (atomic_load, atomic_store, return_prev=True) is not "
                  f"supported on {self.target_name}: Metal's atomic_load_explicit / atomic_fetch_add_explicit need device atomic_* typed buffers, which this target does not declare",
                  "run the kernel on the CPU, CUDA or HIP target, or use the statement form (T.atomic_add without "
                  "return_prev) and plain loads and stores ordered by the kernel's barriers")

    def _s_AtomicUpdate(self, s: AtomicUpdate) -> None:
        space = {"device": "g", "threadgroup": "l"}.get(address_space(s.buffer))
        print_space_atomic(self, s, _ATOMIC_SUFFIX, space, "int64_t")

    def _s_Print(self, s: S.Print) -> None:
        from tilecraft.errors import LoweringError

        raise LoweringError(f"T.print is not supported on the Metal target: {NO_PRINTF.reason}", s.span, NO_PRINTF.fix,
                            unsupported=NO_PRINTF.key)  # fmt: skip
