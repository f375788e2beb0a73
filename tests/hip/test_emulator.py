"""The CPU emulator behind the emulated HIP runtime is strict where the GPU is: without a barrier other
work-items' LDS writes are not seen, a barrier some work-items skip is an error, ds_bpermute and MFMA are
collectives of a 64-lane wavefront, and a kernel runs only with the work-group size it was compiled for.
Its MFMA computes what the Python model of AMD's operand layouts (test_mfma_model.py) computes.
Hand-written HIP, on tc_hip.h, run through the emulator directly."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.hip.emulator import build_library, launch
from tests.hip.test_mfma_model import mfma
from tilecraft.hip.codegen import header_text

KERNEL = 'extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size({n}, {n}))) void {name}({params}) {{\n{body}\n}}\n'  # noqa: E501
NEIGHBOUR = """    extern __attribute__((shared)) char tc_smem[];
    float* smem = (float*)tc_smem;
    const int t = (int)__builtin_amdgcn_workitem_id_x();
    smem[t] = (float)t;
    BARRIER
    out[t] = smem[(t + 1) % 128];"""


def kernel(name: str, params: str, body: str, threads: int, mfma_header: bool = False) -> str:
    return header_text(mfma_header) + KERNEL.format(n=threads, name=name, params=params, body=body)


@pytest.fixture
def build(emulator_compiler, emulator_build_dir):
    return lambda source, arch="gfx942": build_library(source, arch, emulator_compiler, emulator_build_dir)


def neighbour(build, barrier: str) -> tuple[np.ndarray, str]:
    lib = build(kernel("neighbour", "float* out", NEIGHBOUR.replace("BARRIER", barrier), 128))
    out = np.zeros(128, np.float32)
    return out, launch(lib, "neighbour", [out], (1, 1, 1), (128, 1, 1), 512)


def test_a_barrier_makes_other_work_items_lds_writes_visible(build):
    out, error = neighbour(build, "tc_syncthreads();")
    assert not error and list(out) == [(i + 1) % 128 for i in range(128)]


def test_without_the_barrier_the_writes_are_not_seen(build):
    out, error = neighbour(build, "")
    assert not error and np.isnan(out).any()  # LDS starts as 0xff bytes


def test_a_barrier_some_work_items_skip_is_an_error(build):
    _, error = neighbour(build, "if (t < 64) tc_syncthreads();")
    assert "never meet" in error


def test_a_kernel_runs_only_with_its_work_group_size(build):
    lib = build(kernel("neighbour", "float* out", NEIGHBOUR.replace("BARRIER", "tc_syncthreads();"), 128))
    error = launch(lib, "neighbour", [np.zeros(256, np.float32)], (1, 1, 1), (256, 1, 1), 1024)
    assert "amdgpu_flat_work_group_size is 128" in error


LANES = """    const int t = (int)__builtin_amdgcn_workitem_id_x();
    out[t] = (float)tc_lane_id() + 1000.0f * tc_lane_xor((float)t, MASK);"""


@pytest.mark.parametrize("mask", [1, 5, 32, 63])
def test_the_lane_exchange_is_within_a_wavefront_of_64(build, mask):
    lib = build(kernel("lanes", "float* out", LANES.replace("MASK", str(mask)), 128))
    out = np.zeros(128, np.float32)
    assert not launch(lib, "lanes", [out], (1, 1, 1), (128, 1, 1))
    expected = [i % 64 + 1000.0 * ((i // 64) * 64 + ((i % 64) ^ mask)) for i in range(128)]
    assert list(out) == expected


def test_a_lane_past_a_partial_wavefront_is_an_error(build):
    lib = build(kernel("lanes", "float* out", LANES.replace("MASK", "32"), 32))
    assert "past the (partial) wavefront" in launch(
        lib, "lanes", [np.zeros(32, np.float32)], (1, 1, 1), (32, 1, 1)
    )


def test_a_lane_exchange_half_a_wavefront_calls_is_an_error(build):
    lib = build(
        kernel(
            "lanes",
            "float* out",
            LANES.replace("MASK", "1").replace("out[t] =", "if (t % 64 < 16) out[t] ="),
            128,
        )
    )
    error = launch(lib, "lanes", [np.zeros(128, np.float32)], (1, 1, 1), (128, 1, 1))
    assert "not reached by every lane" in error


# ---------------------------------------------------------------- MFMA against the Python model

MFMA16 = """    const int l = tc_lane_id();
    OPERAND a, b;
    for (int i = 0; i < 4; ++i) a[i] = A[4 * l + i], b[i] = B[4 * l + i];
    tc_f32x4 c = {C[4 * l], C[4 * l + 1], C[4 * l + 2], C[4 * l + 3]};
    tc_f32x4 d = BUILTIN(CAST(a), CAST(b), c, 0, 0, 0);
    for (int i = 0; i < 4; ++i) D[4 * l + i] = d[i];"""
FORMS16 = {
    "f16": (
        "tc_i16x4",
        "__builtin_amdgcn_mfma_f32_16x16x16f16",
        "__builtin_bit_cast(tc_f16x4, {})",
        np.float16,
    ),
    "bf16": ("tc_i16x4", "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k", "{}", ml_dtypes.bfloat16),
}


def run_mfma(build, body: str, a_bits, b_bits, c, arch="gfx942", params="const short* A, const short* B"):
    lib = build(kernel("one_mfma", f"{params}, const float* C, float* D", body, 64, mfma_header=True), arch)
    d = np.zeros((64, 4), np.float32)
    assert not launch(lib, "one_mfma", [a_bits, b_bits, c, d], (1, 1, 1), (64, 1, 1))
    return d


@pytest.mark.parametrize("form", list(FORMS16))
def test_a_16_bit_mfma_computes_what_the_model_of_its_lane_layouts_does(build, form):
    operand, builtin, cast, dtype = FORMS16[form]
    rng = np.random.default_rng(16)
    a, b = (rng.standard_normal((64, 4)).astype(dtype) for _ in range(2))
    c = rng.standard_normal((64, 4)).astype(np.float32)
    body = MFMA16.replace("OPERAND", operand).replace("BUILTIN", builtin)
    body = body.replace("CAST(a)", cast.format("a")).replace("CAST(b)", cast.format("b"))
    d = run_mfma(build, body, a.view(np.int16), b.view(np.int16), c)
    expected = mfma(a.astype(np.float64), b.astype(np.float64), c.astype(np.float64), 4)
    np.testing.assert_allclose(d, expected, rtol=1e-6, atol=1e-5)


MFMA8 = """    const int l = tc_lane_id();
    long a = 0, b = 0;
    for (int i = 0; i < 8; ++i) a |= (long)A[8 * l + i] << (8 * i), b |= (long)B[8 * l + i] << (8 * i);
    tc_f32x4 c = {C[4 * l], C[4 * l + 1], C[4 * l + 2], C[4 * l + 3]};
    tc_f32x4 d = BUILTIN(a, b, c, 0, 0, 0);
    for (int i = 0; i < 4; ++i) D[4 * l + i] = d[i];"""
FNUZ = {"fp8": ml_dtypes.float8_e4m3fnuz, "bf8": ml_dtypes.float8_e5m2fnuz}


@pytest.mark.parametrize("fa, fb", [("fp8", "fp8"), ("fp8", "bf8"), ("bf8", "fp8"), ("bf8", "bf8")])
def test_an_fp8_mfma_on_gfx942_reads_its_bytes_as_fnuz(build, fa, fb):
    rng = np.random.default_rng(8)
    a = rng.integers(0, 256, (64, 8), dtype=np.uint8)
    b = rng.integers(0, 256, (64, 8), dtype=np.uint8)
    a[a == 0x80] = 0  # the FNUZ NaN, which would make the whole tile NaN
    b[b == 0x80] = 0
    c = rng.standard_normal((64, 4)).astype(np.float32)
    body = MFMA8.replace("BUILTIN", f"__builtin_amdgcn_mfma_f32_16x16x32_{fa}_{fb}")
    d = run_mfma(build, body, a, b, c, params="const unsigned char* A, const unsigned char* B")
    expected = mfma(
        a.view(FNUZ[fa]).astype(np.float64), b.view(FNUZ[fb]).astype(np.float64), c.astype(np.float64), 8
    )
    np.testing.assert_allclose(d, expected, rtol=1e-6, atol=1e-5)


def test_an_mfma_in_a_partial_wavefront_is_an_error(build):
    operand, builtin, cast, _ = FORMS16["f16"]
    body = MFMA16.replace("OPERAND", operand).replace("BUILTIN", builtin)
    body = body.replace("CAST(a)", cast.format("a")).replace("CAST(b)", cast.format("b"))
    lib = build(
        kernel("one_mfma", "const short* A, const short* B, const float* C, float* D", body, 32, True)
    )
    z = np.zeros(256, np.int16)
    error = launch(
        lib, "one_mfma", [z, z, np.zeros(128, np.float32), np.zeros(128, np.float32)], (1, 1, 1), (32, 1, 1)
    )
    assert "partial wavefront" in error
