"""Microscaling quantization: float4_e2m1fn values with float8_e8m0fnu block scales, and int4, in packed
global memory (two values a byte, low nibble first, rows on whole bytes), then back to float32.

The quantizing kernel stores float4 through a shared tile (whole bytes), int4 straight from a fragment
(on SIMT targets each thread holds single elements: nibbles set atomically); the second kernel reads
both back through a shared tile and directly. Ragged sizes (an odd row length, tiles past both edges);
the packed outputs are poisoned bytes, and the reference is ml_dtypes' casts, byte for byte, with the
unused high nibble of each odd row's last byte left as the poison had it.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import tilecraft.language as T

FP4, INT4, E8M0 = ml_dtypes.float4_e2m1fn, ml_dtypes.int4, ml_dtypes.float8_e8m0fnu
FP4_MAX = 6.0
Q_POISON, I_POISON, S_POISON = 0xAB, 0xCD, 0x5A


def mx_quantize(m: int = 70, n: int = 77, bm: int = 16, bn: int = 32):
    """Q, S = X as float4_e2m1fn with one e8m0 scale per row and `bn` columns; K = round(2 X) as int4;
    D = Q * S and E = K, read back as float32."""
    nb = (n + bn - 1) // bn

    @T.prim_func
    def mx_quantize(X: T.Tensor((m, n), "float32"), Q: T.Tensor((m, n), "float4_e2m1fn"),
                    S: T.Tensor((m, nb), "float8_e8m0fnu"), K: T.Tensor((m, n), "int4"),
                    D: T.Tensor((m, n), "float32"), E: T.Tensor((m, n), "float32")):  # fmt: skip
        with T.Kernel(nb, T.ceildiv(m, bm), threads=128) as (bx, by):
            x = T.alloc_fragment((bm, bn), "float32")
            amax = T.alloc_fragment((bm,), "float32")
            scale = T.alloc_fragment((bm,), "float8_e8m0fnu")
            q = T.alloc_fragment((bm, bn), "float4_e2m1fn")
            q_tile = T.alloc_shared((bm, bn), "float4_e2m1fn")
            k = T.alloc_fragment((bm, bn), "int4")
            T.copy(X[by * bm, bx * bn], x)
            T.reduce_absmax(x, amax, dim=1)
            for i in T.Parallel(bm):
                scale[i] = T.max(amax[i], 1e-30) * (1.0 / FP4_MAX)
            for i, j in T.Parallel(bm, bn):
                q[i, j] = x[i, j] / T.cast(scale[i], "float32")
                k[i, j] = T.cast(T.round(x[i, j] * 2.0), "int32")
            T.copy(q, q_tile)
            T.copy(q_tile, Q[by * bm, bx * bn])
            T.copy(scale, S[by * bm : by * bm + bm, bx])
            T.copy(k, K[by * bm, bx * bn])
        with T.Kernel(nb, T.ceildiv(m, bm), threads=128) as (bx, by):
            back = T.alloc_shared((bm, bn), "float4_e2m1fn")
            T.copy(Q[by * bm, bx * bn], back)
            for i, j in T.Parallel(bm, bn):
                if by * bm + i < m and bx * bn + j < n:
                    D[by * bm + i, bx * bn + j] = T.cast(back[i, j], "float32") * T.cast(
                        S[by * bm + i, bx], "float32"
                    )
                    E[by * bm + i, bx * bn + j] = T.cast(K[by * bm + i, bx * bn + j], "float32")

    return mx_quantize


def tricky_inputs(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Normal values over many binades, a quarter of them float4 rounding ties times a power of two."""
    x = rng.standard_normal(shape) * 2.0 ** rng.integers(-4, 5, size=shape)
    ties = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0])
    tied = (
        rng.choice(ties, size=shape)
        * 2.0 ** rng.integers(-2, 3, size=shape)
        * rng.choice([-1, 1], size=shape)
    )
    pick = rng.random(shape) < 0.25
    return np.where(pick, tied, x).astype(np.float32)


def pack_rows(codes: np.ndarray, poison: int) -> np.ndarray:
    """Bytes of 4-bit codes (..., n), low nibble first; an odd row's unused nibble as `poison` has it."""
    codes = codes.astype(np.uint8) & 15
    if codes.shape[-1] % 2:
        pad = np.full((*codes.shape[:-1], 1), poison >> 4, np.uint8)
        codes = np.concatenate([codes, pad], axis=-1)
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def packed_poison(shape: tuple[int, ...], poison: int) -> np.ndarray:
    return np.full((*shape[:-1], (shape[-1] + 1) // 2), poison, np.uint8)


def mx_inputs(m: int = 70, n: int = 77, bn: int = 32):
    nb = (n + bn - 1) // bn

    def inputs(rng: np.random.Generator) -> list[np.ndarray]:
        return [tricky_inputs(rng, (m, n)), packed_poison((m, n), Q_POISON), np.full((m, nb), S_POISON, np.uint8)
                .view(E8M0), packed_poison((m, n), I_POISON), np.full((m, n), np.nan, np.float32),
                np.full((m, n), np.nan, np.float32)]  # fmt: skip

    return inputs


def mx_reference(n: int = 77, bn: int = 32):
    def reference(a: list[np.ndarray]) -> dict[int, np.ndarray]:
        x = a[0]
        m = x.shape[0]
        nb = (n + bn - 1) // bn
        padded = np.zeros((m, nb * bn), np.float32)
        padded[:, :n] = x
        amax = np.abs(padded.reshape(m, nb, bn)).max(axis=2)
        scale = (
            (np.maximum(amax, np.float32(1e-30)) * np.float32(1.0 / FP4_MAX)).astype(np.float32).astype(E8M0)
        )
        s = np.repeat(scale.astype(np.float32), bn, axis=1)[:, :n]
        q = (x / s).astype(FP4)
        k = np.rint(x.astype(np.float32) * np.float32(2.0)).astype(np.int32).astype(INT4)
        return {
            1: pack_rows(q.view(np.uint8), Q_POISON).astype(np.float64),
            2: scale.astype(np.float64),
            3: pack_rows(k.view(np.uint8), I_POISON).astype(np.float64),
            4: q.astype(np.float64) * s,
            5: k.astype(np.float64),
        }

    return reference
