"""check-target-support (WebGPU), Before/Expected: a kernel the adapter supports passes through unchanged;
one asking for more invocations, workgroup memory or features than the adapter has stops lowering with
the reason and the limit's key."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tests.transform.helpers import WEBGPU, staged
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass

ADAPTER = ("webgpu -f16=false -f64=false -int64=false -float32_atomics=false -subgroups=false "
           "-max_workgroups=65535 -max_storage_buffers=8 -max_binding_size=134217728 "
           "-max_loop_iterations=65535")  # fmt: skip


@pass_test("check-target-support", WEBGPU)
def test_a_kernel_the_adapter_supports_passes_unchanged(target):
    """128 invocations and 512 bytes of workgroup memory on an adapter with 1024 and 64 KiB: unchanged."""
    assert_pass(target, "check-target-support", staged, UNCHANGED)


def test_more_invocations_than_the_adapter_runs_are_refused():
    with pytest.raises(LoweringError, match="at most 64 invocations per workgroup") as info:
        run_pass(f"{ADAPTER} -workgroup_memory=16384 -max_workgroup_size=64", "check-target-support", staged)
    assert info.value.unsupported == "resource:workgroup-size"


def test_workgroup_memory_past_the_adapter_is_refused_at_the_allocation():
    with pytest.raises(LoweringError, match="needs 512 bytes of shared \\(workgroup\\) memory") as info:
        run_pass(f"{ADAPTER} -workgroup_memory=256 -max_workgroup_size=256", "check-target-support", staged)
    assert 's = T.alloc_shared((128,), "float32")' in str(info.value)


def test_float64_without_shader_f64_is_refused_at_the_buffer():
    @T.prim_func
    def double(A: T.Tensor((128,), "float64")):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(128):
                A[i] = A[i] * 2.0

    with pytest.raises(LoweringError, match="lacks shader-f64") as info:
        run_pass(f"{ADAPTER} -workgroup_memory=16384 -max_workgroup_size=256", "check-target-support", double)
    assert info.value.unsupported == "dtype:float64"


def test_atomics_on_16_bit_data_are_refused():
    @T.prim_func
    def add16(A: T.Tensor((128,), "float16"), B: T.Tensor((128,), "float16")):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(128):
                T.atomic_add(A[i], B[i])

    with pytest.raises(LoweringError, match="32-bit words of storage buffers") as info:
        run_pass(f"{ADAPTER} -workgroup_memory=16384 -max_workgroup_size=256", "check-target-support", add16)
    assert info.value.unsupported == "feature:atomics"
