"""The conformance kit through the `hip` execution backend on the fake HIP runtime, whose launches run the
generated HIP C++ in the CPU emulator (emulator/tc_hip_emu.h, emulator.py): the lowering's numerics,
compared with the kit's float64 references on fresh random inputs with poisoned outputs, without an AMD
GPU.

What this checks: the arithmetic, indexing, edge guards and barriers of the generated kernels (a missing
barrier reads the emulator's 0xff-filled LDS or fails as work-items that never meet), the ds_bpermute
reductions at wavefront 64, the MFMA gemms with the operand and accumulator layouts AMD's ISA guide
defines (tc_mfma.h's loops, the LDS tiles' layouts, the accumulator layout imposed on the rest of the
kernel), atomics, and the backend's build, load, parameter packing and launch. What it does not: the
AMDGPU code clang made (the emulator compiles the same source for the host), hardware behaviour beyond
the ISA guide's definitions, timing.

CI runs the gemm and attention cases, which exercise MFMA and the LDS layouts, and a representative
selection of the rest on gfx942, and the gemms on gfx90a; TILECRAFT_HIP_EMULATE_ALL=1 runs every case
on both. The gemm shapes of gemms.py (float16, bfloat16 and float8, transposed and not, k-packed or not,
row lengths of 32 to 512 bytes) run too: the swizzled tiles' copies and the MFMA reads must agree.
"""

from __future__ import annotations

import os

import pytest

from tests.hip import gemms
from tests.hip.conftest import emulated_context
from tilecraft.testing import conformance as kit

MFMA_CASES = (
    "gemm_f16_nn", "gemm_f16_nt", "gemm_f16_tn", "gemm_f16_tt", "gemm_bf16_nn", "gemm_f16_ragged_nt",
    "gemm_bf16_out_ragged", "split_k_gemm_atomic", "flash_attention_full", "flash_attention_causal",
    "gemm_register_a_from_global", "gemm_register_a_from_accumulator", "convolution_im2col_and_views",
    "flash_attention_bhsd_causal_one_warpgroup", "shared_tile_read_by_a_128_row_and_a_32_row_gemm",
)  # fmt: skip
OTHERS = ("elementwise_add_ragged", "cast_scale_f16_to_f32_bf16", "row_sum_ragged", "softmax_f16", "layer_norm",
          "gemm_f32_ragged", "gemv_f16", "cumsum", "two_kernels_in_order", "transpose_shared",
          "batched_gemm")  # fmt: skip
SELECTION = {"gfx942": MFMA_CASES + OTHERS, "gfx90a": MFMA_CASES[:8]}
EVERYTHING = bool(os.environ.get("TILECRAFT_HIP_EMULATE_ALL"))
NAMES = sorted({c.name for c in kit.CASES} if EVERYTHING else set(MFMA_CASES + OTHERS))


@pytest.fixture(scope="module", params=["gfx942", "gfx90a"])
def emulated(request, fake_library_path, emulator_compiler, emulator_build_dir):
    monkeypatch = pytest.MonkeyPatch()
    try:
        ctx, emulation = emulated_context(monkeypatch, request.param, fake_library_path, emulator_compiler,
                                          emulator_build_dir)  # fmt: skip
        yield request.param, ctx, emulation
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("name", NAMES)
def test_case(name, emulated):
    arch, ctx, emulation = emulated
    if not EVERYTHING and name not in SELECTION[arch]:
        pytest.skip(f"not in the {arch} selection (TILECRAFT_HIP_EMULATE_ALL=1 runs it)")
    case = next(c for c in kit.CASES if c.name == name)
    launches = emulation.launches
    try:
        kit.check_case(case, ctx)
    except kit.Unsupported as limit:
        pytest.skip(str(limit))
    assert emulation.launches > launches, "nothing ran in the emulator"


@pytest.mark.parametrize("name", ["dynamic_shapes_bind_per_call", "eager_style_outputs"])
def test_check(name, emulated):
    arch, ctx, _ = emulated
    if arch != "gfx942" and not EVERYTHING:
        pytest.skip("run on gfx942 (TILECRAFT_HIP_EMULATE_ALL=1 runs it on gfx90a too)")
    kit.CHECKS[name](ctx)


@pytest.mark.parametrize("shape", gemms.SHAPES, ids=lambda s: s.id)
def test_gemm_shape(shape, emulated):
    arch, ctx, emulation = emulated
    if arch != "gfx942" and (shape.fp8 or not EVERYTHING):
        pytest.skip("run on gfx942 (TILECRAFT_HIP_EMULATE_ALL=1 runs the 16-bit ones on gfx90a too)")
    kit.check_case(gemms.case(shape), ctx)
    assert "tc::mfma_gemm" in emulation.sources[-1].split('extern "C"', 1)[1]


def test_the_mfma_path_ran(emulated):
    arch, ctx, emulation = emulated
    kit.check_case(next(c for c in kit.CASES if c.name == "gemm_f16_nn"), ctx)
    assert "tc::mfma_gemm<" in emulation.sources[-1].split('extern "C"', 1)[1]
