"""float8 kernels lower for CUDA and their source compiles with nvcc for sm_80, sm_89 and sm_90a (no GPU
needed); the numbers are checked by tests/conformance/test_float8.py on a GPU."""

from __future__ import annotations

import pytest

import tilecraft
from tests.conformance import test_float8 as F
from tilecraft.errors import ToolchainError

ARCHS = ("sm_80", "sm_89", "sm_90a")
KERNELS = {
    "cast_f32_e4m3": lambda: F._cast_kernel(1000, "float32", "float8_e4m3fn"),
    "cast_bf16_e5m2": lambda: F._cast_kernel(1000, "bfloat16", "float8_e5m2"),
    "widen_e4m3": lambda: F._widen_kernel(777, "float8_e4m3fn"),
    "copy_e5m2": lambda: F._copy_kernel(150, 70, "float8_e5m2"),
    "gemm_e4m3_nt": lambda: F._gemm_kernel(200, 136, 200, "float8_e4m3fn", "float8_e4m3fn", True),
    "gemm_e5m2_nn": lambda: F._gemm_kernel(200, 136, 200, "float8_e5m2", "float8_e5m2", False),
    "gemm_mixed_nt": lambda: F._gemm_kernel(256, 256, 256, "float8_e4m3fn", "float8_e5m2", True),
}


def cuda_source(build, arch: str) -> str:
    artifact = tilecraft.lower(build(), target=f"cuda -arch={arch}", execution_backend="nvrtc")
    return artifact.source("cuda-source")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", KERNELS)
def test_float8_cuda_compiles(nvcc, name, arch, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    source = cuda_source(KERNELS[name], arch)
    try:
        cubin = compile_cubin(source, arch, keep_dir=tmp_path)
    except ToolchainError as err:
        pytest.fail(f"nvcc rejected the generated source of {name} for {arch}:\n{err}")
    assert cubin[:4] == b"\x7fELF"


def test_float8_buffers_are_bytes_converted_in_software():
    source = cuda_source(KERNELS["cast_f32_e4m3"], "sm_90a")
    # CHECK: the float8 parameter is a byte pointer, stores convert and the in-expression cast rounds
    assert "uint8_t* __restrict__ Y" in source
    assert "tc_f32_to_e4m3(" in source and "tc_round_e4m3(" in source
    # a cast stored into float8 memory converts once: rounding to e4m3 first would be two conversions more
    assert "tc_f32_to_e4m3(tc_round_e4m3(" not in source
    assert "#include <cuda_fp8.h>" not in source  # NVRTC compiles it without include paths


def test_float8_gemm_takes_tensor_cores_with_plain_tiles():
    """On sm_80 float8 operands widen to f16 in registers for the f16 mma; their shared tiles are not
    swizzled."""
    source = cuda_source(KERNELS["gemm_mixed_nt"], "sm_80")
    # CHECK: tc::gemm_ss_fp8<M, N, K, warps_m, warps_n, trans_a, trans_b, a_e5m2, b_e5m2>
    assert "tc::gemm_ss_fp8<64, 64, 64, 2, 2, false, true, false, true>(" in source
    body = source[source.index('extern "C" __global__') :]
    assert "tc_swizzle16" not in body and "^" not in body


def test_k_major_float8_gemms_take_wgmma_on_sm90a():
    """A (M, K) and B (N, K): wgmma m64nNk32 from 128-byte swizzled tiles loaded by TMA, warp-specialized;
    the other orientations (wgmma has no transpose for 8-bit types) keep the widening mma.sync."""
    source = cuda_source(KERNELS["gemm_mixed_nt"], "sm_90a")
    body = source[source.index('extern "C" __global__') :]
    # CHECK: tc::gemm_wgmma_fp8<M, N, K, groups_m, groups_n, a_e5m2, b_e5m2, atom_a, atom_b, wait>
    assert "tc::gemm_wgmma_fp8<64, 64, 64, 1, 1, false, true, 64, 64, 1>(" in body
    assert "tc_tma_load<2>" in body and "tc_setmaxnreg_inc<" in body
    assert "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2" in source
    nn = cuda_source(KERNELS["gemm_e5m2_nn"], "sm_90a")
    assert "tc::gemm_ss_fp8<" in nn and "gemm_wgmma_fp8<" not in nn[nn.index('extern "C" __global__') :]
