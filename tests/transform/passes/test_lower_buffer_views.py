"""lower-buffer-views, Before/Expected: accesses through a `T.Tensor(shape, dtype, A.data)` view address A."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("lower-buffer-views", "c", SM80, OPENCL, WEBGPU)
def test_a_view_access_reads_the_base_buffer_at_the_flattened_index(target):
    """V[j, i] of an 8 x 8 view of a 64-element buffer A reads A[j * 8 + i]; the view is gone."""

    @T.prim_func
    def before(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            V = T.Tensor((8, 8), "float32", A.data)
            for i in T.serial(8):
                for j in T.serial(8):
                    B[i * 8 + j] = V[j, i]

    @T.prim_func
    def expected(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.serial(8):
                for j in T.serial(8):
                    B[i * 8 + j] = A[j * 8 + i]

    assert_pass(target, "lower-buffer-views", before, expected)


@pass_test("lower-buffer-views", "c", SM80, OPENCL, WEBGPU)
def test_a_store_through_a_view_writes_the_base_buffer(target):
    """A store through an 8 x 8 view of a 4 x 16 buffer writes the base at the same flat offset."""

    @T.prim_func
    def before(A: T.Tensor((4, 16), "float32")):
        with T.Kernel(1, threads=64):
            V = T.Tensor((8, 8), "float32", A.data)
            for i in T.serial(8):
                V[i, 7 - i] = 1.0

    @T.prim_func
    def expected(A: T.Tensor((4, 16), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.serial(8):
                A[0, i * 8 + (7 - i)] = 1.0

    assert_pass(target, "lower-buffer-views", before, expected)
