"""guard-accesses, Before/Expected: global accesses of T.Parallel tile code past a tensor's edge."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test

TARGETS = ("c", SM80, OPENCL, WEBGPU)


@pass_test("guard-accesses", *TARGETS)
def test_loads_past_the_edge_read_zero_and_stores_past_it_are_skipped(target):
    """A load that may pass the edge reads 0 there; a store that may pass it is predicated."""

    @T.prim_func
    def before(A: T.Tensor((100,), "float32"), B: T.Tensor((100,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            s = T.alloc_shared((64,), "float32")
            for i in T.Parallel(64):
                s[i] = A[bx * 64 + i]
            for i in T.Parallel(64):
                B[bx * 64 + i] = s[i] + 1.0

    @T.prim_func
    def expected(A: T.Tensor((100,), "float32"), B: T.Tensor((100,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            s = T.alloc_shared((64,), "float32")
            for i in T.Parallel(64):
                s[i] = T.if_then_else(bx * 64 + i < 100, A[bx * 64 + i], 0.0)
            for i in T.Parallel(64):
                if bx * 64 + i < 100:
                    B[bx * 64 + i] = s[i] + 1.0

    assert_pass(target, "guard-accesses", before, expected)


@pass_test("guard-accesses", *TARGETS)
def test_accesses_that_stay_inside_are_not_guarded(target):
    """Accesses provably inside their tensor (the grid tiles it exactly) keep no guard."""

    @T.prim_func
    def before(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            for i in T.Parallel(64):
                B[bx * 64 + i] = A[bx * 64 + i] + 1.0

    assert_pass(target, "guard-accesses", before, UNCHANGED)


@pass_test("guard-accesses", *TARGETS)
def test_a_safe_value_is_what_loads_past_the_edge_read(target):
    """With T.annotate_safe_value({A: v}), a load of A that may pass its edge reads v there (other
    tensors still read 0), and the annotation is consumed."""

    @T.prim_func
    def before(A: T.Tensor((60,), "float32"), C: T.Tensor((60,), "float32"), B: T.Tensor((60,), "float32")):
        with T.Kernel(1, threads=64):
            T.annotate_safe_value({A: -1.5})
            for i in T.Parallel(64):
                B[i] = A[i - 3] + C[i - 3]

    @T.prim_func
    def expected(A: T.Tensor((60,), "float32"), C: T.Tensor((60,), "float32"), B: T.Tensor((60,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                if i < 60:
                    B[i] = T.if_then_else(i - 3 >= 0, A[i - 3], -1.5) + T.if_then_else(i - 3 >= 0, C[i - 3], 0.0)

    assert_pass(target, "guard-accesses", before, expected)


@pass_test("guard-accesses", *TARGETS)
def test_a_copy_from_a_tensor_with_a_safe_value_becomes_a_guarded_nest(target):
    """A T.copy from a tensor with a safe value that may cross its edge is a T.Parallel nest whose loads
    past the edge read the value (the backends' copies fill with zeros); one that stays inside is kept."""

    @T.prim_func
    def before(A: T.Tensor((100,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            s = T.alloc_shared((64,), "float32")
            T.annotate_safe_value({A: 7})
            T.copy(A[bx * 64 : bx * 64 + 64], s)
            T.copy(B[bx * 64 : bx * 64 + 64], s)

    @T.prim_func
    def expected(A: T.Tensor((100,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            s = T.alloc_shared((64,), "float32")
            for i0 in T.Parallel(64):
                s[i0] = T.if_then_else(bx * 64 + i0 < 100, A[bx * 64 + i0], 7.0)
            T.copy(B[bx * 64 : bx * 64 + 64], s)

    assert_pass(target, "guard-accesses", before, expected)
