"""Prints lowered tile IR as OpenCL C 1.2.

Global buffers are `__global` kernel parameters; shared buffers are `__local` pointers into the
work-group's local memory (one `__local uint4*` argument, at offsets the plan chose); per-thread
buffers are private arrays; `local.var` buffers are scalars. Math uses OpenCL's overloaded builtins.
"""

from __future__ import annotations

from tilecraft.codegen.c_family import ATOMIC_SUFFIX, CFamilyPrinter
from tilecraft.codegen.reserved import C_RESERVED, words
from tilecraft.codegen.space_atomics import print_space_atomic
from tilecraft.execution.opencl.spec import NO_UNROLL
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.opencl.storage import SHARED_SCOPES

MATH = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt", "tanh": "tanh",
        "erf": "erf", "floor": "floor", "ceil": "ceil", "round": "rint", "sin": "sin", "cos": "cos",
        "pow": "pow", "abs": "fabs", "fmax": "fmax", "fmin": "fmin"}  # fmt: skip
SMEM = "tc_smem"
# OpenCL C's keywords, types and built-in functions beyond C's: its address spaces and access
# qualifiers, scalar and vector types, work-item, math, integer, geometric, relational, vector load and
# store, conversion, synchronization, atomic and image functions.
OPENCL_RESERVED = C_RESERVED.extended(
    words("""kernel global local constant private generic read_only write_only read_write uniform pipe
    half uchar ushort uint ulong bool complex imaginary image1d_t image2d_t image3d_t image1d_array_t
    image2d_array_t image1d_buffer_t image2d_depth_t sampler_t event_t queue_t ndrange_t clk_event_t
    reserve_id_t cl_mem_fence_flags memory_scope memory_order vec_type_hint reqd_work_group_size
    work_group_size_hint barrier mem_fence read_mem_fence write_mem_fence async_work_group_copy
    async_work_group_strided_copy wait_group_events prefetch printf min max clamp mix step smoothstep sign
    degrees radians mad mad24 mad_hi mad_sat mul24 mul_hi add_sat sub_sat hadd rhadd upsample abs_diff
    popcount clz ctz rotate bitselect select shuffle shuffle2 any all dot cross distance length normalize
    maxmag minmag fract pown powr rootn rsqrt sinpi cospi tanpi asinpi acospi atanpi atan2pi exp10 sincos
    isequal isnotequal isordered nan"""),
    (
        r"(u?(char|short|int|long)|float|double|half|bool)(2|3|4|8|16)",
        r"(convert|as)_\w+",
        r"v(load|store)a?(_half)?\d*(_\w+)?",
        r"get_\w+",
        r"atomic?_\w+",
        r"(native|half|fast)_\w+",
        r"(read|write)_image\w*",
        r"(work|sub)_group_\w+",
        r"(image|sampler|queue|enqueue|ndrange)\w*",
        r"cl_\w+",
    ),
)


def address_space(buf: Buffer) -> str:
    return "__local" if buf.scope in SHARED_SCOPES else "__global" if buf.scope == "global" else ""


# OpenCL's as_<type> functions take the built-in names, not the stdint-style typedefs of tc_opencl.h.
_OPENCL_SCALAR = {
    "int8_t": "char", "int16_t": "short", "int32_t": "int", "int64_t": "long", "uint8_t": "uchar",
    "uint16_t": "ushort", "uint32_t": "uint", "uint64_t": "ulong", "float": "float", "double": "double",
}  # fmt: skip


class OpenCLPrinter(CFamilyPrinter):
    """Writes the body of one OpenCL kernel."""

    target_name = "the OpenCL target"
    reserved_names = OPENCL_RESERVED
    # like __syncthreads: local memory and the work-group's view of global memory
    barrier_statement = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"
    thread_index = "(int32_t)get_local_id(0)"
    print_where = "[block %d,%d,%d thread %d] "
    print_ids = "(int)get_group_id(0), (int)get_group_id(1), (int)get_group_id(2), (int)get_local_id(0)"
    math32 = MATH
    math64 = MATH
    fma_functions = {"float32": "fma", "float64": "fma"}  # OpenCL C's fma is correctly rounded
    int32_index_scopes = (*SHARED_SCOPES, "local", "local.fragment")
    arena_scopes = SHARED_SCOPES

    def loop_pragma(self, s: S.For) -> str | None:
        # A CPU device builds with TC_NO_UNROLL (execution/opencl/program.py): PoCL takes minutes to
        # make work-group functions of fully unrolled attention loops, and a CPU keeps the arrays in
        # memory either way. A GPU unrolls them, which keeps the arrays in registers.
        pragma = super().loop_pragma(s)
        return None if pragma is None else f"#ifndef {NO_UNROLL}\n{pragma}\n#endif"

    def __init__(self, arena_offsets: dict[int, int] | None = None) -> None:
        super().__init__(arena_offsets)

    # ------------------------------------------------------------------ expressions

    def bitcast(self, value: str, source: str, dest: str) -> str:
        return value if source == dest else f"as_{_OPENCL_SCALAR[dest]}({value})"

    def math_call(self, e: E.Call, args: list[str]) -> str:
        if e.op == "rsqrt":
            return f"rsqrt({args[0]})"
        if e.op == "sigmoid":
            one = "1.0f" if e.dtype.bits != 64 else "1.0"
            return f"({one} / ({one} + exp(-({args[0]}))))"
        return super().math_call(e, args)

    def address_pointer(self, buf: Buffer) -> str:
        self.refuse_address(buf, "OpenCL C 1.2 kernels reach global memory through their buffer arguments, and a "
                            "buffer has no device address a table could hold", "pass the tensor as a T.Tensor "
                            "parameter, or run the kernel on the cpu, cuda or hip target")  # fmt: skip

    def arena_pointer(self, buf: Buffer, ctype: str, offset: int) -> str:
        name = self.name(buf)
        return f"__local {ctype}* restrict {name} = (__local {ctype}*)((__local char*){SMEM} + {offset});"

    def _e_AtomicValue(self, e: E.AtomicValue) -> str:
        self.fail(f"T.atomic_{e.kind} as an expression (atomic_load, atomic_store, return_prev=True) is not "
                  f"supported on {self.target_name}: OpenCL C 2.0's atomic_load_explicit / atomic_fetch_add_explicit need atomic_* typed buffers, which this target does not declare",
                  "run the kernel on the CPU, CUDA or HIP target, or use the statement form (T.atomic_add without "
                  "return_prev) and plain loads and stores ordered by the kernel's barriers")

    def _s_AtomicUpdate(self, s: AtomicUpdate) -> None:
        space = {"__global": "g", "__local": "l"}.get(address_space(s.buffer))
        print_space_atomic(self, s, ATOMIC_SUFFIX, space, "long")

    def print_format(self, dtype, value: str) -> tuple[str, str]:
        """OpenCL printf: 64-bit integers are `long` (%ld); floats print as float (a device without
        doubles has no double arguments)."""
        return opencl_print_format(dtype, value)


def opencl_print_format(dtype, value: str) -> tuple[str, str]:
    if dtype.is_float:
        return "%.6g", f"(float)({value})"
    if dtype.bits == 64:
        return "%ld", f"(long)({value})"
    return "%d", f"(int)({value})"
