"""lower-to-threads (CUDA sm_90a), Before/Expected: a T.copy between a global region and a wgmma operand
tile is TMA boxes through a tensor map of the tensor's full rank. The region's rows may be in any dim and
its columns in the last, with extent 1 in the dims between (TileLang's bshd `Q[bz, rows, by, :]`, the
varlen examples' `K[rows, h, :]`): the box is (swizzle columns, 1 .., rows, 1 ..) innermost first, the
coordinates the region's starts per dim. The input carries inferred layouts, so Before is taken through
the passes ahead of this one (`prefix=True`)."""

from __future__ import annotations

import tilecraft.language as T
from tests.cuda.passes.kernels import SM90A
from tilecraft.testing.passes import assert_pass, pass_test


@T.prim_func
def bshd_tiles(
    Q: T.Tensor((2, 96, 3, 128), "float16"),
    K: T.Tensor((96, 3, 128), "float16"),
    S: T.Tensor((64, 64), "float32"),
    Out: T.Tensor((2, 96, 3, 128), "float16"),
):
    with T.Kernel(2, 3, 2, threads=128) as (bx, by, bz):
        Q_s = T.alloc_shared((64, 128), "float16")
        K_s = T.alloc_shared((64, 128), "float16")
        acc = T.alloc_fragment((64, 64), "float32")
        T.copy(Q[bz, bx * 64 : (bx + 1) * 64, by, :], Q_s)
        T.copy(K[bx * 32 : bx * 32 + 64, by, :], K_s)
        T.gemm(Q_s, K_s, acc, transpose_B=True, clear_accum=True)
        T.copy(acc, S)
        T.copy(K_s, Out[bz, bx * 64 : (bx + 1) * 64, by, :])


@pass_test("lower-to-threads", SM90A)
def test_tiles_with_rows_outside_the_second_to_last_dim_are_tma_boxes_of_full_rank_maps(target):
    """Rows in dim 1 of 4 or dim 0 of 3: one box per 64-column swizzle block, coordinates per dim."""
    # Q's box is (64, 1, 64, 1) at (column block, by, bx * 64, bz); K's (64, 1, 64) at (column block, by,
    # bx * 32); K_s stored back the same way into Out (a TMA store: the helper deciding is the loads').

    expected = """
    @T.prim_func
    def bshd_tiles(Q: T.Tensor((2, 96, 3, 128), "float16"), K: T.Tensor((96, 3, 128), "float16"), S: T.Tensor((64, 64), "float32"), Out: T.Tensor((2, 96, 3, 128), "float16")):
        with T.Kernel(2, 3, 2, threads=128) as (bx, by, bz):
            tx = T.get_thread_binding(0)
            Q_s = T.alloc_shared((64, 128), "float16")
            T.annotate_layout({Q_s: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=128, atom=64)})
            K_s = T.alloc_shared((64, 128), "float16")
            T.annotate_layout({K_s: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=128, atom=64)})
            acc = T.alloc_local((32,), "float32")
            T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Q_s, dst_offset=0, src=Q, box=(64, 1, 64, 1), swizzle=128, coords=(0, by, bx * 64, bz)), T.ir.cuda.TmaLoad(dst=Q_s, dst_offset=4096, src=Q, box=(64, 1, 64, 1), swizzle=128, coords=(64, by, bx * 64, bz))), bytes=16384)
            T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=K_s, dst_offset=0, src=K, box=(64, 1, 64), swizzle=128, coords=(0, by, bx * 32)), T.ir.cuda.TmaLoad(dst=K_s, dst_offset=4096, src=K, box=(64, 1, 64), swizzle=128, coords=(64, by, bx * 32))), bytes=16384)
            for r1 in T.serial(32, annotations={'unroll': True}):
                acc[r1] = 0.0
            T.ir.cuda.GemmCall(variant='wgmma', a=Q_s, b=K_s, c=acc, m=64, n=64, k=128, warps_m=1, warps_n=1, trans_a=False, trans_b=True, bf16=False, a_offset=T.int32(0), b_offset=T.int32(0), atom_a=64, atom_b=64)
            for v2 in T.serial(16, annotations={'unroll': True}):
                T.ir.cuda.VectorStore(dst=S, dst_offset=0 + T.cast((tx % 32 & 3) * 2 + (v2 >> 1) * 8, "int64") * 1 + T.cast((tx % 32 >> 2) + (v2 & 1) * 8 + tx // 32 * 16, "int64") * 64, values=(acc[v2 * 2 + 0], acc[v2 * 2 + 1]))
            T.ir.cuda.TmaStoreCopy(stores=(T.ir.cuda.TmaStore(dst=Out, src=K_s, src_offset=0, box=(64, 1, 64, 1), swizzle=128, coords=(0, by, bx * 64, bz)), T.ir.cuda.TmaStore(dst=Out, src=K_s, src_offset=4096, box=(64, 1, 64, 1), swizzle=128, coords=(64, by, bx * 64, bz))))
    """

    assert_pass(target, "lower-to-threads", bshd_tiles, expected, prefix=True)
