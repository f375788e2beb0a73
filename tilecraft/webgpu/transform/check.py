"""What the WebGPU target accepts on the adapter it names, checked before lowering.

Capabilities come from the target's attributes (read from the adapter, or given). WebGPU drivers do
not always refuse what is past a limit (lavapipe ran a shader with 64 KiB of workgroup memory where
its limit is 32 KiB), so every limit the adapter reports is checked here and in codegen, never left
to the driver. An attribute that is unknown (no adapter to ask, and not given) does not block
generating WGSL; creating the pipeline on a device then reports what is missing.
"""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import Visitor
from tilecraft.transform.iteration_local import mark_iteration_local
from tilecraft.transform.narrow_dtypes import refuse_narrow_dtypes
from tilecraft.transform.storage_budget import StorageBudget, check_storage_budgets

# The limits these checks report (LoweringError.unsupported), declared in the manifest.
FLOAT64 = "dtype:float64"
INT64 = "feature:int64"
FLOAT8 = "dtype:float8"
ATOMICS = "feature:atomics"
PRINT = "feature:print"
WORKGROUP_SIZE = "resource:workgroup-size"
WORKGROUP_MEMORY = "resource:workgroup-memory"
STORAGE_BUFFERS = "resource:storage-buffers"
WIDE_WORKGROUP = "feature:64-bit-workgroup-memory"
FLOAT64_MATH = "feature:float64-math"
LOOP_ITERATIONS = "resource:loop-iterations"
# WGSL's float64 (naga's shader-f64) has arithmetic and these; sin, exp, log, pow, tanh, ... it refuses
# ("Cannot apply math function to type").
FLOAT64_MATH_OK = ("abs", "floor", "ceil", "round", "sqrt")
MATH_FUNCTIONS = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "erf", "floor", "ceil", "round", "sin",
                  "cos", "tan", "pow", "abs", "sigmoid")  # fmt: skip
# WGSL has atomics of 32-bit integers; float32 ones are a compare-exchange loop on their bits.
ATOMIC_TYPES = ("int32", "uint32", "float32")
FLOAT8_TYPES = ("float8_e4m3fn", "float8_e5m2")
# WGSL function-scope arrays live in private memory, which WebGPU does not bound; this keeps a
# per-invocation tile where every tested driver runs it.
PRIVATE_MEMORY_PER_INVOCATION = 64 * 1024

# What to do with a kernel of 4-bit or microscaling dtypes (refused here: transform/narrow_dtypes.py).
NARROW_HINT = (
    "convert the data to int8, float16 or float32 on the host, or run the kernel on a target that has these "
    "dtypes (cpu, cuda, opencl)"
)


