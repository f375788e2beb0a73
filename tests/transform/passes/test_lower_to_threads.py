"""lower-to-threads, Before/Expected: tile ops and T.Parallel nests become per-thread code and fragments
per-thread register arrays. The pass's input carries inferred layouts, which the language does not
spell, so each Before is a kernel taken through the passes ahead of this one (`prefix=True`)."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("lower-to-threads", SM80, OPENCL, WEBGPU)
def test_a_parallel_nest_runs_one_element_per_thread_and_the_fragment_is_a_register(target):
    """128 elements over 128 threads: thread tx handles element tx; the fragment is one register."""

    @T.prim_func
    def scale(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            f = T.alloc_fragment((128,), "float32")
            for i in T.Parallel(128):
                f[i] = A[bx * 128 + i] * 2.0
            for i in T.Parallel(128):
                B[bx * 128 + i] = f[i]

    @T.prim_func
    def expected(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            tx = T.get_thread_binding(0)
            f = T.alloc_local((1,), "float32")
            for _r1 in T.serial(1, annotations={"unroll": True}):
                f[0] = A[bx * 128 + (tx % 32 + tx // 32 * 32)] * 2.0
            for _r2 in T.serial(1, annotations={"unroll": True}):
                B[bx * 128 + (tx % 32 + tx // 32 * 32)] = f[0]

    assert_pass(target, "lower-to-threads", scale, expected, prefix=True)


@pass_test("lower-to-threads", SM80)
def test_a_gemm_is_one_call_on_the_tiles_and_its_accumulator_eight_registers(target):
    """A gemm is one call on the tiles; each thread stores its accumulator registers where they belong."""
    # m16n8k16 on one warp: 16-byte vector copies into the swizzled tiles, one mma gemm call, and each
    # thread stores its 8 accumulator registers at their mma-layout positions.

    @T.prim_func
    def mma(
        A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")
    ):
        with T.Kernel(1, threads=32):
            As = T.alloc_shared((16, 16), "float16")
            Bs = T.alloc_shared((16, 16), "float16")
            Cf = T.alloc_fragment((16, 16), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cf, clear_accum=True)
            for i, j in T.Parallel(16, 16):
                C[i, j] = Cf[i, j]

    expected = """
    @T.prim_func
    def mma(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding(0)
            As = T.alloc_shared((16, 16), "float16")
            T.annotate_layout({As: T.ir.cuda.SharedLayout()})
            Bs = T.alloc_shared((16, 16), "float16")
            T.annotate_layout({Bs: T.ir.cuda.SharedLayout()})
            Cf = T.alloc_local((8,), "float32")
            for c1 in T.serial(1, annotations={'unroll': True}):
                T.ir.cuda.VectorCopy(dst=As, dst_offset=T.cast(0 + T.cast((c1 * 32 + tx) * 8 % 16, "int64") * 1 + T.cast((c1 * 32 + tx) * 8 // 16, "int64") * 16, "int32") ^ (T.cast(0 + T.cast((c1 * 32 + tx) * 8 % 16, "int64") * 1 + T.cast((c1 * 32 + tx) * 8 // 16, "int64") * 16, "int32") >> 6 & 7) << 3, src=A, src_offset=0 + T.cast((c1 * 32 + tx) * 8 % 16, "int64") * 1 + T.cast((c1 * 32 + tx) * 8 // 16, "int64") * 16, bytes=16)
            for c2 in T.serial(1, annotations={'unroll': True}):
                T.ir.cuda.VectorCopy(dst=Bs, dst_offset=T.cast(0 + T.cast((c2 * 32 + tx) * 8 % 16, "int64") * 1 + T.cast((c2 * 32 + tx) * 8 // 16, "int64") * 16, "int32") ^ (T.cast(0 + T.cast((c2 * 32 + tx) * 8 % 16, "int64") * 1 + T.cast((c2 * 32 + tx) * 8 // 16, "int64") * 16, "int32") >> 6 & 7) << 3, src=B, src_offset=0 + T.cast((c2 * 32 + tx) * 8 % 16, "int64") * 1 + T.cast((c2 * 32 + tx) * 8 // 16, "int64") * 16, bytes=16)
            for r3 in T.serial(8, annotations={'unroll': True}):
                Cf[r3] = 0.0
            T.ir.cuda.GemmCall(variant='ss', a=As, b=Bs, c=Cf, m=16, n=16, k=16, warps_m=1, warps_n=1, trans_a=False, trans_b=False, bf16=False, a_offset=T.int32(0), b_offset=T.int32(0))
            for r4 in T.serial(8, annotations={'unroll': True}):
                C[(tx % 32 >> 2) + (r4 >> 1 & 1) * 8, (r4 & 1) + (tx % 32 & 3) * 2 + (r4 >> 2) * 8] = Cf[r4]
    """

    assert_pass(target, "lower-to-threads", mma, expected, prefix=True)
