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


def test_shared_buffer_indexed_past_its_shape_is_a_located_error(backend_ctx):
    """A T.Parallel loop that carries a shared buffer's index past its shape is refused, with the line,
    before any target lowers it (only fragments are sized from their loops, as in TileLang)."""
    with pytest.raises(SemanticError) as info:
        tilecraft.compile(sinks_past_a_shared_buffer(), ctx=backend_ctx)
    assert "shared buffer sinks of shape (2,)" in info.value.message
    assert "index i runs over 0..15" in info.value.message
    assert info.value.span is not None and info.value.span.file.endswith("cases.py")
