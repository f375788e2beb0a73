"""Hand-made CUDA artifacts (what the CUDA codegen produces) and small test doubles."""

from __future__ import annotations

import hashlib

from tilecraft.backend import Target
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.runtime import CompiledArtifact, KernelInfo, ParamInfo
from tilecraft.testing.filecheck import filecheck

ADD_SOURCE = """
extern "C" __global__ void add_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] + alpha * B[i];
}
"""


def add_artifact(arch: str = "sm_90a", binaries: dict | None = None, dynamic_smem: int = 0,
                 source: str = ADD_SOURCE, compile_flags: tuple[str, ...] = (), widened_grid: bool = False
                 ) -> CompiledArtifact:  # fmt: skip
    """A hand-made artifact of `C = A + alpha * B` over a symbolic length n, as CUDA codegen makes one
    (`widened_grid`: the grid computed in int64 and cast back, as widen-index-arithmetic leaves it)."""
    n = E.Var(dt.int32, "n")
    a, b, c = (ParamInfo(name, "buffer", dt.float32, (n,)) for name in "ABC")
    alpha = ParamInfo("alpha", "scalar", dt.float32)
    kernel = KernelInfo("add_kernel", (a, b, c, alpha, ParamInfo("n", "scalar", dt.int32)),
                        (_grid(n, widened_grid),), (128,), dynamic_smem=dynamic_smem)  # fmt: skip
    return CompiledArtifact(
        "add", Target.parse(f"cuda -arch={arch}"), (a, b, c, alpha), (n,), (kernel,),
        {"cuda-source": source}, binaries or {}, ir_hash=_digest(arch, dynamic_smem, source),
        extra=(("compile_flags", compile_flags),), buffer_alignment=16,  # as CUDA codegen assumes (cuda/storage.py)
    )  # fmt: skip


def _grid(n: E.Var, widened: bool) -> E.Expr:
    if not widened:
        return E.floordiv(n + 127, 128)
    return E.Cast(dt.int32, E.floordiv(E.Cast(dt.int64, n) + 127, 128))


class FakeContext:
    """The parts of a BackendContext that `build` and `Kernel` read."""

    target_host = None

    def __init__(self, backend=None) -> None:
        self.backend_object = backend

    def execution_backend(self):
        return self.backend_object


def _digest(*parts) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def check_in_order(text: str, *patterns: str) -> None:
    """Each literal pattern occurs after the previous one (as FileCheck `CHECK:` lines, whose failure
    names the pattern, where the search stood and the text around it)."""
    filecheck(text, [f"CHECK: {p}" for p in patterns], name="kernel")
