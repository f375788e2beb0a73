"""Prints lowered tile IR as HIP C++ that needs no header: clang builtins only (tc_hip.h).

Global buffers are kernel parameters; shared buffers are pointers into the work-group's dynamic LDS at
offsets the storage plan chose; per-work-item buffers (lowered fragments and `local` buffers) are
register arrays; `local.var` buffers are scalars. Math goes to the `__builtin_*` functions the AMDGPU
backend expands itself (tanhf and erff, which it lacks, to tc_hip.h's).
"""

from __future__ import annotations

from tilecraft.codegen.c_family import CFamilyPrinter, static_size, value_type
from tilecraft.codegen.reserved import CPP_RESERVED, words
from tilecraft.hip.intrinsics.simt import LANE_XOR
from tilecraft.hip.ir import MfmaGemm
from tilecraft.hip.lds_layout import LdsLayout
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Var

MATH32 = {"exp": "__builtin_expf", "exp2": "__builtin_exp2f", "log": "__builtin_logf", "log2": "__builtin_log2f",
          "sqrt": "__builtin_sqrtf", "tanh": "tc_tanhf", "erf": "tc_erff", "floor": "__builtin_floorf",
          "ceil": "__builtin_ceilf", "round": "__builtin_rintf", "sin": "__builtin_sinf", "cos": "__builtin_cosf",
          "pow": "__builtin_powf", "abs": "__builtin_fabsf", "fmax": "__builtin_fmaxf", "fmin": "__builtin_fminf"}  # fmt: skip
# The float64 functions clang expands for AMDGPU without ocml (check-target-support refuses the others: hip/target.py).
MATH64 = {"sqrt": "__builtin_sqrt", "floor": "__builtin_floor", "ceil": "__builtin_ceil", "round": "__builtin_rint",
          "abs": "__builtin_fabs", "fmax": "__builtin_fmax", "fmin": "__builtin_fmin"}  # fmt: skip
LDS_SCOPES = ("shared", "shared.dyn")
ON_CHIP_32BIT = (*LDS_SCOPES, "local", "local.fragment")
SMEM = "tc_smem"
# HIP's built-in variables and vector types, the names of its headers and device library (for source
# that includes them; tilecraft's includes none), on top of C++'s and C's names.
HIP_RESERVED = CPP_RESERVED.extended(
    words("""threadIdx blockIdx blockDim gridDim warpSize dim3 clock clock64 wall_clock64 half half2
    rsqrt rsqrtf rcbrt rcbrtf sincos sincosf sincospi sincospif sinpi sinpif cospi cospif exp10 exp10f
    fdividef erfinv erfinvf erfcinv erfcinvf erfcx erfcxf normcdf normcdff normcdfinv normcdfinvf norm normf
    rnorm rnormf rhypot rhypotf saturate umin umax llmin llmax ullmin ullmax mul24 umul24 signbit"""),
    (
        r"(u?(char|short|int|long|longlong)|float|double)[1-4]",
        r"make_\w+",
        r"atomic[A-Z]\w*",
        r"hip[A-Z]\w*",
        r"amd\w*",
        r"ocml_\w+",
        r"ockl_\w+",
    ),
)
MFMA_KINDS = {"f16": 0, "bf16": 1}


def _flag(value: bool) -> str:
    return "true" if value else "false"


