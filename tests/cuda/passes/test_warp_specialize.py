"""warp-specialize (CUDA), Before/Expected: a pipeline with a producer loop runs it on an extra
warpgroup; the consumers run the rest. Its input holds mbarrier rings and TMA copies, which the language
does not spell, so the Before is a kernel taken through the earlier passes."""

from __future__ import annotations

from tests.cuda.passes.kernels import SM90A, staged, tma_gemm
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


@pass_test("warp-specialize", SM90A)
def test_the_producer_loop_runs_on_one_thread_of_an_extra_warpgroup(target):
    """The producer loop runs on one thread of an extra warpgroup; the consumers run everything else."""
    # The block grows to 256 threads: threads >= 128 give up registers and thread 128 alone issues the
    # TMA loads; threads < 128 take registers and run the rings' setup, the gemm loop and the stores.

    expected = """
    @T.prim_func
    def tma_gemm(A: T.Tensor((64, 128), "float16"), B: T.Tensor((128, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256, annotations={'min_blocks_per_sm': 2}) as bx:
            tx = T.get_thread_binding(0)
            Cf = T.alloc_local((32,), "float32")
            As = T.alloc_shared((8192,), "float16")
            Bs = T.alloc_shared((8192,), "float16")
            if tx >= 128:
                T.ir.cuda.SetMaxNReg(regs=24, increase=False)
                if tx == 128:
                    for k in T.serial(2):
                        T.ir.cuda.MbarWait(ring=2, stage=k % 2, parity=(k // 2 + 1) % 2)
                        T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=As, dst_offset=k % 2 * 4096 + 0, src=A, box=(64, 64), swizzle=128, coords=(k * 64 + 0, 0)), T.ir.cuda.TmaLoad(dst=Bs, dst_offset=k % 2 * 4096 + 0, src=B, box=(64, 64), swizzle=128, coords=(0, k * 64))), bytes=16384, ring=1, stage=k % 2, elected=True)
            else:
                T.ir.cuda.SetMaxNReg(regs=232, increase=True)
                for r1 in T.serial(32, annotations={'unroll': True}):
                    Cf[r1] = 0.0
                T.ir.cuda.MbarRing(ring=1, stages=2)
                T.ir.cuda.MbarRing(ring=2, stages=2, arrivals=4)
                for k_1 in T.serial(2, annotations={'pipelined_buffers': (As, Bs)}):
                    T.ir.cuda.MbarWait(ring=1, stage=k_1 % 2, parity=k_1 // 2 % 2)
                    T.ir.cuda.GemmCall(variant='wgmma', a=As, b=Bs, c=Cf, m=64, n=64, k=64, warps_m=1, warps_n=1, trans_a=False, trans_b=False, bf16=False, a_offset=k_1 % 2 * 4096 + 0, b_offset=k_1 % 2 * 4096 + 0, atom_a=64, atom_b=64, wait=1)
                    if k_1 > 0:
                        T.ir.cuda.MbarArrive(ring=2, stage=(k_1 + 1) % 2)
                T.ir.cuda.WgmmaWait(pending=0, c=(Cf,))
                for v2 in T.serial(16, annotations={'unroll': True}):
                    T.ir.cuda.VectorStore(dst=C, dst_offset=0 + T.cast((tx % 32 & 3) * 2 + (v2 >> 1) * 8, "int64") * 1 + T.cast((tx % 32 >> 2) + (v2 & 1) * 8 + tx // 32 * 16, "int64") * 64, values=(Cf[v2 * 2], Cf[v2 * 2 + 1]))
    """

    assert_pass(target, "warp-specialize", tma_gemm, expected, prefix=True)


@pass_test("warp-specialize", SM90A)
def test_without_a_producer_loop_the_kernel_is_unchanged(target):
    """A cp.async pipeline (no TMA producer) keeps one warpgroup."""
    assert_pass(target, "warp-specialize", staged, UNCHANGED, prefix=True)
