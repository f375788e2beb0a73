"""run-thread-groups (CPU), Before/Expected: branches that split a block's threads into groups run one
after the other on the block's one thread."""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("run-thread-groups", "c")
def test_every_branch_some_thread_takes_runs_in_order_and_the_rest_go(target):
    """Every branch some thread of the block takes runs, in program order; a branch none takes is gone."""
    # `tx < 64` splits 128 threads in two: both branches run, then-branch first; `tx >= 128` holds for no
    # thread; the thread index is no longer read.

    @T.prim_func
    def before(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            if tx < 64:
                for i in T.Parallel(64):
                    A[i] = 1.0
            else:
                for i in T.Parallel(64):
                    B[i] = 2.0
            if tx >= 128:
                A[0] = 3.0

    @T.prim_func
    def expected(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(64):
                A[i] = 1.0
            for i in T.Parallel(64):
                B[i] = 2.0

    assert_pass(target, "run-thread-groups", before, expected)
