"""Convolution as TileLang's examples write it (examples/convolution/example_convolution.py): `T.im2col`
fills the image tile, the weights and the output are read and written through `T.Tensor(shape, dtype,
X.data)` views. The sizes are ragged for the tiles (N * OH * OW, KH * KW * C and F are no multiples of
block_M, block_K and block_N), with stride 2, dilation 2 and padding 1, so every edge and every
padding case is taken. `WIDE` has 16 channels, so a thread's run of 8 columns is one 16-byte chunk of
the image (a GPU backend may gather it asynchronously, staged over 3 stages), with its own ragged sizes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import tilecraft.language as T


@dataclass(frozen=True)
class Geometry:
    n: int
    c: int
    h: int
    w: int
    f: int
    ksize: int
    stride: int
    dilation: int
    pad: int
    bm: int = 64
    bn: int = 32
    bk: int = 32
    stages: int = 2

    @property
    def oh(self) -> int:
        return (self.h + 2 * self.pad - self.dilation * (self.ksize - 1) - 1) // self.stride + 1

    @property
    def ow(self) -> int:
        return (self.w + 2 * self.pad - self.dilation * (self.ksize - 1) - 1) // self.stride + 1


NARROW = Geometry(n=3, c=6, h=13, w=11, f=40, ksize=3, stride=2, dilation=2, pad=1)  # N*OH*OW 90, K 54
WIDE = Geometry(n=2, c=16, h=9, w=7, f=40, ksize=3, stride=1, dilation=1, pad=1, stages=3)  # 126, 144
WIDE_STRIDED = Geometry(n=2, c=24, h=12, w=9, f=24, ksize=3, stride=2, dilation=2, pad=2, stages=3)  # 60, 216


def conv2d(out_through_shared: bool = True, g: Geometry = NARROW):
    """The example's kernel; `out_through_shared=False` stores the accumulator straight into the output
    view, as example_convolution_autotune.py does off Hopper."""
    dtype, accum_dtype = "float16", "float32"
    N, C, H, W, F, KH, KW = g.n, g.c, g.h, g.w, g.f, g.ksize, g.ksize
    OH, OW, BM, BN, BK = g.oh, g.ow, g.bm, g.bn, g.bk

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
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, BK), num_stages=g.stages):
                T.im2col(data, data_shared, by, k_iter, KH, g.stride, g.dilation, g.pad)
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


def conv2d_wide():
    return conv2d(g=WIDE)


def conv2d_wide_strided():
    return conv2d(g=WIDE_STRIDED)


def conv_inputs(rng, g: Geometry = NARROW) -> list[np.ndarray]:
    return [rng.standard_normal((g.n, g.h, g.w, g.c)).astype(np.float16),
            rng.standard_normal((g.ksize, g.ksize, g.c, g.f)).astype(np.float16),
            np.full((g.n, g.oh, g.ow, g.f), np.nan, np.float16)]  # fmt: skip


def im2col_matrix(x: np.ndarray, g: Geometry = NARROW) -> np.ndarray:
    """The (N * OH * OW, KH * KW * C) im2col matrix of the NHWC image `x`, in float64."""
    p, s = g.pad, g.stride
    padded = np.pad(np.asarray(x, np.float64), ((0, 0), (p, p), (p, p), (0, 0)))
    cols = np.empty((g.n, g.oh, g.ow, g.ksize, g.ksize, g.c))
    for kh in range(g.ksize):
        for kw in range(g.ksize):
            h, w = kh * g.dilation, kw * g.dilation
            cols[:, :, :, kh, kw, :] = padded[
                :, h : h + s * (g.oh - 1) + 1 : s, w : w + s * (g.ow - 1) + 1 : s, :
            ]
    return cols.reshape(g.n * g.oh * g.ow, g.ksize * g.ksize * g.c)


def conv_reference(arrays, g: Geometry = NARROW) -> dict[int, np.ndarray]:
    weights = np.asarray(arrays[1], np.float64).reshape(g.ksize * g.ksize * g.c, g.f)
    return {2: (im2col_matrix(arrays[0], g) @ weights).reshape(g.n, g.oh, g.ow, g.f)}


def im2col_tiles():
    """T.im2col alone: each tile of the im2col matrix copied out, so every value (padding zeros, the
    order kh, kw, c of the columns, the rows past the output) is compared, not only their products."""
    g = NARROW
    rows, cols = g.n * g.oh * g.ow, g.ksize * g.ksize * g.c
    BM, BK = g.bm, g.bk

    @T.prim_func
    def im2col_tiles(data: T.Tensor((g.n, g.h, g.w, g.c), "float32"), col: T.Tensor((rows, cols), "float32")):
        with T.Kernel(T.ceildiv(cols, BK), T.ceildiv(rows, BM), threads=128) as (bx, by):
            tile = T.alloc_shared((BM, BK), "float32")
            T.im2col(data, tile, by, bx, g.ksize, g.stride, g.dilation, g.pad)
            T.copy(tile, col[by * BM, bx * BK])

    return im2col_tiles


def im2col_inputs(rng) -> list[np.ndarray]:
    g = NARROW
    shape = (g.n * g.oh * g.ow, g.ksize * g.ksize * g.c)
    return [rng.standard_normal((g.n, g.h, g.w, g.c)).astype(np.float32), np.full(shape, np.nan, np.float32)]


def im2col_reference(arrays) -> dict[int, np.ndarray]:
    return {1: im2col_matrix(arrays[0])}
