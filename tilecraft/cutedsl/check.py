"""What the CuTe DSL variant lowers, checked before lowering: everything else is refused with the
kernel's line, the target, and what to use instead (the cuda backend, `target="cuda"`, runs it all)."""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import walk

USE_CUDA = "use target='cuda' (the CUDA C++ backend) for this kernel"
# limit key -> one-line reason with what to do instead (the manifest's `unsupported`)
LIMITS = {
    "op:Cumsum": "no scan in the CuTe DSL codegen yet; " + USE_CUDA,
    "op:AtomicOp": "no atomics in the CuTe DSL codegen yet; " + USE_CUDA,
    "dtype:float8-and-subbyte": "float8, 4- and 6-bit and microscaling dtypes are not emitted as CuTe DSL yet; "
    + USE_CUDA,
    "dtype:float64": "float64 is not emitted as CuTe DSL yet; " + USE_CUDA,
    "feature:register-a-gemm": "T.gemm with A in registers (flash attention's P @ V) needs the mma A-operand "
    "layout in registers, not emitted as CuTe DSL yet; stage A through shared memory, or " + USE_CUDA,
    "feature:clusters": "thread-block clusters (T.Kernel(cluster_dims=...)) are not emitted as CuTe DSL yet; "
    + USE_CUDA,
    "feature:mbarriers": "T.alloc_barrier / T.barrier_* are not emitted as CuTe DSL yet; " + USE_CUDA,
    "feature:print": "T.print is not emitted as CuTe DSL; " + USE_CUDA,
    "feature:lowered-construct": "a lowered construct the CuTe DSL printer does not emit yet (the error names "
    "it); " + USE_CUDA,
}
_SUBBYTE_KINDS = ("float8", "microfloat")


@module_pass("check-cutedsl-support")
def check_cutedsl_support(mod: IRModule, ctx) -> IRModule:
    """The kernel uses only what the CuTe DSL codegen emits: f16/bf16 tensor-core gemms with both
    operands in shared memory (or any gemm on the fma path), copies, fills, reductions, T.Parallel."""
    for func in mod.functions:
        for param in func.buffer_params:
            _check_dtype(param, func.span, ctx.target)
        for node in walk(func.body):
            _check_node(node, ctx.target)
    return mod


def _refuse(key: str, what: str, span, target) -> LoweringError:
    return LoweringError(
        f"{what} is not supported by the CuTe DSL variant", span, LIMITS[key], target=target, unsupported=key
    )


def _check_dtype(buf: Buffer, span, target) -> None:
    dtype = buf.dtype
    if dtype.kind in _SUBBYTE_KINDS or dtype.is_packed or (dtype.bits < 8 and not dtype.is_bool):
        raise _refuse("dtype:float8-and-subbyte", f"buffer {buf.name} of {dtype}", span, target)
    if dtype.is_float and dtype.bits == 64:
        raise _refuse("dtype:float64", f"buffer {buf.name} of {dtype}", span, target)


def _check_node(node, target) -> None:
    if isinstance(node, S.Cumsum):
        raise _refuse("op:Cumsum", "T.cumsum", node.span, target)
    if isinstance(node, S.AtomicOp):
        raise _refuse("op:AtomicOp", "an atomic update (T.atomic_*)", node.span, target)
    if isinstance(node, S.Print):
        raise _refuse("feature:print", "T.print", node.span, target)
    if isinstance(node, (S.BarrierInit, S.Mbarrier)):
        raise _refuse("feature:mbarriers", "an mbarrier", node.span, target)
    if isinstance(node, S.KernelLaunch) and S.annotation(node.annotations, S.CLUSTER_DIMS):
        raise _refuse("feature:clusters", "a thread-block cluster", node.span, target)
    if isinstance(node, S.Allocate):
        _check_dtype(node.buffer, node.span, target)
    if isinstance(node, S.Gemm) and node.a.buffer.scope == "local.fragment" and node.a.dtype.bits == 16:
        raise _refuse("feature:register-a-gemm", "T.gemm with A in registers", node.span, target)
