"""The conformance suite: the kit's kernels (tilecraft.testing.conformance) on every available backend,
against float64 NumPy.

A kernel that fails to lower is skipped only for a limit its backend declares (the manifest's
`unsupported`); any other error fails. `TILECRAFT_CONFORMANCE_PASS_CONFIGS` (a JSON object) adds pass
configs to every kernel, so the suite also runs with a code path switched off:
`{"tl.disable_tma_lower": true}`, `{"tl.disable_wgmma": true}`.
"""

from __future__ import annotations

import json
import os

import pytest

from tilecraft.testing.conformance import CASES, CHECKS, Unsupported, check_case, compile_kernel, rel_error

__all__ = ["compile_or_skip", "rel_error"]

PASS_CONFIGS = json.loads(os.environ.get("TILECRAFT_CONFORMANCE_PASS_CONFIGS") or "{}")


def compile_or_skip(func, ctx, **kwargs):
    """Compile with the suite's pass configs; a declared limit is the skip reason, any other error fails."""
    if PASS_CONFIGS:
        kwargs["pass_configs"] = {**PASS_CONFIGS, **kwargs.get("pass_configs", {})}
    try:
        return compile_kernel(func, ctx, **kwargs)
    except Unsupported as limit:
        pytest.skip(str(limit))


def skipping_declared_limits(check, *args) -> None:
    try:
        check(*args)
    except Unsupported as limit:
        pytest.skip(str(limit))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case, backend_ctx):
    skipping_declared_limits(check_case, case, backend_ctx, PASS_CONFIGS)


def test_dynamic_shapes_bind_per_call(backend_ctx):
    """One compiled kernel serves every size of its dynamic dim."""
    skipping_declared_limits(CHECKS["dynamic_shapes_bind_per_call"], backend_ctx)


def test_eager_style_outputs(backend_ctx):
    """The eager style: T.const symbols bound from shapes, T.empty outputs returned."""
    skipping_declared_limits(CHECKS["eager_style_outputs"], backend_ctx)


def test_convolution_in_the_eager_style(backend_ctx):
    """TileLang's example_convolution.py kernel as written (T.const sizes, views, T.empty output)."""
    skipping_declared_limits(CHECKS["convolution_in_the_eager_style"], backend_ctx)


def test_shared_buffer_indexed_past_its_shape_is_a_located_error(backend_ctx):
    """A shared buffer indexed past its shape by a T.Parallel loop is refused with the line."""
    skipping_declared_limits(CHECKS["shared_buffer_indexed_past_its_shape_is_a_located_error"], backend_ctx)
