"""apply-shared-layouts (CUDA), Before/Expected: shared tiles with a swizzled layout become 1-D buffers
addressed at each element's physical offset."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import SM80
from tilecraft.cuda.shared_layout import swizzle16
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("apply-shared-layouts", SM80)
def test_accesses_of_a_swizzled_tile_use_its_physical_offsets(target):
    """Each access of a swizzled tile goes to the element's physical offset in a 1-D buffer."""
    # s[r, c] of a swizzle16 tile with 64-element rows is s[f ^ ((f >> 6 & 7) << 3)], f = r * 64 + c, which
    # rows of a power of two >= 64 elements write as r * 64 + (c ^ (r & 7) << 3) (the row's mask apart, so
    # a loop over c keeps it invariant); the layout annotation is gone and other buffers keep their indices.

    @T.prim_func
    def before(A: T.Tensor((8, 64), "float16"), B: T.Tensor((8, 64), "float16")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((8, 64), "float16")
            T.annotate_layout({s: swizzle16(64)})
            for r in T.serial(8):
                s[r, tx] = A[r, tx]
            T.sync_threads()
            for r in T.serial(8):
                B[r, tx] = s[7 - r, tx]

    @T.prim_func
    def expected(A: T.Tensor((8, 64), "float16"), B: T.Tensor((8, 64), "float16")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((512,), "float16")
            for r in T.serial(8):
                s[r * 64 + (tx ^ (r & 7) << 3)] = A[r, tx]
            T.sync_threads()
            for r in T.serial(8):
                B[r, tx] = s[(7 - r) * 64 + (tx ^ (7 - r & 7) << 3)]

    assert_pass(target, "apply-shared-layouts", before, expected)


@pass_test("apply-shared-layouts", SM80)
def test_leading_dims_of_a_staged_tile_count_whole_tiles(target):
    """A staged tile's leading dim counts whole tiles: stage k starts at k times the tile's size."""
    # (2, 8, 64): stage k's element sits at k * 512 plus its swizzled offset within the 8 x 64 tile.

    @T.prim_func
    def before(A: T.Tensor((8, 64), "float16"), B: T.Tensor((8, 64), "float16")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((2, 8, 64), "float16")
            T.annotate_layout({s: swizzle16(64)})
            for k in T.serial(2):
                B[k, tx] = s[k, 3, tx]

    @T.prim_func
    def expected(A: T.Tensor((8, 64), "float16"), B: T.Tensor((8, 64), "float16")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((1024,), "float16")
            for k in T.serial(2):
                B[k, tx] = s[
                    (0 + k) * 512
                    + (3 * 64 + (tx ^ T.ir.Call(dtype="int32", op="bitwise_and", args=(3, 7)) << 3))
                ]

    assert_pass(target, "apply-shared-layouts", before, expected)
