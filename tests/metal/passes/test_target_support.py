"""check-target-support (Metal), Before/Expected: a kernel Metal supports passes through unchanged; one
Metal cannot run stops lowering at its line with the declared limit."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tests.transform.helpers import staged
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass


@pass_test("check-target-support", "metal -family=apple7")
def test_a_kernel_metal_supports_passes_unchanged(target):
    """128 threads and 512 bytes of threadgroup memory, float32: unchanged."""
    assert_pass(target, "check-target-support", staged, UNCHANGED)


def test_more_threads_than_the_target_allows_are_refused():
    with pytest.raises(LoweringError, match="a Metal threadgroup has at most 64") as info:
        run_pass("metal -family=apple7 -max_threads=64", "check-target-support", staged)
    assert info.value.unsupported == "resource:threadgroup-size"


def test_threadgroup_memory_past_the_target_is_refused_at_the_allocation():
    with pytest.raises(LoweringError, match="threadgroup memory") as info:
        run_pass("metal -family=apple7 -threadgroup_memory=256", "check-target-support", staged)
    assert 's = T.alloc_shared((128,), "float32")' in str(info.value)
    assert info.value.unsupported == "resource:threadgroup-memory"


def test_float64_is_refused():
    @T.prim_func
    def double(A: T.Tensor((128,), "float64")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(128):
                A[i] = A[i] * 2.0

    with pytest.raises(LoweringError, match="Metal has no double precision") as info:
        run_pass("metal -family=apple7", "check-target-support", double)
    assert info.value.unsupported == "dtype:float64"
