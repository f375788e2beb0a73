"""One attention forward, three texts, one kernel: what the sm_90a path decides (producer warpgroup,
register split, gemm instructions, TMA loads, the gemm-softmax overlap) follows from what the kernel
computes, not from how its text is written (issue 29). The texts are benchmarks/attention_styles.py's:
hopper_attention.py's (TileLang's example as written), the conformance kernel built from macros, and one
written differently again (the loop from an explicit start, the scale folded into the scores first,
copies at offsets instead of slices, T.clear). ptxas gave all three 168 registers and no spills
(2026-12-07, full and causal)."""

from __future__ import annotations

import re

import pytest

import tilecraft
from benchmarks import attention_styles

SIZE = (1, 2, 300)  # batch, heads, seq (ragged for the 128-row tiles)


def _kernel(func) -> str:
    source = tilecraft.lower(func, target="cuda -arch=sm_90a", execution_backend="nvrtc").source(
        "cuda-source"
    )
    return source[source.index('extern "C" __global__') :]


def shape_of(kernel: str) -> dict:
    """What the sm_90a path decided, read from the kernel's source."""
    return {
        "launch": re.findall(r"__launch_bounds__\([^)]*\)", kernel),
        "registers": re.findall(r"tc_setmaxnreg_(?:inc|dec)<\d+>", kernel),
        "gemms": sorted(re.findall(r"tc::gemm\w*<[^>]*>", kernel)),
        "tma_loads": len(re.findall(r"tc_tma_load<", kernel)),
        "cp_async": "tc_cp_async" in kernel,
        "in_flight": sorted(set(re.findall(r"tc_wgmma_wait<\d>", kernel))),
    }


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_three_texts_of_one_attention_lower_to_one_kernel_shape(causal):
    shapes = {name: shape_of(_kernel(f)) for name, f in attention_styles.texts(*SIZE, causal).items()}
    first = shapes["benchmark"]
    assert first["registers"] and not first["cp_async"], first  # the producer path, all loads TMA
    for name, shape in shapes.items():
        assert shape == first, f"{name}: {shape}\nbenchmark: {first}"
