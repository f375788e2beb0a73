"""check-barrier-placement (CUDA), Before/Expected: T.alloc_barrier at the kernel's top level passes
through unchanged; one under a branch or loop is refused at its line (its barriers are initialized by the
whole block)."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tests.cuda.passes.kernels import SM90A
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass


@T.prim_func
def at_top(A: T.Tensor((4,), "float32")):
    with T.Kernel(1, threads=128):
        bar = T.alloc_barrier(128)
        T.barrier_arrive(bar)
        T.barrier_wait(bar, 0)
        A[0] = 1.0


@T.prim_func
def under_a_loop(A: T.Tensor((4,), "float32")):
    with T.Kernel(1, threads=128):
        for k in T.serial(2):
            bar = T.alloc_barrier(128)
            T.barrier_arrive(bar)
            T.barrier_wait(bar, 0)
            A[k] = 1.0


@pass_test("check-barrier-placement", SM90A)
def test_barriers_at_the_kernel_s_top_level_pass_unchanged(target):
    """One mbarrier made at the top of the T.Kernel body: nothing to refuse, nothing changed."""
    assert_pass(target, "check-barrier-placement", at_top, UNCHANGED)


def test_barriers_made_inside_a_loop_are_refused_at_their_line():
    with pytest.raises(LoweringError, match="T.alloc_barrier of bar stands under a branch or loop") as info:
        run_pass(SM90A, "check-barrier-placement", under_a_loop)
    assert "bar = T.alloc_barrier(128)" in str(info.value)
    assert info.value.hint == "allocate the barriers at the top of the T.Kernel body"