class HipPrinter(CFamilyPrinter):
    """Writes the body of one HIP kernel."""

    target_name = "the HIP target"
    reserved_names = HIP_RESERVED
    barrier_statement = "tc_syncthreads();"
    thread_index = "(int32_t)__builtin_amdgcn_workitem_id_x()"
    math32 = MATH32
    math64 = MATH64
    fma_functions = {"float32": "__builtin_fmaf", "float64": "__builtin_fma"}
    int32_index_scopes = ON_CHIP_32BIT
    arena_scopes = LDS_SCOPES

    # ------------------------------------------------------------------ expressions

    def bitcast(self, value: str, source: str, dest: str) -> str:
        return value if source == dest else f"__builtin_bit_cast({dest}, {value})"

    def math_call(self, e: E.Call, args: list[str]) -> str:
        single = value_type(e.dtype) == "float"
        if e.op == "rsqrt":
            return f"(1.0f / __builtin_sqrtf({args[0]}))" if single else f"(1.0 / __builtin_sqrt({args[0]}))"
        if e.op == "sigmoid" and single:
            return f"(1.0f / (1.0f + __builtin_expf(-({args[0]}))))"
        return super().math_call(e, args)

    def _floor(self, e: E.Expr, text: str) -> str:
        return f"__builtin_floorf({text})" if value_type(e.dtype) == "float" else f"__builtin_floor({text})"

    def _e_FloorDiv(self, e: E.FloorDiv) -> str:
        if e.dtype.is_float:
            return self._floor(e, f"{self.expr(e.a)} / {self.expr(e.b)}")
        return super()._e_FloorDiv(e)

    def _e_FloorMod(self, e: E.FloorMod) -> str:
        if e.dtype.is_float:
            a, b = self.expr(e.a), self.expr(e.b)
            return f"({a} - {self._floor(e, f'{a} / {b}')} * {b})"
        return super()._e_FloorMod(e)

    def intrinsic(self, e: E.Call, args: list[str]) -> str:
        if e.op == LANE_XOR:
            ctype = value_type(e.dtype)
            return f"(({ctype})tc_lane_xor(({_exchange_type(ctype)})({args[0]}), {args[1]}))"
        return super().intrinsic(e, args)

    # ------------------------------------------------------------------ statements

    def arena_pointer(self, buf: Buffer, ctype: str, offset: int) -> str:
        return f"{ctype}* __restrict__ {self.name(buf)} = ({ctype}*)({SMEM} + {offset});"

    def private_array(self, buf: Buffer, ctype: str) -> str:
        return f"{ctype} {self.name(buf)}[{static_size(buf)}] __attribute__((aligned(16)));"

    def _s_MfmaGemm(self, s: MfmaGemm) -> None:
        dims = f"{s.m}, {s.n}, {s.k}, {s.waves_m}, {s.waves_n}, {_flag(s.trans_a)}, {_flag(s.trans_b)}"
        a, b, c = self.name(s.a), self.name(s.b), self.name(s.c)
        tail = f"{_flag(s.kpack)}, {layout_type(s.layout_a)}, {layout_type(s.layout_b)}"
        if s.kind == "fp8":
            fp8 = f"{_flag(s.e5m2_a)}, {_flag(s.e5m2_b)}, {_flag(s.fnuz)}"
            self.line(f"tc::mfma_gemm_fp8<{dims}, {fp8}, {tail}>({a}, {b}, {c});")
        else:
            self.line(f"tc::mfma_gemm<{dims}, {MFMA_KINDS[s.kind]}, {tail}>({a}, {b}, {c});")


def layout_type(layout: LdsLayout | None) -> str:
    """The C++ type tc::mfma_gemm reads a tile in layout `layout` through (`layout_struct` defines it)."""
    if layout is None:
        return "tc::row_major"
    return f"tc_lds_e{layout.element_bytes}_s{layout.line_shift}"


def layout_struct(layout: LdsLayout) -> str:
    """The struct whose `at(f)` is `layout.physical(f)`, printed from the very expression the tile's
    accesses are addressed with, so the gemm reads where the copies wrote."""
    printer = HipPrinter()
    f = Var(dt.int32, "f")
    printer.mark_nonneg(f)
    body = printer.expr(layout.physical(f))
    return (f"struct {layout_type(layout)} {{  // {layout!r}\n"
            f"    TC_DEVICE int32_t at(int32_t {printer.name(f)}) {{ return {body}; }}\n}};\n")  # fmt: skip


def _exchange_type(ctype: str) -> str:
    """The tc_lane_xor overload a value of C type `ctype` goes through (narrow integers widen to int32)."""
    return ctype if ctype in ("float", "double", "int64_t", "uint64_t", "uint32_t") else "int32_t"


__all__ = ["HipPrinter", "layout_struct", "layout_type"]
