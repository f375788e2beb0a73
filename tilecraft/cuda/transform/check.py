"""What the CUDA target accepts, checked before lowering."""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.target import capability
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import Visitor

MIN_CAPABILITY = (8, 0)


class _Check(Visitor):
    def __init__(self, target) -> None:
        self.target = target

    def visit_AnnotateLayout(self, s: S.AnnotateLayout) -> None:
        raise LoweringError(
            "T.annotate_layout is not supported on the CUDA target yet; layouts are inferred",
            s.span,
            "remove the annotation",
            target=self.target,
        )

    def visit_Buffer(self, buf) -> None:
        if buf.dtype.kind == "float8":
            raise LoweringError(f"buffer {buf.name} has dtype {buf.dtype}, which the CUDA target does not "
                                "support yet", buf.span, "use float16 or bfloat16", target=self.target)  # fmt: skip
        self.generic_visit(buf)


@module_pass("check-cuda-support")
def check_cuda_support(mod: IRModule, ctx) -> IRModule:
    """The target is sm_80 or newer, and the kernel uses only what this backend lowers."""
    arch = ctx.target.attr("arch")
    if arch is not None and capability(arch) < MIN_CAPABILITY:
        raise LoweringError(f"the CUDA backend needs sm_80 or newer (cp.async, bf16, ldmatrix); target arch is {arch}",
                            None, "use a target with -arch=sm_80 or newer", target=ctx.target)  # fmt: skip
    checker = _Check(ctx.target)
    for func in mod.functions:
        for p in func.params:
            checker.visit(p)
        checker.visit(func.body)
    return mod