class _Check(Visitor):
    def __init__(self, target, func_span=None) -> None:
        self.target = target
        self.func_span = func_span

    def _fail(self, message: str, span, hint: str, unsupported: str | None = None) -> None:
        raise LoweringError(message, span or self.func_span, hint, target=self.target, unsupported=unsupported)

    def visit_KernelLaunch(self, s: S.KernelLaunch) -> None:
        limit = self.target.attr("max_workgroup_size")
        threads = 1
        for t in s.threads:
            threads *= t
        if limit is not None and threads > limit:
            self._fail(f"the kernel asks for {threads} threads per block; this WebGPU adapter runs at most "
                       f"{limit} invocations per workgroup", s.span, f"use threads={limit} or fewer",
                       WORKGROUP_SIZE)  # fmt: skip
        self.generic_visit(s)

    def visit_Buffer(self, buf) -> None:
        name = buf.dtype.name
        if name == "float64" and self.target.attr("f64") is False:
            self._fail(f"buffer {buf.name} is float64, but this WebGPU adapter lacks shader-f64", buf.span,
                       "use float32, or an adapter with shader-f64", FLOAT64)  # fmt: skip
        if name in ("int64", "uint64") and self.target.attr("int64") is False:
            self._fail(f"buffer {buf.name} is {name}, but this WebGPU adapter lacks shader-int64", buf.span,
                       "use int32, or an adapter with shader-int64", INT64)  # fmt: skip
        if buf.scope in ("shared", "shared.dyn") and buf.dtype.bytes > 4 and self.target.attr("int64") is False:
            self._fail(f"shared buffer {buf.name} is {name}; WebGPU workgroup memory holds 32-bit words and a "
                       "64-bit element is moved through a u64, which this adapter lacks (shader-int64)", buf.span,
                       "stage the tile as float32 or int32, keep it in global memory, or use an adapter with "
                       "shader-int64", WIDE_WORKGROUP)  # fmt: skip
        if name in FLOAT8_TYPES:
            self._fail(f"buffer {buf.name} is {name}; WGSL has no 8-bit float type and the WebGPU backend "
                       "does not emulate one", buf.span, "convert to float16 or float32 on the host", FLOAT8)  # fmt: skip
        self.generic_visit(buf)

    def visit_Call(self, e) -> None:
        if e.dtype.name == "float64" and e.op in MATH_FUNCTIONS and e.op not in FLOAT64_MATH_OK:
            self._fail(f"T.{e.op} of a float64 value: WGSL has no float64 {e.op}", getattr(e, "span", None),
                       "compute it in float32 (cast the operand), or use another target", FLOAT64_MATH)  # fmt: skip
        self.generic_visit(e)

    def visit_Print(self, s: S.Print) -> None:
        self._fail("T.print is not supported on WebGPU: WGSL has no printf", s.span,
                   "copy the values to an output buffer and print them on the host", PRINT)  # fmt: skip

    def visit_AtomicOp(self, s: S.AtomicOp) -> None:
        self._atomic(s.dst.buffer, s.span)
        self.generic_visit(s)

    def visit_AtomicUpdate(self, s: AtomicUpdate) -> None:
        self._atomic(s.buffer, s.span)
        self.generic_visit(s)

    def _atomic(self, buf, span) -> None:
        if buf.dtype.name not in ATOMIC_TYPES or buf.scope != "global":
            self._fail(f"an atomic update of {buf.scope} {buf.dtype} buffer {buf.name}: WebGPU has atomics on "
                       "32-bit words of storage buffers (int32, uint32; float32 through compare-exchange)",
                       span, "accumulate into a global float32 or int32 buffer", ATOMICS)  # fmt: skip


def _buffer_params(mod: IRModule):
    for func in mod.functions:
        yield func, [p for p in func.params if hasattr(p, "scope")]


@module_pass("check-webgpu-support")
def check_webgpu_support(mod: IRModule, ctx) -> IRModule:
    """The kernel uses only what this backend lowers and the target adapter supports."""
    refuse_narrow_dtypes(mod, ctx.target, NARROW_HINT)
    for func in mod.functions:
        checker = _Check(ctx.target, func.span)
        for p in func.params:
            checker.visit(p)
        checker.visit(func.body)
    limit = ctx.target.attr("max_storage_buffers")
    for func, buffers in _buffer_params(mod):
        if limit is not None and len(buffers) > limit:
            raise LoweringError(f"{func.name} takes {len(buffers)} buffers; a WebGPU shader stage of this "
                                f"adapter binds at most {limit} storage buffers", func.span,
                                "pass fewer tensors (views of one tensor count once)", target=ctx.target,
                                unsupported=STORAGE_BUFFERS)  # fmt: skip
    # counted where narrow-shared-scopes will place them: iteration-local tiles inside their loops,
    # and inside scalar bindings
    check_storage_budgets(mark_iteration_local(mod), storage_budgets(ctx.target), ctx.target,
                          narrowed=("shared", "shared.dyn"), bindings=True)  # fmt: skip
    return mod


def storage_budgets(target) -> tuple[StorageBudget, ...]:
    """An invocation's private memory, and a workgroup's memory where the target knows it (as written;
    codegen checks again with the sizes WGSL stores)."""
    budgets = [
        StorageBudget("private memory", ("local.fragment", "local", "local.var"), PRIVATE_MEMORY_PER_INVOCATION,
                      per_thread=True, hint="use smaller tiles or more threads (invocations per workgroup)"),
    ]  # fmt: skip
    memory = target.attr("workgroup_memory")
    if memory is not None:
        budgets.append(StorageBudget("shared (workgroup) memory", ("shared", "shared.dyn"), memory,
                                     hint="use smaller shared tiles (block sizes) or fewer shared buffers",
                                     unsupported=WORKGROUP_MEMORY))  # fmt: skip
    return tuple(budgets)
