"""TF32 gemms: float32 operands declared `T.tfloat32` (one or both), which targets with TF32 tensor cores
(mma.sync m16n8k8 .tf32 on NVIDIA GPUs) multiply after rounding them to a 10-bit mantissa, and other targets
multiply exactly. The references round both operands as `cvt.rna.tf32.f32` does (to nearest, ties away
from zero); `TF32_TOL` covers both results: the exact product differs from the rounded one by about 3e-4
of its norm (measured for normal inputs and K from 72 to 2048), accumulation order by about 1e-6."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

TF32_TOL = 1e-3


def round_tf32(x) -> np.ndarray:
    """`x` (float32) rounded to tf32 as float32: 10 mantissa bits, to nearest, ties away from zero (the
    13 dropped bits are added at their half and cut; NaN and infinity are not expected here)."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)


def tf32_product(a, b) -> np.ndarray:
    """a @ b in float64 of the operands rounded to tf32."""
    return round_tf32(a).astype(np.float64) @ round_tf32(b).astype(np.float64)


def gemm_tf32(m: int, n: int, k: int, transpose_a: bool, transpose_b: bool, a_dtype=T.tfloat32,
              b_dtype=T.tfloat32, block_m: int = 64, block_n: int = 64, block_k: int = 32):  # fmt: skip
    """C = op(A) @ op(B) through shared tiles declared with the operands' dtypes (T.tfloat32 or float32),
    pipelined over K; A is stored (K, M) when transposed, B (N, K)."""
    a_shape, b_shape = ((k, m) if transpose_a else (m, k)), ((n, k) if transpose_b else (k, n))
    a_tile = (block_k, block_m) if transpose_a else (block_m, block_k)
    b_tile = (block_n, block_k) if transpose_b else (block_k, block_n)

    @T.prim_func
    def gemm_tf32(
        A: T.Tensor(a_shape, a_dtype), B: T.Tensor(b_shape, b_dtype), C: T.Tensor((m, n), "float32")
    ):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=128) as (bx, by):
            A_s = T.alloc_shared(a_tile, a_dtype)
            B_s = T.alloc_shared(b_tile, b_dtype)
            acc = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                if transpose_a:
                    T.copy(A[ko * block_k, by * block_m], A_s)
                else:
                    T.copy(A[by * block_m, ko * block_k], A_s)
                if transpose_b:
                    T.copy(B[bx * block_n, ko * block_k], B_s)
                else:
                    T.copy(B[ko * block_k, bx * block_n], B_s)
                T.gemm(A_s, B_s, acc, transpose_A=transpose_a, transpose_B=transpose_b)
            T.copy(acc, C[by * block_m, bx * block_n])

    return gemm_tf32


def gemm_tf32_inputs(m: int, n: int, k: int, transpose_a: bool, transpose_b: bool):
    def inputs(rng) -> list[np.ndarray]:
        a = rng.standard_normal((k, m) if transpose_a else (m, k)).astype(np.float32)
        b = rng.standard_normal((n, k) if transpose_b else (k, n)).astype(np.float32)
        return [a, b, np.full((m, n), np.nan, np.float32)]

    return inputs


def gemm_tf32_reference(transpose_a: bool, transpose_b: bool):
    def reference(arrays) -> dict[int, np.ndarray]:
        a, b = arrays[0], arrays[1]
        return {2: tf32_product(a.T if transpose_a else a, b.T if transpose_b else b)}

    return reference
