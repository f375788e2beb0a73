"""Convolution as TileLang's examples write it (examples/convolution/example_convolution.py): `T.im2col`
fills the image tile, the weights and the output are read and written through `T.Tensor(shape, dtype,
X.data)` views. The sizes are ragged for the tiles (N * OH * OW, KH * KW * C and F are no multiples of
block_M, block_K and block_N), with stride 2, dilation 2 and padding 1, so every edge and every
padding case is taken."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

N, C, H, W, F = 3, 6, 13, 11, 40
KSIZE, STRIDE, DILATION, PAD = 3, 2, 2, 1
OH = (H + 2 * PAD - DILATION * (KSIZE - 1) - 1) // STRIDE + 1  # 6
OW = (W + 2 * PAD - DILATION * (KSIZE - 1) - 1) // STRIDE + 1  # 5
BM, BN, BK = 64, 32, 32  # N * OH * OW = 90, KSIZE**2 * C = 54


def conv2d(out_through_shared: bool = True):
    """The example's kernel; `out_through_shared=False` stores the accumulator straight into the output
    view, as example_convolution_autotune.py does off Hopper."""
    dtype, accum_dtype = "float16", "float32"
    KH, KW = KSIZE, KSIZE

    @T.prim_func
    def conv2d(
        data: T.Tensor((N, H, W, C), dtype),
        kernel: T.Tensor((KH, KW, C, F), dtype),
        out: T.Tensor((N, OH, OW, F), dtype),
    ):
        with T.Kernel(T.ceildiv(F, BN), T.ceildiv(N * OH * OW, BM), threads=128) as (bx, by):
            data_shared = T.alloc_shared((BM, BK), dtype)
            kernel_shared = T.alloc_shared((BK, BN), dtype)
            out_local = T.alloc_fragment((BM, BN), accum_dtype)
            out_shared = T.alloc_shared((BM, BN), dtype)

            kernel_flat = T.Tensor((KH * KW * C, F), dtype, kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), dtype, out.data)

            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, BK), num_stages=2):
                T.im2col(data, data_shared, by, k_iter, KH, STRIDE, DILATION, PAD)
                T.copy(kernel_flat[k_iter * BK, bx * BN], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)

            if out_through_shared:
                T.copy(out_local, out_shared)
                T.copy(out_shared, out_flat[by * BM, bx * BN])
            else:
                T.copy(out_local, out_flat[by * BM, bx * BN])

    return conv2d


def conv2d_fragment_out():
    return conv2d(out_through_shared=False)


def conv_inputs(rng) -> list[np.ndarray]:
    return [rng.standard_normal((N, H, W, C)).astype(np.float16),
            rng.standard_normal((KSIZE, KSIZE, C, F)).astype(np.float16),
            np.full((N, OH, OW, F), np.nan, np.float16)]  # fmt: skip


def im2col_matrix(x: np.ndarray) -> np.ndarray:
    """The (N * OH * OW, KH * KW * C) im2col matrix of the NHWC image `x`, in float64."""
    padded = np.pad(np.asarray(x, np.float64), ((0, 0), (PAD, PAD), (PAD, PAD), (0, 0)))
    cols = np.empty((N, OH, OW, KSIZE, KSIZE, C))
    for kh in range(KSIZE):
        for kw in range(KSIZE):
            h, w = kh * DILATION, kw * DILATION
            cols[:, :, :, kh, kw, :] = padded[:, h : h + STRIDE * (OH - 1) + 1 : STRIDE,
                                              w : w + STRIDE * (OW - 1) + 1 : STRIDE, :]  # fmt: skip
    return cols.reshape(N * OH * OW, KSIZE * KSIZE * C)


def conv_reference(arrays) -> dict[int, np.ndarray]:
    weights = np.asarray(arrays[1], np.float64).reshape(KSIZE * KSIZE * C, F)
    return {2: (im2col_matrix(arrays[0]) @ weights).reshape(N, OH, OW, F)}


def im2col_tiles():
    """T.im2col alone: each tile of the im2col matrix copied out, so every value (padding zeros, the
    order kh, kw, c of the columns, the rows past the output) is compared, not only their products."""
    rows, cols = N * OH * OW, KSIZE * KSIZE * C

    @T.prim_func
    def im2col_tiles(data: T.Tensor((N, H, W, C), "float32"), col: T.Tensor((rows, cols), "float32")):
        with T.Kernel(T.ceildiv(cols, BK), T.ceildiv(rows, BM), threads=128) as (bx, by):
            tile = T.alloc_shared((BM, BK), "float32")
            T.im2col(data, tile, by, bx, KSIZE, STRIDE, DILATION, PAD)
            T.copy(tile, col[by * BM, bx * BK])

    return im2col_tiles


def im2col_inputs(rng) -> list[np.ndarray]:
    shape = (N * OH * OW, KSIZE * KSIZE * C)
    return [rng.standard_normal((N, H, W, C)).astype(np.float32), np.full(shape, np.nan, np.float32)]


def im2col_reference(arrays) -> dict[int, np.ndarray]:
    return {1: im2col_matrix(arrays[0])}
