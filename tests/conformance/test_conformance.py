"""The conformance suite: the same kernels on every available backend, against float64 NumPy.

`TILECRAFT_CONFORMANCE_PASS_CONFIGS` (a JSON object) adds pass configs to every kernel, so the suite
also runs with a code path switched off: `{"tl.disable_tma_lower": true}`, `{"tl.disable_wgmma": true}`.
"""

from __future__ import annotations

import json
import os
import zlib

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.conformance.cases import CASES, DYNAMIC_SIZES, f64, poison, randn, sinks_past_a_shared_buffer
from tilecraft.errors import LoweringError, SemanticError


def rel_error(out, ref) -> float:
    out = np.asarray(out, dtype=np.float64)
    if np.isnan(out).any():
        return float("inf")
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


PASS_CONFIGS = json.loads(os.environ.get("TILECRAFT_CONFORMANCE_PASS_CONFIGS") or "{}")


def compile_or_skip(func, ctx, **kwargs):
    """Unsupported features fail at lowering with an explicit error; that error is the skip reason."""
    if PASS_CONFIGS:
        kwargs["pass_configs"] = {**PASS_CONFIGS, **kwargs.get("pass_configs", {})}
    try:
        return tilecraft.compile(func, ctx=ctx, **kwargs)
    except LoweringError as err:
        pytest.skip(f"not supported on {ctx.target}: {err.message}")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case, backend_ctx):
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    kernel = compile_or_skip(case.build(), backend_ctx)
    backend = backend_ctx.execution_backend()
    arrays = case.inputs(rng)
    expected = case.reference([a.copy() for a in arrays])
    device = [backend.to_device(a) for a in arrays]
    kernel(*device)
    for index, ref in expected.items():
        out = backend.to_host(device[index])
        err = rel_error(out, ref)
        assert err <= case.tol, f"{case.name}: output {index} relative error {err:.3e} > {case.tol:.1e}"


def test_dynamic_shapes_bind_per_call(backend_ctx):
    """One compiled kernel serves every size of its dynamic dim."""
    from tests.conformance.cases import _dynamic_scale

    kernel = compile_or_skip(_dynamic_scale(), backend_ctx)
    backend = backend_ctx.execution_backend()
    rng = np.random.default_rng(7)
    for n in DYNAMIC_SIZES:
        x, y = randn(rng, n), poison(n)
        dx, dy = backend.to_device(x), backend.to_device(y)
        kernel(dx, dy, 1.5)
        assert rel_error(backend.to_host(dy), f64(x) * 1.5) <= 1e-6


def test_eager_style_outputs(backend_ctx):
    """The eager style: T.const symbols bound from shapes, T.empty outputs returned."""
    target, execution = backend_ctx.target, backend_ctx.execution.name

    @tilecraft.jit(target=target, execution_backend=execution)
    def scaled_add(A, B, alpha: float = 2.0, block: int = 64):
        n = T.const("n")
        A: T.Tensor((n,), "float32")
        B: T.Tensor((n,), "float32")
        C = T.empty((n,), "float32")
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    C[bx * block + i] = A[bx * block + i] * alpha + B[bx * block + i]
        return C

    backend = backend_ctx.execution_backend()
    rng = np.random.default_rng(3)
    a, b = randn(rng, 300), randn(rng, 300)
    try:
        c = scaled_add(backend.to_device(a), backend.to_device(b))
    except LoweringError as err:
        pytest.skip(f"not supported on {target}: {err.message}")
    assert rel_error(backend.to_host(c), f64(a) * 2 + f64(b)) <= 1e-6


def test_convolution_in_the_eager_style(backend_ctx):
    """TileLang's example_convolution.py kernel as written: T.const sizes, OH and OW bound before the
    T.empty output, views of the weights and of that output, bound by the call (ragged for the tiles)."""
    from tests.conformance import convolution as CV

    target, execution = backend_ctx.target, backend_ctx.execution.name

    @tilecraft.jit(target=target, execution_backend=execution)
    def convolution(data, kernel, S, D, P, block_M, block_N, block_K, num_stages, threads):
        N, C, H, W, F, K = T.const("N, C, H, W, F, K")
        KH, KW = K, K
        OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
        OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
        dtype, accum_dtype = T.float16, T.float32
        data: T.Tensor((N, H, W, C), dtype)
        kernel: T.Tensor((KH, KW, C, F), dtype)
        out = T.empty((N, OH, OW, F), dtype)
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M), threads=threads) as (bx, by):
            data_shared = T.alloc_shared((block_M, block_K), dtype)
            kernel_shared = T.alloc_shared((block_K, block_N), dtype)
            out_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            out_shared = T.alloc_shared((block_M, block_N), dtype)
            kernel_flat = T.Tensor((KH * KW * C, F), dtype, kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), dtype, out.data)
            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=num_stages):
                T.im2col(data, data_shared, by, k_iter, KH, S, D, P)
                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)
            T.copy(out_local, out_shared)
            T.copy(out_shared, out_flat[by * block_M, bx * block_N])
        return out

    backend = backend_ctx.execution_backend()
    arrays = CV.conv_inputs(np.random.default_rng(11))
    expected = CV.conv_reference(arrays)[2]
    args = (CV.STRIDE, CV.DILATION, CV.PAD, CV.BM, CV.BN, CV.BK, 2, 128)
    try:
        out = convolution(*(backend.to_device(a) for a in arrays[:2]), *args)
    except LoweringError as err:
        pytest.skip(f"not supported on {target}: {err.message}")
    assert rel_error(backend.to_host(out), expected) <= 3e-3


def test_shared_buffer_indexed_past_its_shape_is_a_located_error(backend_ctx):
    """A T.Parallel loop that carries a shared buffer's index past its shape is refused, with the line,
    before any target lowers it (only fragments are sized from their loops, as in TileLang)."""
    with pytest.raises(SemanticError) as info:
        tilecraft.compile(sinks_past_a_shared_buffer(), ctx=backend_ctx)
    assert "shared buffer sinks of shape (2,)" in info.value.message
    assert "index i runs over 0..15" in info.value.message
    assert info.value.span is not None and info.value.span.file.endswith("cases.py")
