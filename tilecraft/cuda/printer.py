"""Prints lowered tile IR as CUDA C++.

Global buffers are kernel parameters; shared buffers are pointers into the block's dynamic shared
memory at offsets the shared-memory plan chose; per-thread buffers (lowered fragments and `local`
buffers) are register arrays; `local.var` buffers are scalars. Thread and block indices are read from
threadIdx/blockIdx once at the top of the kernel.
"""

from __future__ import annotations

from tilecraft.codegen.c_family import CFamilyPrinter, c_string, printf_format, storage_type, value_type
from tilecraft.cuda.ir import AsyncCommit, AsyncCopy, AsyncWait, GemmCall, VectorCopy, VectorZero
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.expr import Var

_VECTOR = {4: "uint32_t", 8: "uint2", 16: "uint4"}
ON_CHIP_32BIT = ("shared", "shared.dyn", "local", "local.fragment")


class CudaPrinter(CFamilyPrinter):
    """Writes the body of one CUDA kernel."""

    target_name = "the CUDA target"

    def __init__(self, shared_offsets: dict[int, int] | None = None) -> None:
        super().__init__()
        self.shared_offsets = shared_offsets or {}

    def index_type(self, buf: Buffer) -> str:
        return "int32_t" if buf.scope in ON_CHIP_32BIT else "int64_t"

    # ------------------------------------------------------------------ intrinsics

    def intrinsic(self, e: E.Call, args: list[str]) -> str:
        if e.op == "shfl_xor":
            return f"__shfl_xor_sync(0xffffffffu, {args[0]}, {args[1]})"
        if e.op == "thread_index":
            return "(int32_t)threadIdx.x"
        return super().intrinsic(e, args)

    # ------------------------------------------------------------------ statements

    def loop_pragma(self, s: S.For) -> str | None:
        if s.kind is S.ForKind.UNROLLED or S.annotation(s.annotations, "unroll"):
            return "#pragma unroll"
        return None

    def _s_Evaluate(self, s: S.Evaluate) -> None:
        if isinstance(s.value, E.Call) and s.value.op == "sync_threads":
            self.line("__syncthreads();")
            return
        super()._s_Evaluate(s)

    def _s_Allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        if buf.scope == "local.var":
            self.declare_var_buffer(s)
            return
        ctype = storage_type(buf.dtype)
        self.line("{")
        self.indent += 1
        if buf.scope in ("shared", "shared.dyn"):
            offset = self.shared_offsets[id(buf)]
            self.line(f"{ctype}* __restrict__ {self.name(buf)} = ({ctype}*)(tc_smem + {offset});")
        else:
            size = _static_size(buf)
            self.line(f"{ctype} {self.name(buf)}[{size}] __attribute__((aligned(16)));")
        self.stmt(s.body)
        self.indent -= 1
        self.line("}")

    def _s_GemmCall(self, s: GemmCall) -> None:
        flags = f"{str(s.trans_b).lower()}, {str(s.bf16).lower()}"
        dims = f"{s.m}, {s.n}, {s.k}, {s.warps_m}, {s.warps_n}"
        a, b, c = self.name(s.a), self.name(s.b), self.name(s.c)
        if not _is_zero(s.a_offset):
            a = f"{a} + {self.expr(E.convert(s.a_offset))}"
        if not _is_zero(s.b_offset):
            b = f"{b} + {self.expr(E.convert(s.b_offset))}"
        if s.variant == "ss":
            self.line(f"tc::gemm_ss<{dims}, {str(s.trans_a).lower()}, {flags}>({a}, {b}, {c});")
        else:
            self.line(f"tc::gemm_rs<{dims}, {flags}>((const uint32_t*){a}, {b}, {c});")

    def _s_AsyncCopy(self, s: AsyncCopy) -> None:
        fn = {16: "tc_cp_async16", 4: "tc_cp_async4"}[s.bytes]
        dst = f"{self.name(s.dst)} + {self.expr(s.dst_offset)}"
        src = f"{self.name(s.src)} + {self.expr(s.src_offset)}"
        self.line(f"{fn}({dst}, {src}, {self.expr(s.valid)});")

    def _s_AsyncCommit(self, s: AsyncCommit) -> None:
        self.line("tc_cp_async_commit();")

    def _s_AsyncWait(self, s: AsyncWait) -> None:
        self.line(f"tc_cp_async_wait<{s.pending}>();")

    def _s_VectorCopy(self, s: VectorCopy) -> None:
        vt = _VECTOR[s.bytes]
        dst = f"{self.name(s.dst)} + {self.expr(s.dst_offset)}"
        src = f"{self.name(s.src)} + {self.expr(s.src_offset)}"
        self.line(f"*({vt}*)({dst}) = *(const {vt}*)({src});")

    def _s_VectorZero(self, s: VectorZero) -> None:
        vt = _VECTOR[s.bytes]
        zero = {4: "0u", 8: "make_uint2(0u, 0u)", 16: "make_uint4(0u, 0u, 0u, 0u)"}[s.bytes]
        self.line(f"*({vt}*)({self.name(s.dst)} + {self.expr(s.dst_offset)}) = {zero};")

    def _s_Print(self, s: S.Print) -> None:
        prefix = f"{s.msg}: " if s.msg else ""
        where = "[block %d,%d,%d thread %d] "
        ids = "(int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x"
        if isinstance(s.value, BufferRegion):
            self._print_region(s.value, where + c_string(prefix), ids)
            return
        fmt, value = printf_format(s.value.dtype, self.expr(s.value))
        self.line(f'printf("{where}{c_string(prefix)}{fmt}\\n", {ids}, {value});')

    def _print_region(self, r: BufferRegion, prefix: str, ids: str) -> None:
        loops = [Var(dt.int32, f"p{k}") for k in range(len(r.ranges))]
        index = tuple(E.add(rng.min, v) for rng, v in zip(r.ranges, loops))
        fmt, value = printf_format(r.dtype, self.expr(E.BufferLoad(r.dtype, r.buffer, index)))
        for v, rng in zip(loops, r.ranges):
            n = self.name(v)
            self.line(f"for (int32_t {n} = 0; {n} < {self.expr(rng.extent)}; ++{n})")
        where = ", ".join("%d" for _ in loops)
        args = ", ".join(self.name(v) for v in loops)
        text = f"{prefix}{r.buffer.name}[{where}] = {fmt}\\n"
        self.line(f'    printf("{text}", {ids}, {args}, {value});')


def _is_zero(value) -> bool:
    return E.const_value(value) == 0 if isinstance(value, (E.Expr, int)) else False


def _static_size(buf: Buffer) -> int:
    size = 1
    for d in buf.shape:
        v = E.const_value(d)
        if not isinstance(v, int):
            from tilecraft.errors import LoweringError

            raise LoweringError(f"per-thread buffer {buf.name} needs a static shape, got {d}", buf.span)
        size *= v
    return size


__all__ = ["CudaPrinter", "value_type"]
