"""Conformance cases: a kernel, fresh random inputs (outputs poisoned), and a float64 NumPy reference.

Most kernels come from kernels.py (written as TileLang users write them) and regressions.py; the rest are
here and in the modules beside it. Each case lists every parameter's array, so outputs can be poisoned
before the run. Case names are stable: tests and `tilecraft backend check` report by them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import ml_dtypes
import numpy as np

import tilecraft.language as T
from tilecraft.testing.conformance import attention_bhsd as AB
from tilecraft.testing.conformance import attention_bshd as AS
from tilecraft.testing.conformance import attention_bwd as BW
from tilecraft.testing.conformance import block_sparse as BS
from tilecraft.testing.conformance import clusters as CL
from tilecraft.testing.conformance import convolution as CV
from tilecraft.testing.conformance import fragment_rows as FR
from tilecraft.testing.conformance import global_layouts as G
from tilecraft.testing.conformance import int8_gemms as I8
from tilecraft.testing.conformance import keep_dim as KD
from tilecraft.testing.conformance import kernels as K
from tilecraft.testing.conformance import per_thread as PR
from tilecraft.testing.conformance import persistent_tiles as PT
from tilecraft.testing.conformance import pipelined_stages as PS
from tilecraft.testing.conformance import register_operands as R
from tilecraft.testing.conformance import regressions as D
from tilecraft.testing.conformance import shared_operands as SO
from tilecraft.testing.conformance import shared_reuse as SR
from tilecraft.testing.conformance import sparse_gemms as SP
from tilecraft.testing.conformance import subbyte as SB
from tilecraft.testing.conformance import tf32 as TF
from tilecraft.testing.conformance import views as V

F16, BF16, F32 = np.float16, ml_dtypes.bfloat16, np.float32
TOL = {F16: 3e-3, BF16: 2e-2, F32: 1e-5}


@dataclass
class Case:
    name: str
    build: Callable
    inputs: Callable[[np.random.Generator], list[np.ndarray]]
    reference: Callable[[list[np.ndarray]], dict[int, np.ndarray]]
    tol: float = 1e-5
    marks: tuple = field(default_factory=tuple)


def randn(rng, shape, dtype=F32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def poison(shape, dtype=F32):
    return np.full(shape, np.nan, dtype=dtype)


def f64(x):
    return np.asarray(x, dtype=np.float64)


# ---------------------------------------------------------------- elementwise and broadcasting


def _elementwise(rng):
    return [randn(rng, 1000), randn(rng, 1000), poison(1000)]


def _cast_scale(n=777, block=128):
    @T.prim_func
    def cast_scale(X: T.Tensor((n,), "float16"), Y: T.Tensor((n,), "float32"), Z: T.Tensor((n,), "bfloat16")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            x = T.alloc_fragment((block,), "float32")
            T.copy(X[bx * block], x)
            for i in T.Parallel(block):
                x[i] = x[i] * 2.0 + 1.0
            T.copy(x, Y[bx * block])
            T.copy(x, Z[bx * block])

    return cast_scale


def int16_fragment(m=80, n=64, bm=32):
    # 16-bit integers through a fragment: on CUDA the runs of a thread's registers are stored as one
    # vector, so a negative value must not spill its sign into the neighbouring element.
    @T.prim_func
    def int16_fragment(X: T.Tensor((m, n), "int16"), Y: T.Tensor((m, n), "int16")):
        with T.Kernel(T.ceildiv(m, bm), threads=128) as bx:
            f = T.alloc_fragment((bm, n), "int16")
            T.copy(X[bx * bm, 0], f)
            for i, j in T.Parallel(bm, n):
                f[i, j] = -f[i, j] - 1
            T.copy(f, Y[bx * bm, 0])

    return int16_fragment


def fp8_token_cast(m=50, n=200, blk_m=8, group=128):
    # TileLang's per_token_cast_to_fp8 with ragged rows and columns: on CUDA the float32 tile is loaded in
    # 16-byte runs and the float8 fragment stored in 4-byte runs; runs past an edge go element by element.
    groups = -(-n // group)

    @T.prim_func
    def fp8_token_cast(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float8_e4m3fn"),
                       S: T.Tensor((m, groups), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(m, blk_m), groups, threads=128) as (bx, by):
            x = T.alloc_fragment((blk_m, group), "float32")
            amax = T.alloc_fragment((blk_m,), "float32")
            s = T.alloc_fragment((blk_m,), "float32")
            q = T.alloc_fragment((blk_m, group), "float8_e4m3fn")
            T.copy(X[bx * blk_m : (bx + 1) * blk_m, by * group : (by + 1) * group], x)
            T.reduce_absmax(x, amax, dim=1)
            for i in T.Parallel(blk_m):
                s[i] = T.max(amax[i], 1e-4) / 448.0
            for i, j in T.Parallel(blk_m, group):
                q[i, j] = T.clamp(x[i, j] / s[i], -448.0, 448.0)
            for i in T.Parallel(blk_m):
                S[bx * blk_m + i, by] = s[i]
            T.copy(q, Y[bx * blk_m : (bx + 1) * blk_m, by * group : (by + 1) * group])

    return fp8_token_cast


def _fp8_token_cast_ref(a, group=128):
    x = f64(a[0])
    m, n = x.shape
    pad = np.zeros((m, -(-n // group) * group))
    pad[:, :n] = x
    scale = np.maximum(np.abs(pad.reshape(m, -1, group)).max(axis=2), 1e-4) / 448.0
    q = np.clip(x / np.repeat(scale, group, axis=1)[:, :n], -448.0, 448.0)
    return {1: f64(q.astype(ml_dtypes.float8_e4m3fn)), 2: scale}


def int8_fragment_runs(m=40, n=88, bm=16, bn=64):
    # 8-bit fragments in runs: rows of 88 bytes allow 8-byte accesses (not 16), and the int8 tile is also
    # loaded into float32 registers, converted from 4-byte loads. Negative values must not spill their
    # sign into the neighbouring bytes of a packed store.
    @T.prim_func
    def int8_fragment_runs(X: T.Tensor((m, n), "int8"), Y: T.Tensor((m, n), "int8"),
                           Z: T.Tensor((m, n), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=64) as (bx, by):
            f = T.alloc_fragment((bm, bn), "int8")
            g = T.alloc_fragment((bm, bn), "float32")
            T.copy(X[by * bm, bx * bn], f)
            T.copy(X[by * bm, bx * bn], g)
            for i, j in T.Parallel(bm, bn):
                f[i, j] = -f[i, j] - 1
                g[i, j] = g[i, j] * 0.5
            T.copy(f, Y[by * bm, bx * bn])
            T.copy(g, Z[by * bm, bx * bn])

    return int8_fragment_runs


def _random_int16(rng, shape):
    return rng.integers(-30000, 30000, size=shape, dtype=np.int16)


def _bias_relu(m=200, n=96, bm=32, bn=32):
    @T.prim_func
    def bias_relu(
        X: T.Tensor((m, n), "float32"), b: T.Tensor((n,), "float32"), Y: T.Tensor((m, n), "float32")
    ):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                r, c = by * bm + i, bx * bn + j
                if r < m and c < n:
                    Y[r, c] = T.max(X[r, c] + b[c], 0.0)

    return bias_relu


def _row_sum(m=300, n=64, bm=32):
    @T.prim_func
    def row_sum(X: T.Tensor((m, n), "float32"), out: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, bm), threads=128) as bx:
            tile = T.alloc_fragment((bm, n), "float32")
            acc = T.alloc_fragment((bm,), "float32")
            T.copy(X[bx * bm, 0], tile)
            T.reduce_sum(tile, acc, dim=1)
            T.copy(acc, out[bx * bm])

    return row_sum


def gemm_16bit_out(m, n, k, dtype):
    # A 16-bit C: on CUDA the accumulator's column pairs are stored as one 32-bit access where the
    # row length allows (even n), element by element otherwise (odd n).
    return K.gemm(m, n, k, 64, 64, 32, dtype=dtype, accum_dtype="float32", out_dtype=dtype)


def _gemm_16bit_case(name, m, n, k, dtype):
    dname = np.dtype(dtype).name
    return Case(name, lambda: gemm_16bit_out(m, n, k, dname),
                lambda r: [randn(r, (m, k), dtype), randn(r, (k, n), dtype), poison((m, n), dtype)],
                lambda a: {2: f64(a[0]) @ f64(a[1])}, TOL[dtype])  # fmt: skip


def _abs_reductions(m=64, n=80):
    @T.prim_func
    def abs_reductions(X: T.Tensor((m, n), "float32"), amax: T.Tensor((m,), "float32"),
                       asum: T.Tensor((m,), "float32"), cmin: T.Tensor((n,), "float32")):  # fmt: skip
        with T.Kernel(1, threads=128) as _:
            tile = T.alloc_fragment((m, n), "float32")
            rows = T.alloc_fragment((m,), "float32")
            cols = T.alloc_fragment((n,), "float32")
            T.copy(X, tile)
            T.reduce_absmax(tile, rows, dim=1)
            T.copy(rows, amax)
            T.reduce_abssum(tile, rows, dim=1)
            T.copy(rows, asum)
            T.reduce_min(tile, cols, dim=0)
            T.copy(cols, cmin)

    return abs_reductions


# ---------------------------------------------------------------- dynamic shapes and several kernels


def dynamic_scale(block=128):
    n = T.dynamic("n")

    @T.prim_func
    def dynamic_scale(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), alpha: T.float32):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Y[bx * block + i] = X[bx * block + i] * alpha

    return dynamic_scale


def _two_kernels(n=1000, block=256):
    @T.prim_func
    def two_kernels(
        X: T.Tensor((n,), "float32"), tmp: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")
    ):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    tmp[bx * block + i] = X[bx * block + i] * X[bx * block + i]
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                j = n - 1 - (bx * block + i)
                if j >= 0:
                    Y[bx * block + i] = tmp[j] + 1.0

    return two_kernels


def _softmax_ref(x):
    e = np.exp(f64(x) - f64(x).max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layer_norm_ref(x, g, b, eps=1e-5):
    x = f64(x)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * f64(g) + f64(b)


def _layer_norm_stats(n=48, d=512, eps=1e-5):
    # One row per block (TileLang's examples/norm/layernorm.py): the row statistics are a fragment
    # that every thread holds, written by a T.Parallel loop that also stores them to global memory.
    # Only one thread may store to Mean/Rstd, but every thread must hold mean_row/rstd_row.
    @T.prim_func
    def layer_norm_stats(
        X: T.Tensor((n, d), "bfloat16"),
        G: T.Tensor((d,), "bfloat16"),
        Y: T.Tensor((n, d), "bfloat16"),
        Mean: T.Tensor((n,), "float32"),
        Rstd: T.Tensor((n,), "float32"),
    ):
        with T.Kernel(n, threads=256) as bx:
            x_smem = T.alloc_shared((1, d), "bfloat16")
            x = T.alloc_fragment((1, d), "float32")
            sq = T.alloc_fragment((1, d), "float32")
            total = T.alloc_fragment((1,), "float32")
            total_sq = T.alloc_fragment((1,), "float32")
            mean_row = T.alloc_fragment((1,), "float32")
            rstd_row = T.alloc_fragment((1,), "float32")
            T.copy(X[bx, 0], x_smem)
            for i, j in T.Parallel(1, d):
                x[i, j] = T.Cast("float32", x_smem[i, j])
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(x, total, dim=1)
            T.reduce_sum(sq, total_sq, dim=1)
            for i in T.Parallel(1):
                mean_row[i] = total[i] / d
                rstd_row[i] = T.rsqrt(total_sq[i] / d - mean_row[i] * mean_row[i] + eps)
                Mean[bx + i] = mean_row[i]
                Rstd[bx + i] = rstd_row[i]
            for i, j in T.Parallel(1, d):
                x_smem[i, j] = (x[i, j] - mean_row[i]) * rstd_row[i] * T.Cast("float32", G[j])
            T.copy(x_smem, Y[bx, 0])

    return layer_norm_stats


def _layer_norm_stats_ref(a):
    x, g = f64(a[0]), f64(a[1])
    mean = x.mean(axis=1)
    rstd = 1 / np.sqrt(x.var(axis=1) + 1e-5)
    return {2: (x - mean[:, None]) * rstd[:, None] * g, 3: mean, 4: rstd}


def _rms_ref(x, w, eps=1e-6):
    x = f64(x)
    return x / np.sqrt((x**2).mean(axis=1, keepdims=True) + eps) * f64(w)


def _attention_ref(q, k, v, causal):
    q, k, v = (f64(t).transpose(0, 2, 1, 3) for t in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3)


def _gemm_case(name, m, n, k, ta=False, tb=False, dtype=F16, bm=64, bn=64, bk=32):
    dname = np.dtype(dtype).name

    def inputs(rng):
        a = randn(rng, (k, m) if ta else (m, k), dtype)
        b = randn(rng, (n, k) if tb else (k, n), dtype)
        return [a, b, poison((m, n))]

    def reference(arrs):
        a, b = f64(arrs[0]), f64(arrs[1])
        return {2: (a.T if ta else a) @ (b.T if tb else b)}

    build = lambda: K.gemm(m, n, k, bm, bn, bk, ta, tb, dname, "float32")  # noqa: E731
    return Case(name, build, inputs, reference, 1e-5 if dtype is F32 else 2e-3)


def _sparse_case(name: str, g, tol: float) -> Case:
    return Case(name, partial(SP.build, g), SP.inputs(g), SP.reference(g), tol)


def _int8_case(name: str, m: int, n: int, k: int, a_dtype: str, b_dtype: str, transpose_b: bool = True) -> Case:
    shape = (m, n, k, a_dtype, b_dtype, transpose_b)
    return Case(name, partial(I8.int8_gemm, *shape), I8.int8_gemm_inputs(*shape),
                I8.int8_gemm_reference(transpose_b), 0.0)  # fmt: skip


def _tf32_case(name, m, n, k, ta, tb, a_dtype=T.tfloat32):
    return Case(name, lambda: TF.gemm_tf32(m, n, k, ta, tb, a_dtype), TF.gemm_tf32_inputs(m, n, k, ta, tb),
                TF.gemm_tf32_reference(ta, tb), TF.TF32_TOL)  # fmt: skip


def _flash_case(causal):
    shape = (1, 128, 2, 64)

    def inputs(rng):
        return [randn(rng, shape, F16) for _ in range(3)] + [poison(shape, F16)]

    return Case(
        f"flash_attention_{'causal' if causal else 'full'}",
        lambda: K.flash_attention(1, 2, 128, 64, causal, 64, 64),
        inputs,
        lambda a: {3: _attention_ref(a[0], a[1], a[2], causal)},
        5e-3,
    )


def _online_softmax_ref(x):
    e = np.exp(f64(x))
    return e / e.sum(1, keepdims=True)


def _collatz_inputs(rng):
    return [rng.integers(1, 5000, size=64).astype(np.int32), np.full(64, -1, np.int32)]


def _walk_tiles_inputs(rng):
    return [randn(rng, 6 * 64), poison(6 * 64), np.array([0, 6], np.int32)]


def _walk_tiles_ref(a):
    return (f64(a).reshape(6, 64)[:, ::-1] * 2).reshape(-1)


def sinks_past_the_fragment(heads=2, bm=16, n=50):
    """TileLang's attention-sink backward examples: `T.alloc_fragment([heads])` filled by a T.Parallel
    loop over the block's `bm` rows (heads < bm) and read in another. It once wrote past the fragment (a
    wrong result on the host processor, a misleading layout error on a GPU); as in TileLang, the loop sizes it now."""

    @T.prim_func
    def sinks_past_the_fragment(
        Sinks: T.Tensor((heads,), "float32"),
        X: T.Tensor((heads, n), "float32"),
        Y: T.Tensor((heads, n), "float32"),
    ):
        with T.Kernel(T.ceildiv(n, bm), heads, threads=128) as (bx, by):
            acc = T.alloc_fragment((bm,), "float32")
            sinks = T.alloc_fragment((heads,), "float32")
            for i in T.Parallel(bm):
                sinks[i] = Sinks[by]
            T.copy(X[by, bx * bm], acc)
            for i in T.Parallel(bm):
                acc[i] = acc[i] * sinks[i] + sinks[i]
            T.copy(acc, Y[by, bx * bm])

    return sinks_past_the_fragment


def _sinks_reference(a):
    s = f64(a[0])[:, None]
    return {2: f64(a[1]) * s + s}


def sinks_past_a_shared_buffer(heads=2, bm=16, n=50):
    """The same loop over a shared buffer: TileLang gives shared memory the declared shape too, so the
    index past it is refused on every target."""

    @T.prim_func
    def sinks_past_a_shared_buffer(
        Sinks: T.Tensor((heads,), "float32"),
        X: T.Tensor((heads, n), "float32"),
        Y: T.Tensor((heads, n), "float32"),
    ):
        with T.Kernel(T.ceildiv(n, bm), heads, threads=128) as (bx, by):
            sinks = T.alloc_shared((heads,), "float32")
            for i in T.Parallel(bm):
                sinks[i] = Sinks[by]
            for i in T.Parallel(bm):
                Y[by, bx * bm + i] = X[by, bx * bm + i] + sinks[i]

    return sinks_past_a_shared_buffer


def _cumsum_ref(x, reverse):
    x = f64(x)
    return np.flip(np.cumsum(np.flip(x, 1), 1), 1) if reverse else np.cumsum(x, 1)


CASES = [
    Case("elementwise_add_ragged", lambda: K.elementwise_add(1000, 256), _elementwise,
         lambda a: {2: f64(a[0]) + f64(a[1])}),
    Case("cast_scale_f16_to_f32_bf16", _cast_scale, lambda r: [randn(r, 777, F16), poison(777), poison(777, BF16)],
         lambda a: {1: f64(a[0]) * 2 + 1, 2: f64(a[0]) * 2 + 1}, 8e-3),
    Case("int16_through_a_fragment", int16_fragment, lambda r: [_random_int16(r, (80, 64)), np.full((80, 64), 7, np.int16)],
         lambda a: {1: -f64(a[0]) - 1}, 0.0),
    Case("fp8_token_cast_ragged", fp8_token_cast,
         lambda r: [randn(r, (50, 200), scale=30.0), poison((50, 200), ml_dtypes.float8_e4m3fn), poison((50, 2))],
         _fp8_token_cast_ref, 1e-2),
    Case("int8_fragment_runs", int8_fragment_runs,
         lambda r: [r.integers(-128, 128, size=(40, 88), dtype=np.int8), np.full((40, 88), 7, np.int8), poison((40, 88))],
         lambda a: {1: -f64(a[0]) - 1, 2: f64(a[0]) * 0.5}, 0.0),
    Case("broadcast_bias_relu", _bias_relu, lambda r: [randn(r, (200, 96)), randn(r, 96), poison((200, 96))],
         lambda a: {2: np.maximum(f64(a[0]) + f64(a[1]), 0)}),
    Case("row_sum_ragged", _row_sum, lambda r: [randn(r, (300, 64)), poison(300)],
         lambda a: {1: f64(a[0]).sum(1)}),
    Case("column_sum", lambda: K.column_sum(512, 256, 64, 64), lambda r: [randn(r, (512, 256)), poison(256)],
         lambda a: {1: f64(a[0]).sum(0)}),
    Case("abs_and_min_reductions", _abs_reductions, lambda r: [randn(r, (64, 80)), poison(64), poison(64), poison(80)],
         lambda a: {1: np.abs(f64(a[0])).max(1), 2: np.abs(f64(a[0])).sum(1), 3: f64(a[0]).min(0)}),
    Case("softmax_f16", lambda: K.softmax(256, 128, 16, "float16"), lambda r: [randn(r, (256, 128), F16), poison((256, 128), F16)],
         lambda a: {1: _softmax_ref(a[0])}, 3e-3),
    Case("layer_norm", lambda: K.layer_norm(256, 128, 8), lambda r: [randn(r, (256, 128)), randn(r, 128), randn(r, 128), poison((256, 128))],
         lambda a: {3: _layer_norm_ref(a[0], a[1], a[2])}, 1e-5),
    Case("layer_norm_row_stats_bf16", _layer_norm_stats,
         lambda r: [randn(r, (48, 512), BF16), randn(r, 512, BF16), poison((48, 512), BF16), poison(48), poison(48)],
         _layer_norm_stats_ref, 1e-2),
    Case("rms_norm_f16", lambda: K.rms_norm(256, 128, 8), lambda r: [randn(r, (256, 128), F16), randn(r, 128, F16), poison((256, 128), F16)],
         lambda a: {2: _rms_ref(a[0], a[1])}, 3e-3),
    _gemm_case("gemm_f32_nn", 256, 192, 128, dtype=F32),
    _gemm_case("gemm_f16_nn", 256, 256, 128),
    _gemm_case("gemm_f16_nt", 128, 192, 96, tb=True),
    _gemm_case("gemm_f16_tn", 128, 128, 64, ta=True),
    _gemm_case("gemm_f16_tt", 128, 64, 96, ta=True, tb=True),
    _gemm_case("gemm_bf16_nn", 192, 128, 128, dtype=BF16),
    _gemm_case("gemm_f32_ragged", 200, 136, 72, dtype=F32),
    _gemm_case("gemm_f16_ragged_nt", 130, 70, 90, tb=True),
    # A long reduction (K >= 512): 32 k tiles; on lavapipe 36,035 loop passes per invocation, inside its
    # 65,535 (docs/webgpu.md).
    _gemm_case("gemm_f16_long_k", 128, 128, 1024),
    _gemm_16bit_case("gemm_bf16_out_ragged", 100, 136, 64, BF16),
    _gemm_16bit_case("gemm_f16_out_odd_n", 96, 77, 64, F16),
    Case("batched_gemm", lambda: K.batched_gemm(3, 128, 128, 64, dtype="float32"),
         lambda r: [randn(r, (3, 128, 64)), randn(r, (3, 64, 128)), poison((3, 128, 128))],
         lambda a: {2: f64(a[0]) @ f64(a[1])}, 1e-5),
    Case("gemv_f16", lambda: K.gemv(256, 512, 32, 64), lambda r: [randn(r, (256, 512), F16), randn(r, 512, F16), poison(256)],
         lambda a: {2: f64(a[0]) @ f64(a[1])}, 1e-5),
    Case("split_k_gemm_atomic", lambda: K.split_k_gemm(128, 128, 256, split_k=4),
         lambda r: [randn(r, (128, 256), F16), randn(r, (256, 128), F16), randn(r, (128, 128))],
         lambda a: {2: f64(a[2]) + f64(a[0]) @ f64(a[1])}, 1e-5),
    Case("transpose_shared", lambda: K.transpose(256, 128, 32), lambda r: [randn(r, (256, 128)), poison((128, 256))],
         lambda a: {1: f64(a[0]).T}),
    _flash_case(causal=False),
    _flash_case(causal=True),
    Case("cumsum", lambda: K.cumsum(128, 64, 32), lambda r: [randn(r, (128, 64)), poison((128, 64))],
         lambda a: {1: _cumsum_ref(a[0], False)}, 1e-5),
    Case("cumsum_reverse", lambda: K.cumsum(128, 64, 32, reverse=True), lambda r: [randn(r, (128, 64)), poison((128, 64))],
         lambda a: {1: _cumsum_ref(a[0], True)}, 1e-5),
    Case("two_kernels_in_order", _two_kernels, lambda r: [randn(r, 1000), poison(1000), poison(1000)],
         lambda a: {1: f64(a[0]) ** 2, 2: (f64(a[0]) ** 2)[::-1] + 1}),
    # Shapes of TileLang's examples that lowering once refused or miscompiled (regressions.py).
    Case("stepped_loops_ragged", D.stepped_loops, D.stepped_loops_inputs, D.stepped_loops_reference),
    Case("element_copies_between_start_indices", D.element_copies, D.element_copies_inputs,
         D.element_copies_reference),
    Case("online_softmax_unit_rows", D.online_softmax, lambda r: [randn(r, (4, 512), F16), poison((4, 512), F16)],
         lambda a: {1: _online_softmax_ref(a[0])}, 3e-3),
    Case("row_vectors_across_a_tile", D.decode_scores,
         lambda r: [randn(r, (64, 32), F16), randn(r, (100, 32), F16), poison((64, 4)), poison(64)],
         lambda a: dict(zip((2, 3), D.decode_reference(a[0], a[1]))), 1e-4),
    Case("fragment_reads_across_threads", D.remote_reads,
         lambda r: [randn(r, (32, 64)), randn(r, (64, 32)), poison((32, 64)), poison((32, 64)), poison(4)],
         lambda a: dict(zip((2, 3, 4), D.remote_reference(a[0], a[1])))),
    Case("fragment_column_blocks_in_a_serial_loop", D.column_block_reads,
         lambda r: [randn(r, (32, 64)), poison((32, 4))], lambda a: {1: D.column_block_reference(a[0])}, 1e-5),
    Case("fragment_wider_than_its_loop", D.sink_logsumexp,
         lambda r: [randn(r, 3), randn(r, (3, 100, 64)), poison((3, 100))],
         lambda a: {2: D.sink_logsumexp_reference(a[0], a[1])}, 1e-5),
    Case("fragment_sized_by_the_parallel_loop", sinks_past_the_fragment,
         lambda r: [randn(r, 2), randn(r, (2, 50)), poison((2, 50))], _sinks_reference),
    Case("parallel_tiles_past_the_edge", D.ragged_gemm_store, D.ragged_gemm_inputs,
         lambda a: {2: D.ragged_gemm_reference(a[0], a[1])}, 1e-5),
    Case("while_data_dependent_trip_counts", D.collatz, _collatz_inputs,
         lambda a: {1: np.array([D.collatz_steps(int(x)) for x in a[0]])}, 0.0),
    Case("while_over_tiles_in_shared_memory", D.walk_tiles, _walk_tiles_inputs,
         lambda a: {1: _walk_tiles_ref(a[0])}),
    # T.annotate_layout on global buffers: storage permuted, every access through the layout.
    Case("global_layout_dq_atomics", G.dq_accumulate, G.dq_inputs, G.dq_reference, 1e-3),
    Case("global_layout_region_ops", G.region_ops, G.region_inputs, G.region_reference),
    # A causal backward pass: a pipelined loop from the diagonal, 1-D lse / Delta slices, dQ by atomics.
    Case("attention_backward_causal_from_the_diagonal", BW.causal_backward, BW.inputs, BW.reference, 1e-2),
    # A register-resident gemm operand copied into every warp of its row block.
    Case("gemm_register_a_from_global", R.fragment_a_from_global, R.moe_inputs, R.moe_reference, 3e-3),
    Case("gemm_register_a_from_accumulator", R.fragment_a_from_accumulator, R.gqa_inputs, R.gqa_reference, 3e-3),
    Case("gemm_head_192_register_a", lambda: R.head_192_gemms(False), R.head_192_inputs,
         R.head_192_reference(False), 3e-3),
    Case("gemm_head_192_with_transposed_dq", lambda: R.head_192_gemms(True), R.head_192_inputs,
         R.head_192_reference(True), 3e-3),
    Case("gemm_float32_register_a_transposed_in_registers", R.float32_fragment_a, R.float32_fragment_a_inputs,
         R.float32_fragment_a_reference, 1e-5),
    Case("gemm_tf32_register_a_accumulating", R.tf32_fragment_a_accumulating, R.tf32_fragment_a_inputs,
         R.tf32_fragment_a_reference, TF.TF32_TOL),
    # TF32 gemms of shared tiles (T.tfloat32 operands): ragged M and N, every transpose pair, and a
    # float32 A with a tfloat32 B (TF32 too: one tfloat32 operand asks for it)
    Case("gemm_tf32_register_a_with_row_sums", R.tf32_gemm_with_row_sums, R.tf32_gemm_with_row_sums_inputs,
         R.tf32_gemm_with_row_sums_reference, TF.TF32_TOL),
    _tf32_case("gemm_tf32_nt_ragged", 200, 136, 96, False, True),
    _tf32_case("gemm_tf32_nn", 128, 128, 64, False, False),
    _tf32_case("gemm_tf32_tn_ragged", 130, 64, 96, True, False),
    _tf32_case("gemm_tf32_tt", 64, 192, 128, True, True),
    _tf32_case("gemm_tf32_mixed_float32_a", 96, 64, 160, False, True, a_dtype=T.float32),
    # 8-bit integer gemms into int32 (exact): K-major tiles with ragged M and N, unsigned ones, a
    # B stored (K, N), and A unpacked from 4-bit codes into a register fragment (TileLang's w4a8)
    _int8_case("gemm_int8_nt_ragged", 200, 136, 192, "int8", "int8"),
    _int8_case("gemm_uint8_nt", 64, 128, 128, "uint8", "uint8"),
    _int8_case("gemm_int8_nn", 96, 64, 128, "int8", "int8", transpose_b=False),
    Case("gemm_w4a8_register_a", I8.w4a8_gemm, I8.w4a8_inputs, I8.w4a8_reference, 0.0),
    # T.gemm_sp: 2:4-compressed A expanded to its dense tile; ragged M, N and K, A_sparse and E K-major,
    # A_sparse read from a register fragment
    _sparse_case("gemm_sp_float16_k_major_register_a_ragged", SP.SparseGemm(100, 72, 96, 64, 32, 64,
                 transpose_a=True, register_a=True), TOL[F16]),  # fmt: skip
    # Reductions whose result keeps the reduced dim as extent 1.
    Case("reduce_keep_dim_rows_and_columns", KD.rows_and_columns, KD.rows_and_columns_inputs,
         KD.rows_and_columns_reference),
    Case("reduce_keep_dim_whole_tile_accumulated", KD.whole_tile_accumulated, KD.whole_tile_inputs,
         KD.whole_tile_reference),
    Case("copy_row_of_a_fragment_by_loop_index", FR.row_of_a_fragment, FR.row_inputs, FR.row_reference),
    Case("copy_row_of_a_fragment_by_loop_index_16_splits", partial(FR.row_of_a_fragment, 16),
         partial(FR.row_inputs, splits=16), FR.row_reference),
    Case("shared_tile_read_by_a_128_row_and_a_32_row_gemm", SO.k_shared_by_two_gemms, SO.inputs, SO.reference,
         2e-3),
    Case("shared_tiles_reused_after_the_loop", SR.gemm_with_shared_epilogue, SR.inputs, SR.reference, 2e-3),
    Case("power_of_two_scale_through_bits", D.power_of_two_scale, lambda r: [randn(r, (70, 96), scale=3.0),
         poison((70, 96)), poison(70)], D.power_of_two_scale_reference, 0.0),
    Case("convolution_im2col_and_views", CV.conv2d, CV.conv_inputs, CV.conv_reference, TOL[F16]),
    Case("convolution_fragment_into_an_output_view", CV.conv2d_fragment_out, CV.conv_inputs, CV.conv_reference,
         TOL[F16]),
    Case("im2col_tiles_stride_dilation_padding", CV.im2col_tiles, CV.im2col_inputs, CV.im2col_reference, 0.0),
    # 16 and 24 channels: the image tile is gathered in 16-byte chunks (cp.async on CUDA, 3 stages)
    Case("convolution_16_byte_gathers", CV.conv2d_wide, partial(CV.conv_inputs, g=CV.WIDE),
         partial(CV.conv_reference, g=CV.WIDE), TOL[F16]),
    Case("convolution_16_byte_gathers_strided", CV.conv2d_wide_strided, partial(CV.conv_inputs, g=CV.WIDE_STRIDED),
         partial(CV.conv_reference, g=CV.WIDE_STRIDED), TOL[F16]),
    # float4_e2m1fn with e8m0 block scales and int4, packed two a byte, and back (bytes compared exactly)
    Case("mx_quantize_float4_int4_packed", SB.mx_quantize, SB.mx_inputs(), SB.mx_reference(), 0.0),
    Case("views_alias_their_base", V.views_alias_their_base, V.alias_inputs, V.alias_reference),
    Case("staged_tile_copied_out_in_the_loop", PS.copy_through_stages, PS.inputs, PS.reference, 0.0),
    Case("two_copies_into_one_tile_per_iteration", PS.two_copies_per_tile, PS.gemm_inputs, PS.gemm_reference,
         2e-3),
    Case("accumulator_promoted_every_other_tile", PS.promoted_accumulator, PS.promoted_inputs,
         PS.promoted_reference, 2e-3),
    Case("persistent_gemm_in_waves", PT.persistent_gemm, PT.inputs, PT.reference, 2e-3),
    Case("persistent_gemm_staged_through_shared", PT.persistent_gemm_staged, PT.staged_inputs, PT.reference,
         TOL[F16]),
    Case("persistent_gemm_staged_in_column_blocks", PT.persistent_gemm_in_column_blocks, PT.big_inputs,
         PT.reference, TOL[F16]),
    # Thread-block clusters: TMA multicast of the shared tile on sm_90a, a plain grid elsewhere.
    Case("gemm_in_clusters_sharing_a", CL.sharing_a, CL.inputs(False), CL.reference(False), 2e-3),
    Case("gemm_in_clusters_sharing_b", CL.sharing_b, CL.inputs(True), CL.reference(True), 2e-3),
    # Flash attention whose pipelined loop is warp-specialized on sm_90a (softmax between TMA-fed gemms).
    *(Case(f"flash_attention_bhsd_{name}", AB.build(name), AB.inputs(name), AB.reference(name), 5e-3)
      for name in AB.CONFIGS),
    # TileLang's bshd layout: K[b, rows, h, :] is a TMA box of a 4-D map on sm_90a (a 3-D one when packed).
    *(Case(f"flash_attention_bshd_{name}", AS.build(name), AS.inputs(name), AS.reference(name), 5e-3)
      for name in AS.CONFIGS),
    # A pipelined loop under a mask read from global memory: on sm_90a its ring counts the taken iterations.
    *(Case(f"blocksparse_gemm_{name}", BS.build_gemm(name), BS.gemm_inputs(name), BS.gemm_reference(name),
           TOL[F16]) for name in BS.GEMM_CONFIGS),
    # Per-thread code (TileLang's gemv example): two-dim thread blocks, barriers the compiler places,
    # per-thread atomics, TVM's thread all-reduce, reducers.
    Case("per_thread_gemv_shared_tiles", PR.naive_gemv, PR.inputs, PR.reference, 1e-5),
    Case("per_thread_gemv_2d_block_shared_atomics", PR.splitk_gemv, PR.inputs, PR.reference, 1e-5),
    Case("per_thread_gemv_thread_allreduce", PR.allreduce_gemv, PR.inputs, PR.reference, 1e-5),
    Case("per_thread_gemv_thread_allreduce_across_warps", lambda: PR.allreduce_gemv(4, 16), PR.inputs,
         PR.reference, 1e-5),
    Case("per_thread_thread_allreduce_max", lambda: PR.allreduce_gemv(8, 8, "max"), PR.inputs,
         PR.allreduce_max_reference, 1e-6),
    # blocks smaller than a warp, and of 24 threads: per-thread code alone runs on any block size
    Case("per_thread_thread_allreduce_8_threads", lambda: PR.allreduce_gemv(2, 4), PR.inputs, PR.reference, 1e-5),
    Case("per_thread_gemv_24_threads_shared_atomics", lambda: PR.splitk_gemv(4, 6), PR.inputs, PR.reference,
         1e-5),
    Case("per_thread_vectorized_runs_gemv", PR.vectorized_gemv, PR.vectorized_inputs, PR.vectorized_reference,
         1e-5),
    # float16 accumulation of float16 products (one fma.rn.f16 per step on CUDA): float16's own error
    Case("per_thread_float16_accumulator_gemv", PR.float16_accumulator_gemv, PR.float16_accumulator_inputs,
         PR.reference, 2e-2),
    Case("per_thread_vectorized_runs_into_an_operand_tile", PR.vectorized_operand_stores,
         PR.operand_stores_inputs, PR.operand_stores_reference, 3e-3),
    Case("per_thread_local_arrays_through_tile_ops", PR.local_tiles, PR.local_inputs, PR.local_reference),
    Case("reducer_gemv_pipelined", PR.reducer_gemv, PR.inputs, PR.reference, 1e-5),
    Case("reducers_over_short_loops", PR.reducer_short_loops, PR.short_inputs, PR.short_reference, 1e-5),
    Case("running_logsumexp_in_place_fragment_updates", PR.running_logsumexp, PR.lse_inputs, PR.lse_reference,
         1e-5),
    Case("blocksparse_attention_bhsd", BS.attention, BS.attention_inputs, BS.attention_reference, 5e-3),
    Case("selected_blocks_attention_bhsd", BS.selected_attention, BS.selected_inputs, BS.selected_reference, 5e-3),
]  # fmt: skip

DYNAMIC_SIZES = (1000, 4097, 5)
