"""rasterize-blocks, Before/Expected: T.use_swizzle renumbers blocks in panels."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


@pass_test("rasterize-blocks", SM80, OPENCL, WEBGPU)
def test_block_indices_are_renumbered_in_panels(target):
    """With T.use_swizzle the body reads panel-order block indices (bx_r, by_r); the hint is gone."""

    @T.prim_func
    def before(A: T.Tensor((256, 256), "float32"), B: T.Tensor((256, 256), "float32")):
        with T.Kernel(4, 4, threads=128) as (bx, by):
            T.use_swizzle(panel_size=2)
            for i, j in T.Parallel(64, 64):
                B[by * 64 + i, bx * 64 + j] = A[by * 64 + i, bx * 64 + j]

    expected = """
    @T.prim_func
    def before(A: T.Tensor((256, 256), "float32"), B: T.Tensor((256, 256), "float32")):
        with T.Kernel(4, 4, threads=128) as (bx, by):
            bx_r: T.int32 = T.if_then_else((by * 4 + bx) // 8 % 2 == 1, 3 - (by * 4 + bx) % 8 // T.if_then_else((by * 4 + bx) // 8 + 1 < 2, 2, 4 - (by * 4 + bx) // 8 * 2), (by * 4 + bx) % 8 // T.if_then_else((by * 4 + bx) // 8 + 1 < 2, 2, 4 - (by * 4 + bx) // 8 * 2))
            by_r: T.int32 = (by * 4 + bx) % 8 % T.if_then_else((by * 4 + bx) // 8 + 1 < 2, 2, 4 - (by * 4 + bx) // 8 * 2) + (by * 4 + bx) // 8 * 2
            for i, j in T.Parallel(64, 64):
                B[by_r * 64 + i, bx_r * 64 + j] = A[by_r * 64 + i, bx_r * 64 + j]
    """

    assert_pass(target, "rasterize-blocks", before, expected)


@pass_test("rasterize-blocks", SM80, OPENCL, WEBGPU)
def test_kernels_without_the_hint_keep_their_numbering(target):
    """No T.use_swizzle: blocks keep their launch order."""

    @T.prim_func
    def before(A: T.Tensor((256,), "float32")):
        with T.Kernel(4, threads=64) as bx:
            for i in T.Parallel(64):
                A[bx * 64 + i] = 0.0

    assert_pass(target, "rasterize-blocks", before, UNCHANGED)
