"""What the OpenCL target accepts on the device it names, checked before lowering.

Capabilities come from the target's attributes (read from the device, or given). An attribute that
is unknown (no device to ask, and not given) does not block code generation: the program build on the
device reports what is missing then.
"""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import Visitor
from tilecraft.opencl.storage import SHARED_ALIGN, SHARED_SCOPES
from tilecraft.transform.storage_budget import (
    StorageBudget,
    arena_budgets,
    check_storage_budgets,
    private_budget,
)

WIDE_ATOMIC_TYPES = ("int64", "uint64", "float64")
# The limits these checks report (LoweringError.unsupported), declared in the manifest: they depend on the
# device a target names.
FLOAT64 = "dtype:float64"
INT64_ATOMICS = "feature:int64-atomics"
WORK_GROUP_SIZE = "resource:work-group-size"
LOCAL_MEMORY = "resource:local-memory"
# OpenCL has no query for a work-item's private memory. This is the largest any tested device offers
# (NVIDIA: 512 KiB of local memory per thread); past it no device runs the kernel.
PRIVATE_MEMORY_PER_WORK_ITEM = 512 * 1024


class _Check(Visitor):
    def __init__(self, target, func_span=None) -> None:
        self.target = target
        self.func_span = func_span  # where a parameter without a span of its own is reported

    def _fail(self, message: str, span, hint: str, unsupported: str | None = None) -> None:
        raise LoweringError(
            message, span or self.func_span, hint, target=self.target, unsupported=unsupported
        )

    def visit_KernelLaunch(self, s: S.KernelLaunch) -> None:
        limit = self.target.attr("max_work_group_size")
        threads = 1
        for t in s.threads:
            threads *= t
        if limit is not None and threads > limit:
            self._fail(f"the kernel asks for {threads} threads per block; this OpenCL device runs at most "
                       f"{limit} work-items per work-group", s.span, f"use threads={limit} or fewer", WORK_GROUP_SIZE)  # fmt: skip
        self.generic_visit(s)

    def visit_Buffer(self, buf) -> None:
        if buf.dtype.name == "float64" and self.target.attr("fp64") is False:
            self._fail(f"buffer {buf.name} is float64, but this OpenCL device has no cl_khr_fp64", buf.span,
                       "use float32, or a device with double precision", FLOAT64)  # fmt: skip
        self.generic_visit(buf)

    def visit_AtomicOp(self, s: S.AtomicOp) -> None:
        self._atomic(s.dst.buffer, s.span)
        self.generic_visit(s)

    def visit_AtomicUpdate(self, s: AtomicUpdate) -> None:
        self._atomic(s.buffer, s.span)
        self.generic_visit(s)

    def _atomic(self, buf, span) -> None:
        if buf.dtype.name in WIDE_ATOMIC_TYPES and self.target.attr("int64_atomics") is False:
            self._fail(f"an atomic update of {buf.dtype} buffer {buf.name} needs the device's "
                       "cl_khr_int64_base_atomics (and extended atomics for max/min), which it lacks", span,
                       "accumulate in a float32 or int32 buffer", INT64_ATOMICS)  # fmt: skip


@module_pass("check-opencl-support")
def check_opencl_support(mod: IRModule, ctx) -> IRModule:
    """The kernel uses only what this backend lowers and the target device supports."""
    for func in mod.functions:
        checker = _Check(ctx.target, func.span)
        for p in func.params:
            checker.visit(p)
        checker.visit(func.body)
    check_storage_budgets(mod, storage_budgets(ctx.target), ctx.target, narrowed=SHARED_SCOPES)
    return mod


def storage_budgets(target) -> tuple[StorageBudget, ...]:
    """A work-item's private memory, and a work-group's local memory where the target knows it."""
    private = private_budget(
        "private memory",
        PRIVATE_MEMORY_PER_WORK_ITEM,
        "use smaller tiles or more threads (work-items per work-group)",
    )
    local = arena_budgets(
        "shared (local) memory", SHARED_SCOPES, target.attr("local_mem"), SHARED_ALIGN, LOCAL_MEMORY
    )
    return (private, *local)
