"""Gemms of 8-bit integer operands into an int32 accumulator: both operands K-major from shared memory
(ragged M and N, a two-stage pipeline), unsigned ones, A dequantized from packed 4-bit codes into a
fragment (TileLang's example_dequant_gemm_w4a8), and an operand that is not K-major (B stored (K, N))."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

POISON = -(2**31) + 7  # no int32 product sum of these inputs lands on it


def int8_gemm(m: int, n: int, k: int, a_dtype: str, b_dtype: str, transpose_b: bool = True):
    """C = A @ B^T (B stored (N, K)), or A @ B with B stored (K, N), in 64x64x64 block tiles."""
    bm, bn, bk = 64, 64, 64
    b_shape = (n, k) if transpose_b else (k, n)
    b_tile = (bn, bk) if transpose_b else (bk, bn)

    @T.prim_func
    def int8_gemm(A: T.Tensor((m, k), a_dtype), B: T.Tensor(b_shape, b_dtype), C: T.Tensor((m, n), "int32")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            a = T.alloc_shared((bm, bk), a_dtype)
            b = T.alloc_shared(b_tile, b_dtype)
            c = T.alloc_fragment((bm, bn), "int32")
            T.clear(c)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], a)
                if transpose_b:
                    T.copy(B[bx * bn, ko * bk], b)
                else:
                    T.copy(B[ko * bk, bx * bn], b)
                T.gemm(a, b, c, transpose_B=transpose_b)
            T.copy(c, C[by * bm, bx * bn])

    return int8_gemm


def _codes(rng, dtype: str, shape) -> np.ndarray:
    low, high = (0, 256) if dtype == "uint8" else (-128, 128)
    return rng.integers(low, high, size=shape).astype(dtype)


def int8_gemm_inputs(m: int, n: int, k: int, a_dtype: str, b_dtype: str, transpose_b: bool = True):
    def inputs(rng) -> list[np.ndarray]:
        b_shape = (n, k) if transpose_b else (k, n)
        return [_codes(rng, a_dtype, (m, k)), _codes(rng, b_dtype, b_shape), np.full((m, n), POISON, np.int32)]

    return inputs


def int8_gemm_reference(transpose_b: bool = True):
    def reference(arrays) -> dict[int, np.ndarray]:
        a, b = (np.asarray(x, np.float64) for x in arrays[:2])
        return {2: a @ (b.T if transpose_b else b)}

    return reference


W4A8 = (96, 64, 256)  # M (rows of the 4-bit weights), N (rows of the int8 activations), K


def w4a8_gemm():
    """Ct = dequant(Wq) @ X^T: Wq packs two signed 4-bit codes a byte (low nibble first), unpacked into an
    int8 fragment that is the gemm's register A (example_dequant_gemm_w4a8.py, 32x32x128 tiles)."""
    m, n, k = W4A8
    bm, bn, bk = 32, 32, 128

    @T.prim_func
    def w4a8_gemm(X: T.Tensor((n, k), "int8"), Wq: T.Tensor((m, k // 2), "uint8"), Ct: T.Tensor((m, n), "int32")):
        with T.Kernel(T.ceildiv(m, bm), T.ceildiv(n, bn), threads=128) as (bx, by):
            x = T.alloc_shared((bn, bk), "int8")
            wq = T.alloc_shared((bm, bk // 2), "uint8")
            wq_local = T.alloc_fragment((bm, bk // 2), "uint8")
            w = T.alloc_fragment((bm, bk), "int8")
            acc = T.alloc_fragment((bm, bn), "int32")
            T.clear(acc)
            for ko in T.Pipelined(k // bk, num_stages=1):
                T.copy(X[by * bn, ko * bk], x)
                T.copy(Wq[bx * bm, ko * bk // 2], wq)
                T.copy(wq, wq_local)
                for i, j in T.Parallel(bm, bk):
                    nibble = (wq_local[i, j // 2] >> ((j % 2) * 4).astype("uint8")) & T.uint8(15)
                    w[i, j] = T.reinterpret("int8", nibble << T.uint8(4)) >> T.int8(4)
                T.gemm(w, x, acc, transpose_B=True)
            T.copy(acc, Ct[bx * bm, by * bn])

    return w4a8_gemm


def w4a8_inputs(rng) -> list[np.ndarray]:
    m, n, k = W4A8
    return [_codes(rng, "int8", (n, k)), _codes(rng, "uint8", (m, k // 2)), np.full((m, n), POISON, np.int32)]


def w4a8_reference(arrays) -> dict[int, np.ndarray]:
    x, wq = arrays[0].astype(np.float64), arrays[1].astype(np.int64)
    nibbles = np.stack((wq & 15, wq >> 4), axis=-1).reshape(wq.shape[0], -1)
    w = np.where(nibbles >= 8, nibbles - 16, nibbles).astype(np.float64)
    return {2: w @ x.T}
