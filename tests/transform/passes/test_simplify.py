"""simplify, Before/Expected: index arithmetic folded under the launch and loop facts; decided branches go."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("simplify", "c", SM80, OPENCL, WEBGPU)
def test_indices_fold_and_a_guard_the_bounds_prove_true_is_gone(target):
    """`// 1 + 0` and `% 128` of an index below 128 fold away; `if bx * 64 + i < 128` is always true."""

    @T.prim_func
    def before(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < 128:
                    B[(bx * 64 + i) // 1 + 0] = A[(bx * 64 + i) % 128] * 2.0

    @T.prim_func
    def expected(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            for i in T.Parallel(64):
                B[bx * 64 + i] = A[bx * 64 + i] * 2.0

    assert_pass(target, "simplify", before, expected)


@pass_test("simplify", "c", SM80, OPENCL, WEBGPU)
def test_a_branch_the_facts_decide_false_keeps_only_its_else(target):
    """Under `for i in T.serial(8)`, `i >= 8` never holds: only the else branch is left."""

    @T.prim_func
    def before(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            for i in T.serial(8):
                if i >= 8:
                    A[i] = 0.0
                else:
                    A[i] = 1.0

    @T.prim_func
    def expected(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            for i in T.serial(8):
                A[i] = 1.0

    assert_pass(target, "simplify", before, expected)
