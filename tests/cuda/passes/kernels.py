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
def staged_in_body(A: T.Tensor((512,), "float32"), B: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=128):
        acc = T.alloc_fragment((128,), "float32")
        T.clear(acc)
        for k in T.Pipelined(4, num_stages=2):
            s = T.alloc_shared((128,), "float32")
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


@T.prim_func
def guarded_staged(
    A: T.Tensor((512,), "float32"), Mask: T.Tensor((4,), "bool"), B: T.Tensor((128,), "float32")
):
    with T.Kernel(1, threads=128):
        s = T.alloc_shared((128,), "float32")
        acc = T.alloc_fragment((128,), "float32")
        T.clear(acc)
        for k in T.Pipelined(4, num_stages=2):
            if Mask[k]:
                T.copy(A[k * 128], s)
                for i in T.Parallel(128):
                    acc[i] = acc[i] + s[i]
        T.copy(acc, B)


@T.prim_func
def guarded_tma_gemm(
    A: T.Tensor((64, 128), "float16"),
    B: T.Tensor((128, 64), "float16"),
    Mask: T.Tensor((2,), "bool"),
    C: T.Tensor((64, 64), "float32"),
):
    with T.Kernel(1, threads=128):
        As = T.alloc_shared((64, 64), "float16")
        Bs = T.alloc_shared((64, 64), "float16")
        Cf = T.alloc_fragment((64, 64), "float32")
        T.clear(Cf)
        for k in T.Pipelined(2, num_stages=2):
            if Mask[k]:
                T.copy(A[0, k * 64], As)
                T.copy(B[k * 64, 0], Bs)
                T.gemm(As, Bs, Cf)
        T.copy(Cf, C)


def persistent_staged(size: int, tile: tuple[int, int, int], threads: int, blocks: int, stages: int,
                      read_back: bool = False):  # fmt: skip
    """A T.Persistent GEMM of size^3 over `blocks` blocks with the C_shared epilogue; `read_back`: the
    epilogue also reads C_s (so C_s is no staging tile of one store)."""
    bm, bn, bk = tile

    @T.prim_func
    def gemm(A: T.Tensor((size, size), "float16"), B: T.Tensor((size, size), "float16"),
             C: T.Tensor((size, size), "float16")):  # fmt: skip
        with T.Kernel(blocks, threads=threads) as block:
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            C_s = T.alloc_shared((bm, bn), "float16")
            for bx, by in T.Persistent([T.ceildiv(size, bm), T.ceildiv(size, bn)], blocks, block):
                T.clear(C_l)
                for k in T.Pipelined(T.ceildiv(size, bk), num_stages=stages):
                    T.copy(A[bx * bm, k * bk], A_s)
                    T.copy(B[k * bk, by * bn], B_s)
                    T.gemm(A_s, B_s, C_l)
                T.copy(C_l, C_s)
                T.copy(C_s, C[bx * bm, by * bn])
                if read_back:
                    T.copy(C_s, A[bx * bm, by * bn])

    return gemm


@T.prim_func
def tf32_register_a(
    A: T.Tensor((16, 8), T.tfloat32), B: T.Tensor((16, 8), "float32"), C: T.Tensor((16, 16), "float32")
):
    with T.Kernel(1, threads=32):
        a = T.alloc_fragment((16, 8), T.tfloat32)
        b = T.alloc_shared((16, 8), "float32")
        c = T.alloc_fragment((16, 16), "float32")
        T.copy(A, a)
        T.copy(B, b)
        T.gemm(a, b, c, transpose_B=True, clear_accum=True)
        T.copy(c, C)


def decode_tiles_kernel(stages: int):
    """Flash decoding's shape in miniature: Q loaded once, then K and V tiles each read by one gemm."""

    @T.prim_func
    def decode_tiles(
        Q: T.Tensor((64, 64), "float16"), K: T.Tensor((256, 64), "float16"), V: T.Tensor((256, 64), "float16"),
        Out: T.Tensor((64, 64), "float32"),
    ):  # fmt: skip
        with T.Kernel(1, threads=128):
            Qs = T.alloc_shared((64, 64), "float16")
            Ks = T.alloc_shared((64, 64), "float16")
            Vs = T.alloc_shared((64, 64), "float16")
            S = T.alloc_fragment((64, 64), "float32")
            P = T.alloc_fragment((64, 64), "float16")
            Of = T.alloc_fragment((64, 64), "float32")
            T.copy(Q, Qs)
            T.clear(Of)
            for k in T.Pipelined(4, num_stages=stages):
                T.copy(K[k * 64, 0], Ks)
                T.copy(V[k * 64, 0], Vs)
                T.clear(S)
                T.gemm(Qs, Ks, S, transpose_B=True)
                T.copy(S, P)
                T.gemm(P, Vs, Of)
            T.copy(Of, Out)

    return decode_tiles


decode_tiles = decode_tiles_kernel(2)
