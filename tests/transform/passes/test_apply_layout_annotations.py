"""apply-layout-annotations, Before/Expected: T.Layout permutes a global buffer's storage on every target;
a T.Fragment stays for layout inference on SIMT targets and is dropped where a block is one thread."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


@pass_test("apply-layout-annotations", "c", SM80, OPENCL, WEBGPU)
def test_a_permuted_global_buffer_is_addressed_through_its_layout(target):
    """A[i, j] of a buffer stored with the layout (i, j) -> (j, i) reads the element at j * 16 + i."""

    @T.prim_func
    def before(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16, 8), "float32")):
        with T.Kernel(1, threads=128):
            T.annotate_layout({A: T.Layout(A.shape, lambda i, j: (j, i))})
            for i, j in T.Parallel(16, 8):
                B[i, j] = A[i, j]

    @T.prim_func
    def expected(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16, 8), "float32")):
        with T.Kernel(1, threads=128):
            for i, j in T.Parallel(16, 8):
                B[i, j] = A[0, j * 16 + i]

    assert_pass(target, "apply-layout-annotations", before, expected)


@T.prim_func
def fragment_hint(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=128):
        f = T.alloc_fragment((128,), "float32")
        T.annotate_layout({f: T.Fragment((128,), forward_thread_fn=lambda i: 127 - i)})
        for i in T.Parallel(128):
            f[i] = A[i]
        for i in T.Parallel(128):
            B[i] = f[i]


@pass_test("apply-layout-annotations", SM80, OPENCL, WEBGPU)
def test_a_fragment_layout_is_kept_for_inference_on_simt_targets(target):
    """A user's T.Fragment on a fragment survives: layout inference takes it as that fragment's layout."""
    assert_pass(target, "apply-layout-annotations", fragment_hint, UNCHANGED)


@pass_test("apply-layout-annotations", "c")
def test_a_fragment_layout_is_dropped_where_a_block_is_one_thread(target):
    """On the CPU a fragment is a plain array: its T.Fragment annotation is gone, the accesses stay."""

    @T.prim_func
    def expected(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((128,), "float32")
            for i in T.Parallel(128):
                f[i] = A[i]
            for i in T.Parallel(128):
                B[i] = f[i]

    assert_pass(target, "apply-layout-annotations", fragment_hint, expected)
