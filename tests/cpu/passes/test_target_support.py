"""check-target-support (CPU), Before/Expected: a host processor's capabilities lack nothing the check
refuses, so a kernel with float64, atomics, mbarriers and T.print passes through unchanged."""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


@T.prim_func
def everything(A: T.Tensor((64,), "float64"), B: T.Tensor((64,), "int64")):
    with T.Kernel(1, threads=64):
        bar = T.alloc_barrier(64)
        T.barrier_arrive(bar)
        T.barrier_wait(bar, 0)
        for i in T.Parallel(64):
            A[i] = T.exp(A[i])
            T.atomic_add(B[0], B[i])
        T.print(A[0], msg="a")


@pass_test("check-target-support", "c")
def test_a_kernel_using_what_only_some_targets_have_passes_unchanged(target):
    """float64 math, int64 atomics, an mbarrier and T.print on the CPU: nothing refused, nothing changed."""
    assert_pass(target, "check-target-support", everything, UNCHANGED)
