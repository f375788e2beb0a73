"""Kernels the profiler and autotuner tests share (C target)."""

from __future__ import annotations

import tilecraft
import tilecraft.language as T


@tilecraft.jit(out_idx=[-1], target="c")
def scaled_add(n, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, 64), threads=64) as bx:
            for i in T.Parallel(64):
                C[bx * 64 + i] = A[bx * 64 + i] * 2 + B[bx * 64 + i]

    return main
