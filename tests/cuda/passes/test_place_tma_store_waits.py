"""place-tma-store-waits (CUDA), Before/Expected: the thread issuing TMA stores waits for their reads of a
tile before the tile is written again and at the end of the kernel. Its input holds TMA copies, which
the language does not spell, so the Before is a kernel taken through the earlier passes and the
comparison is of the printed IR."""

from __future__ import annotations

import tilecraft.language as T
from tests.cuda.passes.kernels import SM90A, tma_gemm
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


@T.prim_func
def stored_each_iteration(A: T.Tensor((16, 64), "float16"), B: T.Tensor((16, 64), "float16")):
    with T.Kernel(1, threads=128):
        S = T.alloc_shared((8, 64), "float16")
        for t in T.serial(2):
            T.copy(A[t * 8, 0], S)
            T.copy(S, B[t * 8, 0])


@pass_test("place-tma-store-waits", SM90A)
def test_each_iteration_waits_for_the_previous_store_before_refilling_the_tile(target):
    """An iteration's write of the tile waits for the last iteration's store; the kernel ends waiting."""
    expected = """
    @T.prim_func
    def stored_each_iteration(A: T.Tensor((16, 64), "float16"), B: T.Tensor((16, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((512,), "float16")
            for t in T.serial(2):
                T.ir.cuda.TmaStoreWait(tiles=(S,))
                T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=S, dst_offset=0, src=A, box=(64, 8), swizzle=128, coords=(0, t * 8)),), bytes=1024)
                T.ir.cuda.TmaStoreCopy(stores=(T.ir.cuda.TmaStore(dst=B, src=S, src_offset=0, box=(64, 8), swizzle=128, coords=(0, t * 8)),))
            T.ir.cuda.TmaStoreWait(tiles=(S,))
    """
    assert_pass(target, "place-tma-store-waits", stored_each_iteration, expected, prefix=True, as_text=True)


@T.prim_func
def two_tiles(
    A: T.Tensor((8, 64), "float16"), B: T.Tensor((8, 64), "float16"), C: T.Tensor((8, 64), "float16")
):
    with T.Kernel(1, threads=128):
        S = T.alloc_shared((8, 64), "float16")
        R = T.alloc_shared((8, 64), "float16")
        T.copy(A[0, 0], S)
        T.copy(S, B[0, 0])
        T.copy(A[0, 0], R)
        T.copy(R, C[0, 0])
        T.copy(A[0, 0], S)
        T.copy(S, C[0, 0])


@pass_test("place-tma-store-waits", SM90A)
def test_only_a_write_of_a_tile_in_flight_waits(target):
    """R's first write does not wait (no store of R is in flight); S's second write waits for S's store
    alone (`pending=1`: R's, committed after it, may stay in flight); the end waits for both."""
    expected = """
    @T.prim_func
    def two_tiles(A: T.Tensor((8, 64), "float16"), B: T.Tensor((8, 64), "float16"), C: T.Tensor((8, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((512,), "float16")
            R = T.alloc_shared((512,), "float16")
            T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=S, dst_offset=0, src=A, box=(64, 8), swizzle=128, coords=(0, 0)),), bytes=1024)
            T.ir.cuda.TmaStoreCopy(stores=(T.ir.cuda.TmaStore(dst=B, src=S, src_offset=0, box=(64, 8), swizzle=128, coords=(0, 0)),))
            T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=R, dst_offset=0, src=A, box=(64, 8), swizzle=128, coords=(0, 0)),), bytes=1024)
            T.ir.cuda.TmaStoreCopy(stores=(T.ir.cuda.TmaStore(dst=C, src=R, src_offset=0, box=(64, 8), swizzle=128, coords=(0, 0)),))
            T.ir.cuda.TmaStoreWait(tiles=(S,), pending=1)
            T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=S, dst_offset=0, src=A, box=(64, 8), swizzle=128, coords=(0, 0)),), bytes=1024)
            T.ir.cuda.TmaStoreCopy(stores=(T.ir.cuda.TmaStore(dst=C, src=S, src_offset=0, box=(64, 8), swizzle=128, coords=(0, 0)),))
            T.ir.cuda.TmaStoreWait(tiles=(S, R))
    """
    assert_pass(target, "place-tma-store-waits", two_tiles, expected, prefix=True, as_text=True)


@pass_test("place-tma-store-waits", SM90A)
def test_a_kernel_without_tma_stores_is_unchanged(target):
    """No TMA store (the GEMM stores its fragment directly): nothing to wait for."""
    assert_pass(target, "place-tma-store-waits", tma_gemm, UNCHANGED, prefix=True)
