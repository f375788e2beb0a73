"""What the Metal target accepts, checked before lowering: no float64 (Metal has no double), no 64-bit
atomic updates (MSL has none that add; apple8+ has only ulong min/max), threadgroups of at most the
target's `max_threads`, and threadgroup memory within `threadgroup_memory` (32 KiB)."""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import Visitor
from tilecraft.transform.narrow_dtypes import refuse_narrow_dtypes
from tilecraft.transform.storage_budget import StorageBudget, check_storage_budgets

WIDE_ATOMIC_TYPES = ("int64", "uint64", "float64")
# The limits these checks report (LoweringError.unsupported), declared in the manifest.
FLOAT64 = "dtype:float64"
INT64_ATOMICS = "feature:int64-atomics"
PRINT = "feature:print"
THREADGROUP_SIZE = "resource:threadgroup-size"
THREADGROUP_MEMORY = "resource:threadgroup-memory"
# Metal does not publish a per-thread limit; past this a kernel spills far beyond what Apple GPUs keep
# on chip, and the Metal compiler refuses much larger private arrays.
THREAD_MEMORY = 64 * 1024

# What to do with a kernel of 4-bit or microscaling dtypes (refused here: transform/narrow_dtypes.py).
NARROW_HINT = (
    "convert the data to int8, float16 or float32 on the host, or run the kernel on a target that has these "
    "dtypes (cpu, cuda, opencl)"
)


class _Check(Visitor):
    def __init__(self, target, func_span=None) -> None:
        self.target = target
        self.func_span = func_span  # where a parameter without a span of its own is reported

    def _fail(self, message: str, span, hint: str, unsupported: str) -> None:
        raise LoweringError(
            message, span or self.func_span, hint, target=self.target, unsupported=unsupported
        )

    def visit_KernelLaunch(self, s: S.KernelLaunch) -> None:
        limit = self.target.attr("max_threads")
        threads = 1
        for t in s.threads:
            threads *= t
        if threads > limit:
            self._fail(f"the kernel asks for {threads} threads per block; a Metal threadgroup has at most {limit}",
                       s.span, f"use threads={limit} or fewer", THREADGROUP_SIZE)  # fmt: skip
        self.generic_visit(s)

    def visit_Buffer(self, buf) -> None:
        if buf.dtype.name == "float64":
            self._fail(f"buffer {buf.name} is float64, but Metal has no double precision", buf.span,
                       "use float32 (or run float64 kernels on the cpu or cuda target)", FLOAT64)  # fmt: skip
        self.generic_visit(buf)

    def visit_AtomicOp(self, s: S.AtomicOp) -> None:
        self._atomic(s.dst.buffer, s.span)
        self.generic_visit(s)

    def visit_AtomicUpdate(self, s: AtomicUpdate) -> None:
        self._atomic(s.buffer, s.span)
        self.generic_visit(s)

    def visit_Print(self, s: S.Print) -> None:
        self._fail("T.print is not supported on the Metal target: MSL has no printf", s.span,
                   "print on another target (cpu, cuda, opencl), or copy the values to an output buffer", PRINT)  # fmt: skip

    def _atomic(self, buf, span) -> None:
        if buf.dtype.name in WIDE_ATOMIC_TYPES:
            self._fail(f"an atomic update of {buf.dtype} buffer {buf.name}: Metal has 32-bit atomics only "
                       "(atomic_int, atomic_uint; atomic_float in device memory from apple7)", span,
                       "accumulate in a float32 or int32 buffer", INT64_ATOMICS)  # fmt: skip


@module_pass("check-metal-support")
def check_metal_support(mod: IRModule, ctx) -> IRModule:
    """The kernel uses only what Metal and the target's family support."""
    refuse_narrow_dtypes(mod, ctx.target, NARROW_HINT)
    for func in mod.functions:
        checker = _Check(ctx.target, func.span)
        for p in func.params:
            checker.visit(p)
        checker.visit(func.body)
    check_storage_budgets(mod, storage_budgets(ctx.target), ctx.target, narrowed=("shared", "shared.dyn"))
    return mod


def storage_budgets(target) -> tuple[StorageBudget, ...]:
    """A thread's private memory and a threadgroup's threadgroup memory."""
    return (
        StorageBudget(
            "thread memory",
            ("local.fragment", "local", "local.var"),
            THREAD_MEMORY,
            per_thread=True,
            hint="use smaller tiles or more threads per threadgroup",
        ),  # fmt: skip
        StorageBudget(
            "threadgroup memory",
            ("shared", "shared.dyn"),
            target.attr("threadgroup_memory"),
            align=16,
            hint="use smaller shared tiles (block sizes) or fewer shared buffers",
            unsupported=THREADGROUP_MEMORY,
        ),
    )
