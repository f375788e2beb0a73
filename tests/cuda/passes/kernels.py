"""Kernels shared by the CUDA pass tests."""

from __future__ import annotations

import tilecraft.language as T

SM90A = "cuda -arch=sm_90a"


@T.prim_func
def staged(A: T.Tensor((512,), "float32"), B: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=128):
        s = T.alloc_shared((128,), "float32")
        acc = T.alloc_fragment((128,), "float32")
        T.clear(acc)
        for k in T.Pipelined(4, num_stages=2):
            T.copy(A[k * 128], s)
            for i in T.Parallel(128):
                acc[i] = acc[i] + s[i]
        T.copy(acc, B)


@T.prim_func
def tma_gemm(
    A: T.Tensor((64, 128), "float16"), B: T.Tensor((128, 64), "float16"), C: T.Tensor((64, 64), "float32")
):
    with T.Kernel(1, threads=128):
        As = T.alloc_shared((64, 64), "float16")
        Bs = T.alloc_shared((64, 64), "float16")
        Cf = T.alloc_fragment((64, 64), "float32")
        T.clear(Cf)
        for k in T.Pipelined(2, num_stages=2):
            T.copy(A[0, k * 64], As)
            T.copy(B[k * 64, 0], Bs)
            T.gemm(As, Bs, Cf)
        T.copy(Cf, C)
