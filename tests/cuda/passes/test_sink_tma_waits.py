"""sink-tma-waits (CUDA), Before/Expected: a TMA load outside a pipeline is waited for at the first
statement that names its tile, on a barrier of its own, so the loads issued in between fly with it."""

from __future__ import annotations

from tests.cuda.passes.kernels import SM90A, decode_tiles
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test

NO_PRODUCER = {"tl.disable_warp_specialized": True}


@pass_test("sink-tma-waits", SM90A)
def test_q_is_waited_for_below_the_pipeline_prologue(target):
    """Q's wait moves past the accumulator's clear and the first K and V loads of the pipeline, to the
    loop, whose gemm is the first to read Qs; the copy arrives on ring 3, of one stage."""
    expected = """
    @T.prim_func
    def decode_tiles(Q: T.Tensor((64, 64), "float16"), K: T.Tensor((256, 64), "float16"), V: T.Tensor((256, 64), "float16"), Out: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            Qs = T.alloc_shared((64, 64), "float16")
            T.annotate_layout({Qs: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=64, atom=64)})
            Ks = T.alloc_shared((2, 64, 64), "float16")
            T.annotate_layout({Ks: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=64, atom=64)})
            Vs = T.alloc_shared((2, 64, 64), "float16")
            T.annotate_layout({Vs: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=64, atom=64)})
            S = T.alloc_local((32,), "float32")
            P = T.alloc_local((32,), "float16")
            Of = T.alloc_local((32,), "float32")
            T.ir.cuda.MbarRing(ring=3, stages=1)
            T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Qs, dst_offset=0, src=Q, box=(64, 64), swizzle=128, coords=(0, 0)),), bytes=8192, ring=3)
            for r1 in T.serial(32, annotations={'unroll': True}):
                Of[r1] = 0.0
            T.ir.cuda.MbarRing(ring=1, stages=2)
            T.ir.cuda.MbarRing(ring=2, stages=2)
            if T.ir.keep(T.bool(True)):
                T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Ks, dst_offset=0, src=K, box=(64, 64), swizzle=128, coords=(0, T.ir.Mul(dtype="int32", a=0, b=64))),), bytes=8192, ring=1, stage=T.int32(0))
            if T.ir.keep(T.bool(True)):
                T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Vs, dst_offset=0, src=V, box=(64, 64), swizzle=128, coords=(0, T.ir.Mul(dtype="int32", a=0, b=64))),), bytes=8192, ring=2, stage=T.int32(0))
            if T.ir.keep(T.bool(True)):
                T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Ks, dst_offset=4096, src=K, box=(64, 64), swizzle=128, coords=(0, T.ir.Mul(dtype="int32", a=1, b=64))),), bytes=8192, ring=1, stage=T.int32(1))
            if T.ir.keep(T.bool(True)):
                T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Vs, dst_offset=4096, src=V, box=(64, 64), swizzle=128, coords=(0, T.ir.Mul(dtype="int32", a=1, b=64))),), bytes=8192, ring=2, stage=T.int32(1))
            T.ir.cuda.MbarWait(ring=3, stage=0)
            for k in T.serial(4, annotations={'pipelined_buffers': (Ks, Vs)}):
                for r2 in T.serial(32, annotations={'unroll': True}):
                    S[r2] = 0.0
                T.ir.cuda.MbarWait(ring=1, stage=k % 2)
                T.ir.cuda.GemmCall(variant='wgmma', a=Qs, b=Ks, c=S, m=64, n=64, k=64, warps_m=1, warps_n=1, trans_a=False, trans_b=True, bf16=False, a_offset=T.int32(0), b_offset=k % 2 * 4096 + 0, atom_a=64, atom_b=64)
                T.sync_threads()
                if k + 2 < 4:
                    T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Ks, dst_offset=(k + 2) % 2 * 4096 + 0, src=K, box=(64, 64), swizzle=128, coords=(0, (k + 2) * 64)),), bytes=8192, ring=1, stage=(k + 2) % 2)
                for r3 in T.serial(32, annotations={'unroll': True}):
                    P[r3] = T.cast(S[r3], "float16")
                T.ir.cuda.MbarWait(ring=2, stage=k % 2)
                T.ir.cuda.GemmCall(variant='wgmma_rs', a=P, b=Vs, c=Of, m=64, n=64, k=64, warps_m=1, warps_n=1, trans_a=False, trans_b=False, bf16=False, b_offset=k % 2 * 4096 + 0, atom_b=64)
                T.sync_threads()
                if k + 2 < 4:
                    T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Vs, dst_offset=(k + 2) % 2 * 4096 + 0, src=V, box=(64, 64), swizzle=128, coords=(0, (k + 2) * 64)),), bytes=8192, ring=2, stage=(k + 2) % 2)
            for v4 in T.serial(16, annotations={'unroll': True}):
                T.ir.cuda.VectorStore(dst=Out, dst_offset=0 + T.cast((tx % 32 & 3) * 2 + (v4 >> 1) * 8, "int64") * 1 + T.cast((tx % 32 >> 2) + (v4 & 1) * 8 + tx // 32 * 16, "int64") * 64, values=(Of[v4 * 2 + 0], Of[v4 * 2 + 1]))
    """  # noqa: E501
    assert_pass(target, "sink-tma-waits", decode_tiles, expected, prefix=True, pass_configs=NO_PRODUCER)


@pass_test("sink-tma-waits", SM90A)
def test_a_kernel_with_a_producer_warpgroup_keeps_its_waits(target):
    """The warp-specialized kernel's code before the loop becomes the consumers' later; it is left alone."""
    assert_pass(target, "sink-tma-waits", decode_tiles, UNCHANGED, prefix=True)
