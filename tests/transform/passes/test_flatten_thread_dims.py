"""flatten-thread-dims, Before/Expected: a launch of several thread dims is one of their product, each
former thread index an expression of the linear one with dim 0 fastest (the GPUs' own order)."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test

HIP = "hip -arch=gfx942"
METAL = "metal -family=apple7"
TARGETS = ("c", SM80, OPENCL, WEBGPU, HIP, METAL)


@pass_test("flatten-thread-dims", *TARGETS)
def test_two_thread_dims_become_one_linear_index(target):
    """threads=(4, 8): 32 threads, x = t % 4 and y = t // 4."""

    @T.prim_func
    def before(A: T.Tensor((8, 4), "float32")):
        with T.Kernel(1, threads=(4, 8)):
            x = T.get_thread_binding(0)
            y = T.get_thread_binding(1)
            A[y, x] = T.float32(1)

    @T.prim_func
    def expected(A: T.Tensor((8, 4), "float32")):
        with T.Kernel(1, threads=32):
            t = T.get_thread_binding(0)
            A[t // 4, t % 4] = T.float32(1)

    assert_pass(target, "flatten-thread-dims", before, expected)


@pass_test("flatten-thread-dims", *TARGETS)
def test_three_thread_dims_keep_dim_zero_fastest(target):
    """threads=(2, 4, 8): z = t // 8 needs no modulo, y = t // 2 % 4."""

    @T.prim_func
    def before(A: T.Tensor((8, 4, 2), "float32")):
        with T.Kernel(1, threads=(2, 4, 8)):
            x = T.get_thread_binding(0)
            y = T.get_thread_binding(1)
            z = T.get_thread_binding(2)
            A[z, y, x] = T.float32(1)

    @T.prim_func
    def expected(A: T.Tensor((8, 4, 2), "float32")):
        with T.Kernel(1, threads=64):
            t = T.get_thread_binding(0)
            A[t // 8, t // 2 % 4, t % 2] = T.float32(1)

    assert_pass(target, "flatten-thread-dims", before, expected)


@pass_test("flatten-thread-dims", *TARGETS)
def test_one_thread_dim_is_left_as_it_is(target):
    """A launch of one thread dim is unchanged."""

    @T.prim_func
    def before(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            A[T.get_thread_binding(0)] = T.float32(1)

    assert_pass(target, "flatten-thread-dims", before, UNCHANGED)
