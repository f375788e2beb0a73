"""What the HIP target accepts, checked before lowering: storage within the arch's LDS and a
work-item's private memory, and only the math and output the generated code can compile without ROCm's
device libraries (ocml, the printf hostcall)."""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import walk
from tilecraft.transform.narrow_dtypes import refuse_narrow_dtypes
from tilecraft.transform.storage_budget import StorageBudget, check_storage_budgets

# The limits these checks report (LoweringError.unsupported), declared in the manifest.
LDS = "resource:lds"
FLOAT64_MATH = "feature:float64-math"
PRINT = "feature:print"
# clang expands these float64 functions for AMDGPU without ocml; the others (exp, log, sin, ...) would
# be calls into a device library the code object does not link.
FLOAT64_MATH_OK = ("sqrt", "floor", "ceil", "round", "abs", "rsqrt")
MATH = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "erf", "floor", "ceil", "round", "sin", "cos",
        "pow", "abs", "sigmoid")  # fmt: skip
# A scratch (private) segment of a work-item: the most AMD's HSA runtime gives one (its
# max_scratch_per_work_item on CDNA is 0x3ffc0 bytes); fragments spill there past 512 VGPRs.
PRIVATE_MEMORY_PER_WORK_ITEM = 0x3FFC0

# What to do with a kernel of 4-bit or microscaling dtypes (refused here: transform/narrow_dtypes.py).
NARROW_HINT = (
    "convert the data to int8, float16 or float32 on the host, or run the kernel on a target that has these "
    "dtypes (cpu, cuda, opencl)"
)


@module_pass("check-hip-support")
def check_hip_support(mod: IRModule, ctx) -> IRModule:
    """The kernel uses only what the HIP backend compiles without ROCm, within the arch's memories."""
    refuse_narrow_dtypes(mod, ctx.target, NARROW_HINT)
    for func in mod.functions:
        for node in walk(func.body):
            _check_node(node, ctx.target, func)
    check_storage_budgets(mod, storage_budgets(ctx.target), ctx.target, narrowed=("shared", "shared.dyn"))
    return mod


def _check_node(node, target, func) -> None:
    if (
        isinstance(node, E.Call)
        and node.op in MATH
        and node.dtype.name == "float64"
        and node.op not in FLOAT64_MATH_OK
    ):
        raise LoweringError(
            f"T.{node.op} of a float64 value cannot be compiled for {target}: without ROCm's ocml device library "
            f"clang has no float64 {node.op} for AMD GPUs", getattr(node, "span", None) or func.span,
            "compute it in float32 (cast the operand), or use another target", target=target,
            unsupported=FLOAT64_MATH,
        )  # fmt: skip
    if isinstance(node, S.Print):
        raise LoweringError(
            f"T.print is not supported on {target}: device printf needs ROCm's hostcall buffer, which this "
            "backend does not set up", node.span or func.span,
            "copy the values to an output buffer and print them on the host", target=target, unsupported=PRINT,
        )  # fmt: skip


def storage_budgets(target) -> tuple[StorageBudget, ...]:
    """A work-item's private memory and a work-group's LDS."""
    return (
        StorageBudget(
            "private memory", ("local.fragment", "local", "local.var"), PRIVATE_MEMORY_PER_WORK_ITEM, per_thread=True,
            hint="use smaller tiles or more work-items; registers past 512 VGPRs spill to scratch",
        ),
        StorageBudget(
            "LDS (shared memory)", ("shared", "shared.dyn"), target.attr("lds"), align=128,
            hint="use smaller shared tiles (block sizes) or fewer shared buffers", unsupported=LDS,
        ),
    )  # fmt: skip
