"""MSL codegen, source only: kernel signatures, address spaces, barriers, SIMD-group reductions, the
simdgroup_matrix gemm on apple7+ and the FMA gemm before, atomics, and what Metal cannot do."""

from __future__ import annotations

import re

import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import LoweringError
from tilecraft.testing.conformance import kernels as K


def msl(func, family: str = "apple7", **attrs) -> str:
    target = {"kind": "metal", "family": family, **attrs}
    source = tilecraft.lower(func, target=target).source("metal-source")
    return source[source.index("kernel void") - len("[[max_total_threads_per_threadgroup(128)]] ") :]


def test_kernel_signature_binds_buffers_scalars_and_threadgroup_memory():
    @T.prim_func
    def scale(A: T.Tensor((1000,), "float32"), B: T.Tensor((1000,), "float32"), alpha: T.float32):
        with T.Kernel(T.ceildiv(1000, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < 1000:
                    B[bx * 128 + i] = A[bx * 128 + i] * alpha

    source = msl(scale)
    assert "kernel void scale_kernel0(" in source
    assert "const device float* A [[buffer(0)]]" in source and "device float* B [[buffer(1)]]" in source
    assert "constant float& alpha [[buffer(2)]]" in source
    assert "uint3 tc_group [[threadgroup_position_in_grid]]" in source
    assert "uint3 tc_tid [[thread_position_in_threadgroup]]" in source
    assert "[[max_total_threads_per_threadgroup(128)]]" in source
    assert "threadgroup uint4* tc_smem" not in source  # no shared memory, no threadgroup argument

    shared = msl(K.transpose(256, 128, 32))
    assert "threadgroup uint4* tc_smem [[threadgroup(0)]]" in shared
    assert re.search(
        r"threadgroup float\* \w+ = \(threadgroup float\*\)\(\(threadgroup char\*\)tc_smem \+ \d+\);", shared
    )
    assert "threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);" in shared


def test_row_reductions_use_simd_sum_and_max_across_a_whole_simd_group():
    """softmax's rows (256 columns, runs of 8 a thread) are reduced by 32 lanes at once: one simd_max and
    one simd_sum, no shuffles and no threadgroup scratch for the lanes (the float max through
    tc_metal.h's NaN-propagating wrapper)."""
    source = msl(K.softmax(256, 256, 8, "float16"))
    assert "tc_simd_max_f32(" in source and "simd_sum(" in source


def test_partial_lane_reductions_shuffle_by_xor():
    """gemv's rows (64 columns, runs of 8 a thread) are reduced over 8 lanes, not the whole SIMD group, so
    no simd_sum: each exchanged bit is one simd_shuffle_xor."""
    source = msl(K.gemv())
    masks = sorted(
        {int(m) for m in re.findall(r"tc_simd_shuffle_xor\(\(float\)\(red\d+\), \(ushort\)(\d+)\)", source)}
    )
    assert masks == [1, 2, 4], masks
    assert "simd_sum(" not in source


def test_gemm_takes_simdgroup_matrix_from_apple7_and_fma_before():
    gemm = K.gemm(256, 256, 128, 64, 64, 32, dtype="float16")
    new, old = msl(gemm, "apple7"), msl(gemm, "apple6")
    assert re.search(r"tc_simdgroup_gemm\(\(threadgroup float\*\)&C_local_simdgroup\[0\], 64, "
                     r"\(threadgroup half\*\)&A_shared\[0\], 32, false, \(threadgroup half\*\)&B_shared\[0\], 64, "
                     r"false, 8, 8, 4, false, \(tx / 32\), 4\)", new), new  # fmt: skip
    assert "tc_simdgroup_gemm(" not in old and "C_local_simdgroup" not in old
    # the header defines the simdgroup helper only where the family has simdgroup_matrix
    full = tilecraft.lower(gemm, target="metal -family=apple6").source("metal-source")
    assert full.startswith("#define TC_APPLE_FAMILY 6\n") and "#if TC_APPLE_FAMILY >= 7" in full


def test_transposed_operands_load_transposed():
    source = msl(K.gemm(256, 256, 128, 64, 64, 32, transpose_a=True, transpose_b=True, dtype="float16"))
    assert re.search(r"tc_simdgroup_gemm\([^;]*, 64, true, [^;]*, 32, true, 8, 8, 4, false,", source), source


def test_gemm_keeps_fma_when_the_staged_tile_would_not_fit():
    """With 16 KiB of threadgroup memory the 64x64 float staging tile (16 KiB) cannot sit beside A and B:
    the gemm stays in registers instead of failing."""
    source = msl(K.gemm(256, 256, 128, 64, 64, 32, dtype="float16"), "apple8", threadgroup_memory=16384)
    assert "tc_simdgroup_gemm(" not in source


def test_bfloat16_gemm_takes_the_fma_path():
    source = msl(K.gemm(256, 256, 128, 64, 64, 32, dtype="bfloat16"), "apple9")
    assert "tc_simdgroup_gemm(" not in source


def test_float_atomics_in_device_memory_use_atomic_float_on_apple7():
    source = tilecraft.lower(K.split_k_gemm(), target="metal -family=apple7").source("metal-source")
    kernel = source[source.index("kernel void") :]
    assert "tc_atomic_rmw_f32_g(" in kernel
    helper = source[source.index("TC_FN void tc_atomic_rmw_f32_g") :]
    assert "#if TC_APPLE_FAMILY >= 7" in helper.split("}\n", 2)[0] + helper.split("}\n", 2)[1]
    assert "atomic_fetch_add_explicit((device atomic_float*)(b + i)" in helper


def _located(err: LoweringError, key: str, where: str = "test_codegen.py") -> None:
    assert err.unsupported == key
    assert where in str(err) and "metal" in str(err)


def test_float64_is_refused_at_its_line():
    with pytest.raises(LoweringError) as info:
        msl(K.elementwise_add(dtype="float64"))
    _located(info.value, "dtype:float64", "kernels.py")
    assert "Metal has no double precision" in str(info.value)


def test_int64_atomics_are_refused():
    @T.prim_func
    def count(X: T.Tensor((256,), "int32"), H: T.Tensor((16,), "int64")):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                T.atomic_add(H[X[bx * 128 + i]], T.int64(1))

    with pytest.raises(LoweringError) as info:
        msl(count)
    _located(info.value, "feature:int64-atomics")


def test_print_is_refused():
    @T.prim_func
    def show(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            T.print(A[0])

    with pytest.raises(LoweringError) as info:
        msl(show)
    _located(info.value, "feature:print")


def test_threadgroups_past_the_target_limit_are_refused():
    @T.prim_func
    def wide(A: T.Tensor((1024,), "float32")):
        with T.Kernel(1, threads=1024) as bx:
            for i in T.Parallel(1024):
                A[bx * 1024 + i] = A[bx * 1024 + i] * 2.0

    with pytest.raises(LoweringError) as info:
        msl(wide, max_threads=512)
    _located(info.value, "resource:threadgroup-size")


def test_threadgroup_memory_past_the_target_limit_is_refused():
    with pytest.raises(LoweringError) as info:
        msl(K.transpose(256, 128, 64), threadgroup_memory=8192)
    assert info.value.unsupported == "resource:threadgroup-memory"
    assert "8192" in str(info.value)


def test_the_compile_step_needs_apples_metal_compiler(monkeypatch):
    """Off macOS there is no Metal compiler: the compile step says so (a skip in `backend check`)."""
    from tilecraft.errors import ToolchainNotFound
    from tilecraft.metal import toolchain

    monkeypatch.setattr(toolchain.sys, "platform", "linux")
    with pytest.raises(ToolchainNotFound, match="no Metal compiler exists for linux"):
        toolchain.compile_metallib("kernel void k() {}", fast_math=False)
    monkeypatch.setattr(toolchain.sys, "platform", "darwin")
    monkeypatch.setattr(toolchain.shutil, "which", lambda name: None)
    with pytest.raises(ToolchainNotFound, match="xcrun is not on PATH"):
        toolchain.compile_metallib("kernel void k() {}", fast_math=False)
