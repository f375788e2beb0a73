"""Prints lowered tile IR as OpenCL C 1.2.

Global buffers are `__global` kernel parameters; shared buffers are `__local` pointers into the
work-group's local memory (one `__local uint4*` argument, at offsets the plan chose); per-thread
buffers are private arrays; `local.var` buffers are scalars. Math uses OpenCL's overloaded builtins.
"""

from __future__ import annotations

from tilecraft.codegen.c_family import ATOMIC_OP, ATOMIC_SUFFIX, CFamilyPrinter
from tilecraft.ir import expr as E
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.opencl.storage import SHARED_SCOPES

MATH = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt", "tanh": "tanh",
        "erf": "erf", "floor": "floor", "ceil": "ceil", "round": "rint", "sin": "sin", "cos": "cos",
        "pow": "pow", "abs": "fabs"}  # fmt: skip
SMEM = "tc_smem"
# OpenCL C reserves these words beyond C's.
RESERVED = ("kernel", "global", "local", "constant", "private", "half", "uchar", "ushort", "uint", "ulong",
            "read_only", "write_only", "image2d_t", "sampler_t", "event_t", "vec_type_hint", "complex")  # fmt: skip


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
    # like __syncthreads: local memory and the work-group's view of global memory
    barrier_statement = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"
    thread_index = "(int32_t)get_local_id(0)"
    print_where = "[block %d,%d,%d thread %d] "
    print_ids = "(int)get_group_id(0), (int)get_group_id(1), (int)get_group_id(2), (int)get_local_id(0)"
    math32 = MATH
    math64 = MATH
    int32_index_scopes = (*SHARED_SCOPES, "local", "local.fragment")
    arena_scopes = SHARED_SCOPES

    def __init__(self, arena_offsets: dict[int, int] | None = None) -> None:
        super().__init__(arena_offsets)
        self.reserve(*RESERVED)

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

    def arena_pointer(self, buf: Buffer, ctype: str, offset: int) -> str:
        name = self.name(buf)
        return f"__local {ctype}* restrict {name} = (__local {ctype}*)((__local char*){SMEM} + {offset});"

    def _s_AtomicUpdate(self, s: AtomicUpdate) -> None:
        buf = s.buffer
        suffix = ATOMIC_SUFFIX.get(buf.dtype.name)
        space = {"__global": "g", "__local": "l"}.get(address_space(buf))
        if suffix is None or space is None:
            self.fail(f"atomic {s.kind} on a {buf.scope} buffer of {buf.dtype} is not supported on "
                      f"{self.target_name}", "use a float32 or int32 buffer in global or shared memory")  # fmt: skip
        where = f"{self.name(buf)}, (long)({self.offset(buf, s.indices)})"
        value = self.expr(s.value)
        if buf.dtype.is_float:
            self.line(f"tc_atomic_rmw_{suffix}_{space}({where}, {value}, {ATOMIC_OP[s.kind]});")
        else:
            self.line(f"tc_atomic_{s.kind}_{suffix}_{space}({where}, {value});")

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
