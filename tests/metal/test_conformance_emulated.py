"""The conformance kit through the `metal` execution backend, on the fake Metal device whose kernels run
in the CPU emulator (emulator/metal_stdlib): the generated MSL's numerics, compared with the kit's
float64 references, without Apple hardware.

What this checks: the lowering's arithmetic, indexing, edge guards, barriers (a missing one shows up as
a wrong result or an emulator error), the SIMD-group shuffles and reductions, and the simdgroup_matrix
gemm, as the MSL specification defines them, plus the backend's argument binding and copies. What it
does not: Apple's compiler (the MSL is compiled as C++ against the shim), the hardware's real lane
layout of simdgroup_matrix, timing, and memory-model effects of truly concurrent threads.

CI runs REPRESENTATIVE on apple7 (the simdgroup_matrix path) and the FMA gemms on apple6;
TILECRAFT_METAL_EMULATE_ALL=1 runs every case on both (about 80 s of CPU).
"""

from __future__ import annotations

import os

import pytest

from tests.metal.conftest import forget, install_fake
from tilecraft.testing import conformance as kit

REPRESENTATIVE = {
    7: ("elementwise_add_ragged", "cast_scale_f16_to_f32_bf16", "row_sum_ragged", "softmax_f16", "layer_norm",
        "gemm_f16_nn", "gemm_f16_tt", "gemm_f32_ragged", "gemm_bf16_out_ragged", "split_k_gemm_atomic",
        "gemv_f16", "cumsum", "two_kernels_in_order", "flash_attention_full"),
    6: ("gemm_f16_nt", "gemm_f16_ragged_nt"),
}  # fmt: skip
EVERYTHING = bool(os.environ.get("TILECRAFT_METAL_EMULATE_ALL"))


def _cases(family: int):
    if EVERYTHING:
        return list(kit.CASES)
    return [c for c in kit.CASES if c.name in REPRESENTATIVE[family]]


@pytest.fixture(scope="module", params=[7, 6], ids=["apple7", "apple6"])
def emulated(request, emulator_compiler, emulator_build_dir):
    monkeypatch = pytest.MonkeyPatch()
    module = install_fake(monkeypatch, emulator_build_dir, family=request.param, compiler=emulator_compiler)
    (pair,) = kit.declared_cases("metal")
    try:
        yield request.param, kit.resolve(pair), module
    finally:
        monkeypatch.undo()
        forget()


@pytest.mark.parametrize("name", sorted({n for names in REPRESENTATIVE.values() for n in names} if not EVERYTHING
                                        else {c.name for c in kit.CASES}))  # fmt: skip
def test_case(name, emulated):
    family, ctx, module = emulated
    if name not in {c.name for c in _cases(family)}:
        pytest.skip(f"not in the apple{family} selection (TILECRAFT_METAL_EMULATE_ALL=1 runs it)")
    assert ctx.target.attr("family") == f"apple{family}"
    case = next(c for c in kit.CASES if c.name == name)
    try:
        kit.check_case(case, ctx)
    except kit.Unsupported as limit:
        pytest.skip(str(limit))
    assert module.device.committed, "nothing ran on the (emulated) device"


@pytest.mark.parametrize("name", ["dynamic_shapes_bind_per_call", "eager_style_outputs"])
def test_check(name, emulated):
    family, ctx, _ = emulated
    if family != 7 and not EVERYTHING:
        pytest.skip("run on apple7 (TILECRAFT_METAL_EMULATE_ALL=1 runs it on apple6 too)")
    kit.CHECKS[name](ctx)


def test_the_simdgroup_path_ran(emulated):
    family, ctx, module = emulated
    if family != 7:
        pytest.skip("apple6 has no simdgroup_matrix")
    gemm = next(c for c in kit.CASES if c.name == "gemm_f16_nn")
    kit.check_case(gemm, ctx)
    assert any("tc_simdgroup_gemm(" in src.split("kernel void", 1)[1] for src, _ in module.device.compiled)
