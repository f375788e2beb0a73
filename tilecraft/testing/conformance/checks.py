"""Conformance checks that are more than one kernel and its reference: a dynamic dim bound per call, the
eager style (`T.const` sizes, `T.empty` outputs), and an error that must be located in the kernel.

Each check takes a backend context and raises on failure (`Unsupported` for a limit the backend
declares), as `runner.check_case` does; `CHECKS` lists them by name.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import tilecraft
import tilecraft.language as T
from tilecraft.errors import LoweringError, SemanticError
from tilecraft.testing.conformance import convolution as CV
from tilecraft.testing.conformance.cases import (
    DYNAMIC_SIZES,
    dynamic_scale,
    f64,
    poison,
    randn,
    sinks_past_a_shared_buffer,
)
from tilecraft.testing.conformance.runner import compile_kernel, declared, expect, within


def dynamic_shapes_bind_per_call(ctx) -> None:
    """One compiled kernel serves every size of its dynamic dim."""
    kernel = compile_kernel(dynamic_scale(), ctx)
    backend = ctx.execution_backend()
    rng = np.random.default_rng(7)
    for n in DYNAMIC_SIZES:
        x, y = randn(rng, n), poison(n)
        dx, dy = backend.to_device(x), backend.to_device(y)
        kernel(dx, dy, 1.5)
        within(backend.to_host(dy), f64(x) * 1.5, 1e-6, f"n={n}")


def eager_style_outputs(ctx) -> None:
    """The eager style: T.const symbols bound from shapes, T.empty outputs returned."""

    @tilecraft.jit(target=ctx.target, execution_backend=ctx.execution.name)
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

    backend = ctx.execution_backend()
    rng = np.random.default_rng(3)
    a, b = randn(rng, 300), randn(rng, 300)
    try:
        c = scaled_add(backend.to_device(a), backend.to_device(b))
    except LoweringError as err:
        raise declared(err, ctx) from err
    within(backend.to_host(c), f64(a) * 2 + f64(b), 1e-6, "C")


def convolution_in_the_eager_style(ctx) -> None:
    """TileLang's example_convolution.py kernel as written: T.const sizes, OH and OW bound before the
    T.empty output, views of the weights and of that output, bound by the call (ragged for the tiles)."""

    @tilecraft.jit(target=ctx.target, execution_backend=ctx.execution.name)
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

    backend = ctx.execution_backend()
    arrays = CV.conv_inputs(np.random.default_rng(11))
    expected = CV.conv_reference(arrays)[2]
    g = CV.NARROW
    args = (g.stride, g.dilation, g.pad, g.bm, g.bn, g.bk, 2, 128)
    try:
        out = convolution(*(backend.to_device(a) for a in arrays[:2]), *args)
    except LoweringError as err:
        raise declared(err, ctx) from err
    within(backend.to_host(out), expected, 3e-3, "out")


def shared_buffer_indexed_past_its_shape_is_a_located_error(ctx) -> None:
    """A T.Parallel loop that carries a shared buffer's index past its shape is refused, with the line,
    before any target lowers it (only fragments are sized from their loops, as in TileLang)."""
    try:
        tilecraft.compile(sinks_past_a_shared_buffer(), ctx=ctx)
    except SemanticError as err:
        expect("shared buffer sinks of shape (2,)" in err.message, err.message)
        expect("index i runs over 0..15" in err.message, err.message)
        expect(err.span is not None and err.span.file.endswith("cases.py"), f"located at {err.span}")
        return
    raise AssertionError("the kernel compiled; a SemanticError naming the shared buffer was expected")


CHECKS: dict[str, Callable[..., None]] = {
    "dynamic_shapes_bind_per_call": dynamic_shapes_bind_per_call,
    "eager_style_outputs": eager_style_outputs,
    "convolution_in_the_eager_style": convolution_in_the_eager_style,
    "shared_buffer_indexed_past_its_shape_is_a_located_error": shared_buffer_indexed_past_its_shape_is_a_located_error,
}
