"""WGSL codegen without a device: bindings and the uniform block, storage types by feature, atomics,
subgroup shuffles, and the limits checked before the driver sees the module."""

from __future__ import annotations

import re

import pytest

import tilecraft
import tilecraft.language as T
from tests.webgpu.conftest import BARE, FULL
from tilecraft.errors import LoweringError
from tilecraft.testing.conformance import attention_bhsd as AB
from tilecraft.testing.conformance import kernels as K
from tilecraft.testing.filecheck import filecheck


def wgsl(func, target=FULL) -> str:
    return tilecraft.lower(func, target=target, execution_backend="wgpu").source("wgsl-source")


@T.prim_func
def scale(X: T.Tensor((1000,), "bfloat16"), Y: T.Tensor((1000,), "float16"), alpha: T.float32):
    # CHECK: struct tc_args0_t { gx: u32, gy: u32, gz: u32, p0: f32 }
    # CHECK: @group(0) @binding(0) var<uniform> tc_args0: tc_args0_t;
    # CHECK: @binding(1) var<storage, read> tc_0_0_X: array<f32>;
    # CHECK: @binding(2) var<storage, read_write> tc_0_1_Y: array<f16>;
    # CHECK: @compute @workgroup_size(128)
    # CHECK: if (tc_linear >= tc_args0.gx * tc_args0.gy * tc_args0.gz) { return; }
    # CHECK: let alpha: f32 = tc_args0.p0;
    # CHECK: tc_0_1_Y[{{.*}}] = f16(
    with T.Kernel(T.ceildiv(1000, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < 1000:
                Y[bx * 128 + i] = X[bx * 128 + i] * alpha


def test_buffers_and_scalars_are_bound_as_the_abi_says():
    source = wgsl(scale)
    assert source.startswith("enable f16;")
    filecheck(source, scale)


def test_without_shader_f16_float16_is_widened_and_rounded_in_f32():
    source = wgsl(scale, BARE)
    assert "enable f16" not in source and "f16(" not in source.replace("tc_round_f16(", "")
    filecheck(source, ["CHECK: var<storage, read_write> tc_0_1_Y: array<f32>;", "CHECK: = tc_round_f16("])


def test_float32_atomic_adds_use_atomic_f32_where_the_adapter_has_it_else_compare_exchange():
    kernel = K.split_k_gemm(128, 128, 256, split_k=4)
    assert "array<atomic<f32>>" in wgsl(kernel)
    fallback = wgsl(kernel, BARE.replace("-workgroup_memory=16384", "-workgroup_memory=32768"))
    filecheck(fallback, ["CHECK: array<atomic<u32>>", "CHECK: atomicCompareExchangeWeak(", "CHECK: exchanged"])


def test_reductions_shuffle_within_subgroups_only_where_the_adapter_has_them():
    kernel = K.softmax(256, 128, 16, "float16")
    assert "subgroupShuffleXor(" in wgsl(kernel)
    assert "subgroupShuffleXor(" not in wgsl(kernel, BARE)


def test_16_bit_workgroup_elements_are_packed_and_stored_atomically():
    kernel = K.gemm(128, 128, 64, 64, 64, 32, dtype="bfloat16", accum_dtype="float32")
    source = wgsl(kernel)
    filecheck(source, ["CHECK: var<workgroup> tc_wg0: array<atomic<u32>,", "CHECK: atomicAnd(&tc_wg0[",
                       "CHECK-SAME: atomicOr(&tc_wg0["])  # fmt: skip


@T.prim_func
def stage_f64(X: T.Tensor((64,), "float64"), Y: T.Tensor((64,), "float64")):
    with T.Kernel(1, threads=64) as _:
        s = T.alloc_shared((64,), "float64")
        T.copy(X, s)
        for i in T.Parallel(64):
            Y[i] = s[63 - i]


def test_64_bit_workgroup_elements_take_two_words_where_the_adapter_has_int64():
    filecheck(wgsl(stage_f64), ["CHECK: var<workgroup> tc_wg0: array<u32, 128>;",
                                "CHECK: let tc_bits = bitcast<u64>(", "CHECK: bitcast<f64>(((u64(tc_wg0["])  # fmt: skip
    no_int64 = FULL.replace("-int64=true", "-int64=false")
    with pytest.raises(LoweringError, match="shader-int64") as info:
        wgsl(stage_f64, no_int64)
    assert info.value.unsupported == "feature:64-bit-workgroup-memory"


def test_workgroup_memory_past_the_adapter_is_a_located_declared_error():
    kernel = K.gemm(256, 256, 256, 128, 128, 128, dtype="float16", accum_dtype="float32")
    with pytest.raises(LoweringError) as info:
        wgsl(kernel)
    assert info.value.unsupported == "resource:workgroup-memory"
    assert "32768" in str(info.value) and "kernels.py" in str(info.value)


@pytest.mark.parametrize("name", ["causal_one_warpgroup", "p_shared"])
def test_flash_attention_tiles_and_reduction_scratch_share_32_kib(name):
    """Q, K, V and P (or O) take all 32 KiB as written; the reduction scratch fits only because the
    K/V/P tiles of one iteration are dead while it is used, and the epilogue tile reuses the loop's."""
    source = wgsl(AB.build(name)())
    words = int(re.search(r"var<workgroup> tc_wg0: array<(?:atomic<u32>|u32), (\d+)>;", source).group(1))
    assert words * 4 <= 32768
    assert source.count("workgroupBarrier()") > 4


def test_print_is_refused_at_its_line():
    @T.prim_func
    def show(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            T.print(A[0])

    with pytest.raises(LoweringError, match="WGSL has no printf") as info:
        wgsl(show)
    assert info.value.unsupported == "feature:print" and "T.print(A[0])" in str(info.value)


def test_more_threads_than_the_adapter_runs_are_refused():
    @T.prim_func
    def wide(A: T.Tensor((512,), "float32")):
        with T.Kernel(1, threads=512) as _:
            for i in T.Parallel(512):
                A[i] = 1.0

    with pytest.raises(LoweringError, match="at most 256 invocations per workgroup"):
        wgsl(wide, BARE)


def test_names_that_wgsl_reserves_are_renamed():
    @T.prim_func
    def reserved(loop: T.Tensor((128,), "float32"), var: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(128):
                var[i] = loop[i]

    source = wgsl(reserved)
    assert "tc_0_0_loop" in source and " var: " not in source
