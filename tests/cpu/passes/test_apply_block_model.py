"""apply-block-model (CPU), Before/Expected: what a block of threads needs and one thread does not goes."""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("apply-block-model", "c")
def test_hints_go_pipelined_loops_are_serial_and_barriers_are_gone(target):
    """T.use_swizzle is dropped, T.Pipelined becomes T.serial (no stages), T.sync_threads disappears."""

    @T.prim_func
    def before(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(4, 4, threads=128) as (bx, by):
            T.use_swizzle(panel_size=2)
            s = T.alloc_shared((16, 16), "float32")
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[by * 16, k * 16], s)
                T.sync_threads()
                T.copy(s, B[by * 16, bx * 16])

    @T.prim_func
    def expected(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(4, 4, threads=128) as (bx, by):
            s = T.alloc_shared((16, 16), "float32")
            for k in T.serial(4):
                T.copy(A[by * 16, k * 16], s)
                T.copy(s, B[by * 16, bx * 16])

    assert_pass(target, "apply-block-model", before, expected)
