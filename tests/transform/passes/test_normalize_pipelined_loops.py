"""normalize-pipelined-loops, Before/Expected: a T.Pipelined loop counts from 0."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import CUDA
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


@pass_test("normalize-pipelined-loops", CUDA)
def test_a_loop_from_a_named_start_reads_k_plus_the_start(target):
    """`T.Pipelined(start, end)` becomes a loop over [0, end - start) whose body reads k + start."""

    @T.prim_func
    def before(A: T.Tensor((512,), "float32"), B: T.Tensor((512,), "float32")):
        with T.Kernel(4, threads=128) as bx:
            s = T.alloc_shared((32,), "float32")
            start = bx * 4
            for k in T.Pipelined(start, 16, num_stages=2):
                T.copy(A[k * 32], s)
                T.copy(s, B[k * 32])

    expected = """
    @T.prim_func
    def before(A: T.Tensor((512,), "float32"), B: T.Tensor((512,), "float32")):
        with T.Kernel(4, threads=128) as bx:
            s = T.alloc_shared((32,), "float32")
            start: T.int32 = bx * 4
            for k in T.Pipelined(16 - start, num_stages=2):
                T.copy(A[(k + start) * 32], s)
                T.copy(s, B[(k + start) * 32])
    """
    assert_pass(target, "normalize-pipelined-loops", before, expected)


@pass_test("normalize-pipelined-loops", CUDA)
def test_a_start_that_is_an_expression_is_bound_once_before_the_loop(target):
    """A start that is not a name is bound by a let around the loop (evaluated once, as the bounds are)."""

    @T.prim_func
    def before(A: T.Tensor((512,), "float32"), B: T.Tensor((512,), "float32")):
        with T.Kernel(4, threads=128) as bx:
            s = T.alloc_shared((32,), "float32")
            for k in T.Pipelined(bx * 4, 16, num_stages=2):
                T.copy(A[k * 32], s)
                T.copy(s, B[k * 32])

    expected = """
    @T.prim_func
    def before(A: T.Tensor((512,), "float32"), B: T.Tensor((512,), "float32")):
        with T.Kernel(4, threads=128) as bx:
            s = T.alloc_shared((32,), "float32")
            k_start: T.int32 = bx * 4
            for k in T.Pipelined(16 - bx * 4, num_stages=2):
                T.copy(A[(k + k_start) * 32], s)
                T.copy(s, B[(k + k_start) * 32])
    """
    assert_pass(target, "normalize-pipelined-loops", before, expected)


@pass_test("normalize-pipelined-loops", CUDA)
def test_loops_from_zero_and_other_loops_are_kept(target):
    """A pipelined loop from 0 and a serial loop from another start are left as they are."""

    @T.prim_func
    def before(A: T.Tensor((512,), "float32")):
        with T.Kernel(4, threads=128) as bx:
            s = T.alloc_shared((32,), "float32")
            for k in T.Pipelined(16, num_stages=2):
                T.copy(A[k * 32], s)
            for j in T.serial(bx, 16):
                T.copy(s, A[j * 32])

    assert_pass(target, "normalize-pipelined-loops", before, UNCHANGED)
