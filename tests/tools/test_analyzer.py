"""tilecraft.tools.Analyzer counts a kernel's FLOPs and global bytes from its tile IR (TileLang's tool)."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.carver.arch import CDNA, CUDA
from tilecraft.errors import KernelError, TilecraftError
from tilecraft.tools import Analyzer


@tilecraft.jit(out_idx=[3], target="c")
def gemm_bias(M, N, K, bm=32, bn=32, bk=16):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((N, K), "float16"),
        bias: T.Tensor((N,), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bn, bk), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[bx * bn, k * bk], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            for i, j in T.Parallel(bm, bn):
                C[by * bm + i, bx * bn + j] = acc[i, j] + bias[bx * bn + j]

    return main


def test_gemm_counts():
    """FLOPs 2MNK; bytes: A and B tiles per k step per block, one bias load and one C store per element."""
    M, N, K, bm, bn, bk = 256, 128, 64, 32, 32, 16
    result = Analyzer.analysis(gemm_bias.get_tir(M, N, K), CUDA("cuda -arch=sm_90a"))
    blocks, steps = (M // bm) * (N // bn), K // bk
    tiles = blocks * steps * (bm * bk + bn * bk) * 2
    epilogue = blocks * bm * bn * (4 + 4)
    assert result.total_flops == 2 * M * N * K
    assert result.total_global_bytes == tiles + epilogue
    assert result.expected_bandwidth_GBps == 3350.0 and result.expected_tflops == 989.4
    memory = result.total_global_bytes / 3350e9
    assert result.estimated_time == pytest.approx(max(memory, 2 * M * N * K / 989.4e12))


@tilecraft.jit(out_idx=[2], target="c")
def conv_nhwc(n, h, w, c, f, kh, kw, bw=8, bf=16, bc=16):
    """Stride 1, no padding: out[b, y, x, o] = sum data[b, y + i, x + j, ch] * weight[i, j, ch, o]."""
    oh, ow = h - kh + 1, w - kw + 1

    @T.prim_func
    def main(
        data: T.Tensor((n, h, w, c), "float32"),
        weight: T.Tensor((kh, kw, c, f), "float32"),
        out: T.Tensor((n, oh, ow, f), "float32"),
    ):
        with T.Kernel(T.ceildiv(f, bf), T.ceildiv(ow, bw), n * oh, threads=128) as (bx, by, bz):
            d_s = T.alloc_shared((bw, bc), "float32")
            w_s = T.alloc_shared((bc, bf), "float32")
            acc = T.alloc_fragment((bw, bf), "float32")
            T.clear(acc)
            for i in T.serial(kh):
                for j in T.serial(kw):
                    for cc in T.serial(T.ceildiv(c, bc)):
                        T.copy(data[bz // oh, bz % oh + i, by * bw + j, cc * bc], d_s)
                        T.copy(weight[i, j, cc * bc, bx * bf], w_s)
                        T.gemm(d_s, w_s, acc)
            T.copy(acc, out[bz // oh, bz % oh, by * bw, bx * bf])

    return main


def test_conv_is_a_convolution():
    rng = np.random.default_rng(0)
    shape = (2, 7, 11, 32, 32, 3, 2)
    n, h, w, c, f, kh, kw = shape
    data = rng.standard_normal((n, h, w, c)).astype(np.float32)
    weight = rng.standard_normal((kh, kw, c, f)).astype(np.float32)
    out = conv_nhwc(*shape)(data, weight)
    windows = np.lib.stride_tricks.sliding_window_view(data.astype(np.float64), (kh, kw), axis=(1, 2))
    ref = np.einsum("byxcij,ijco->byxo", windows, weight.astype(np.float64))
    assert np.abs(out - ref).max() / np.abs(ref).max() < 1e-5


def test_conv_counts():
    """Per block and (kh, kw, channel chunk): a data tile and a weight tile; then one output tile."""
    n, h, w, c, f, kh, kw, bw, bf, bc = 2, 18, 34, 64, 64, 3, 3, 8, 16, 16
    oh, ow = h - kh + 1, w - kw + 1
    result = Analyzer.analysis(conv_nhwc.get_tir(n, h, w, c, f, kh, kw), CUDA("cuda -arch=sm_80"))
    blocks = (f // bf) * (ow // bw) * n * oh
    steps = kh * kw * (c // bc)
    assert result.total_flops == 2 * n * oh * ow * f * kh * kw * c
    assert result.total_global_bytes == blocks * (steps * (bw * bc + bc * bf) + bw * bf) * 4
    assert result.expected_tflops == 311.9 and result.expected_bandwidth_GBps == 2039.0


@tilecraft.jit(target="c")
def output_rows(data, S, P, bm=64, bn=32):
    """The output sized as TileLang's convolution example sizes it: names bound before the kernel."""
    N, H, W, F, K = T.const("N, H, W, F, K")
    OH = (H + 2 * P - K) // S + 1
    OW = (W + 2 * P - K) // S + 1
    data: T.Tensor((N, H, W, F), "float16")
    out = T.empty((N, OH, OW, F), "float16")
    with T.Kernel(T.ceildiv(F, bn), T.ceildiv(N * OH * OW, bm), threads=128) as (bx, by):
        tile = T.alloc_shared((bm, bn), "float16")
        data_flat = T.Tensor((N * H * W, F), "float16", data.data)
        out_flat = T.Tensor((N * OH * OW, F), "float16", out.data)
        T.copy(data_flat[by * bm, bx * bn], tile)
        T.copy(tile, out_flat[by * bm, bx * bn])
    return out


def test_sizes_named_before_the_kernel_are_static():
    """`OH = ...` bound before T.Kernel sizes its grid: once the T.const symbols are given, the grid is
    static. Each block reads and writes one float16 tile."""
    n, h, w, f = 2, 15, 16, 64
    func = output_rows.get_tir(N=n, H=h, W=w, F=f, K=3, S=1, P=1)
    result = Analyzer.analysis(func, CUDA("cuda -arch=sm_80"))
    blocks = (f // 32) * -(-(n * h * w) // 64)
    assert result.total_global_bytes == blocks * 64 * 32 * 2 * 2


def test_symbolic_sizes_are_an_error():
    @T.prim_func
    def copy(A: T.Tensor((T.dynamic("m"), 16), "float32"), B: T.Tensor((T.dynamic("m"), 16), "float32")):
        with T.Kernel(T.ceildiv(A.shape[0], 16), threads=32) as bx:
            T.copy(A[bx * 16 : bx * 16 + 16, :], B[bx * 16, 0])

    with pytest.raises(KernelError, match="static sizes"):
        Analyzer.analysis(copy, CUDA("cuda -arch=sm_90a"))


def test_device_models():
    assert CUDA("cuda -arch=sm_90a -sm_count=66").peak_tflops == pytest.approx(989.4 / 2, abs=0.1)
    unknown = CUDA("cuda -arch=sm_120")
    assert unknown.compute_capability == "120" and unknown.peak_tflops is None
    with pytest.raises(TilecraftError, match="memory_bandwidth_GBps"):
        Analyzer.analysis(gemm_bias.get_tir(64, 64, 64), unknown)
    mi300 = CDNA("hip -mcpu=gfx942")
    assert mi300.compute_max_core == 304 and mi300.memory_bandwidth_GBps == 5300.0
    with pytest.raises(TilecraftError, match="name the processor"):
        CDNA("hip")
