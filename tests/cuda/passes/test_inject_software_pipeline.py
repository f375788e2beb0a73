"""inject-software-pipeline (CUDA), Before/Expected: a T.Pipelined loop overlaps the copies of later
stages with the compute of the current one. Its input holds the asynchronous copies lower-to-threads
made, which the language does not spell, so each Before is a kernel taken through the earlier passes."""

from __future__ import annotations

from tests.cuda.passes.kernels import (
    SM90A,
    decode_tiles,
    decode_tiles_kernel,
    guarded_staged,
    guarded_tma_gemm,
    staged,
    staged_in_body,
    tma_gemm,
)
from tests.transform.helpers import SM80
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("inject-software-pipeline", SM80)
def test_cp_async_copies_of_the_next_stage_are_issued_before_this_stage_is_read(target):
    """Iteration k waits for its stage, issues the next stage's copy, then reads its own stage."""
    # Two stages: the tile gets a stage dim; stage 0 is copied before the loop; iteration k waits for its
    # copy, issues stage k + 1's copy (if any), then reads stage k % 2; the loop ends with a wait.

    expected = """
    @T.prim_func
    def staged(A: T.Tensor((512,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((2, 128), "float32")
            acc = T.alloc_local((1,), "float32")
            for r1 in T.serial(1, annotations={'unroll': True}):
                acc[0] = 0.0
            if T.ir.keep(T.bool(True)):
                for c2 in T.serial(1, annotations={'unroll': True}):
                    if c2 * 128 + tx < 32:
                        T.ir.cuda.AsyncCopy(dst=s, dst_offset=0 + T.cast(0 + T.cast((c2 * 128 + tx) * 4, "int64") * 1, "int32"), src=A, src_offset=0 + T.cast(T.ir.Mul(dtype="int32", a=0, b=128) + (c2 * 128 + tx) * 4, "int64") * 1, bytes=16, valid=T.ir.Mul(dtype="int32", a=0, b=128) + (c2 * 128 + tx) * 4 < 512)
            T.ir.cuda.AsyncCommit()
            for k in T.serial(4, annotations={'pipelined_buffers': (s,)}):
                T.ir.cuda.AsyncWait(pending=0)
                T.sync_threads()
                if k + 1 < 4:
                    for c2_1 in T.serial(1, annotations={'unroll': True}):
                        if c2_1 * 128 + tx < 32:
                            T.ir.cuda.AsyncCopy(dst=s, dst_offset=(k + 1) % 2 * 128 + T.cast(0 + T.cast((c2_1 * 128 + tx) * 4, "int64") * 1, "int32"), src=A, src_offset=0 + T.cast((k + 1) * 128 + (c2_1 * 128 + tx) * 4, "int64") * 1, bytes=16, valid=(k + 1) * 128 + (c2_1 * 128 + tx) * 4 < 512)
                T.ir.cuda.AsyncCommit()
                for r3 in T.serial(1, annotations={'unroll': True}):
                    acc[0] = acc[0] + s[k % 2, tx % 32 + tx // 32 * 32]
            T.ir.cuda.AsyncWait(pending=0)
            for r4 in T.serial(1, annotations={'unroll': True}):
                B[tx % 32 + tx // 32 * 32] = acc[0]
    """

    assert_pass(target, "inject-software-pipeline", staged, expected, prefix=True)


@pass_test("inject-software-pipeline", SM80)
def test_a_tile_allocated_in_the_loop_body_is_allocated_around_the_loop_and_staged(target):
    """A tile the loop body allocates (TileLang's mhc_pre allocates its tiles inside T.Pipelined) is
    allocated once around the loop, so its copy is a producer the pipeline stages like any other."""
    # As the first test: the stage dim, the prologue, and per iteration wait, barrier, next copy, compute;
    # only the allocation of s moved out of the loop (it wrapped the whole body, which was then neither
    # a copy nor a consumer, and stayed synchronous: commit and wait 0 after the copy).

    expected = """
    @T.prim_func
    def staged_in_body(A: T.Tensor((512,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            acc = T.alloc_local((1,), "float32")
            for r1 in T.serial(1, annotations={'unroll': True}):
                acc[0] = 0.0
            with T.ir.scope():
                s = T.alloc_shared((2, 128), "float32")
                if T.ir.keep(T.bool(True)):
                    for c2 in T.serial(1, annotations={'unroll': True}):
                        if c2 * 128 + tx < 32:
                            T.ir.cuda.AsyncCopy(dst=s, dst_offset=0 + T.cast(0 + T.cast((c2 * 128 + tx) * 4, "int64") * 1, "int32"), src=A, src_offset=0 + T.cast(T.ir.Mul(dtype="int32", a=0, b=128) + (c2 * 128 + tx) * 4, "int64") * 1, bytes=16, valid=T.ir.Mul(dtype="int32", a=0, b=128) + (c2 * 128 + tx) * 4 < 512)
                T.ir.cuda.AsyncCommit()
                for k in T.serial(4, annotations={'pipelined_buffers': (s,)}):
                    T.ir.cuda.AsyncWait(pending=0)
                    T.sync_threads()
                    if k + 1 < 4:
                        for c2_1 in T.serial(1, annotations={'unroll': True}):
                            if c2_1 * 128 + tx < 32:
                                T.ir.cuda.AsyncCopy(dst=s, dst_offset=(k + 1) % 2 * 128 + T.cast(0 + T.cast((c2_1 * 128 + tx) * 4, "int64") * 1, "int32"), src=A, src_offset=0 + T.cast((k + 1) * 128 + (c2_1 * 128 + tx) * 4, "int64") * 1, bytes=16, valid=(k + 1) * 128 + (c2_1 * 128 + tx) * 4 < 512)
                    T.ir.cuda.AsyncCommit()
                    for r3 in T.serial(1, annotations={'unroll': True}):
                        acc[0] = acc[0] + s[k % 2, tx % 32 + tx // 32 * 32]
                T.ir.cuda.AsyncWait(pending=0)
            for r4 in T.serial(1, annotations={'unroll': True}):
                B[tx % 32 + tx // 32 * 32] = acc[0]
    """

    assert_pass(target, "inject-software-pipeline", staged_in_body, expected, prefix=True)


@pass_test("inject-software-pipeline", SM90A)
def test_tma_copies_feed_wgmma_through_full_and_empty_mbarrier_rings(target):
    """TMA copies feeding wgmma go through a producer loop and full and empty mbarrier rings."""
    # One producer loop issues both tiles' TMA loads into stage k % 2 after waiting on the empty ring;
    # the consumer loop waits on the full ring, runs the gemm, and releases the previous stage.

    expected = """
    @T.prim_func
    def tma_gemm(A: T.Tensor((64, 128), "float16"), B: T.Tensor((128, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            As = T.alloc_shared((2, 64, 64), "float16")
            T.annotate_layout({As: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=64, atom=64)})
            Bs = T.alloc_shared((2, 64, 64), "float16")
            T.annotate_layout({Bs: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=64, atom=64)})
            Cf = T.alloc_local((32,), "float32")
            for r1 in T.serial(32, annotations={'unroll': True}):
                Cf[r1] = 0.0
            T.ir.cuda.MbarRing(ring=1, stages=2)
            T.ir.cuda.MbarRing(ring=2, stages=2, arrivals=4)
            with T.ir.cuda.ProducerLoop(consumer_threads=128):
                for k in T.serial(2):
                    T.ir.cuda.MbarWait(ring=2, stage=k % 2, parity=(k // 2 + 1) % 2)
                    T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=As, dst_offset=k % 2 * 4096 + 0, src=A, box=(64, 64), swizzle=128, coords=(k * 64 + 0, 0)), T.ir.cuda.TmaLoad(dst=Bs, dst_offset=k % 2 * 4096 + 0, src=B, box=(64, 64), swizzle=128, coords=(0, k * 64))), bytes=16384, ring=1, stage=k % 2, elected=True)
            for k_1 in T.serial(2, annotations={'pipelined_buffers': (As, Bs)}):
                T.ir.cuda.MbarWait(ring=1, stage=k_1 % 2, parity=k_1 // 2 % 2)
                T.ir.cuda.GemmCall(variant='wgmma', a=As, b=Bs, c=Cf, m=64, n=64, k=64, warps_m=1, warps_n=1, trans_a=False, trans_b=False, bf16=False, a_offset=k_1 % 2 * 4096 + 0, b_offset=k_1 % 2 * 4096 + 0, atom_a=64, atom_b=64, wait=1)
                if k_1 > 0:
                    T.ir.cuda.MbarArrive(ring=2, stage=(k_1 + 1) % 2)
            T.ir.cuda.WgmmaWait(pending=0, c=(Cf,))
            for v2 in T.serial(16, annotations={'unroll': True}):
                T.ir.cuda.VectorStore(dst=C, dst_offset=0 + T.cast((tx % 32 & 3) * 2 + (v2 >> 1) * 8, "int64") * 1 + T.cast((tx % 32 >> 2) + (v2 & 1) * 8 + tx // 32 * 16, "int64") * 64, values=(Cf[v2 * 2 + 0], Cf[v2 * 2 + 1]))
    """

    assert_pass(target, "inject-software-pipeline", tma_gemm, expected, prefix=True)


@pass_test("inject-software-pipeline", SM80)
def test_a_guarded_loop_issues_and_consumes_only_the_iterations_its_guard_takes(target):
    """Under a block-uniform guard, iteration k issues tile k + 1 only where the guard takes it and consumes
    its own stage only where the guard takes k; the group count and the barrier stay unconditional."""
    # Stages stay on k (a skipped iteration leaves its stage unused): every iteration still commits one
    # group, waits and meets the others at the barrier, so the waits count the same groups as without
    # the guard; the guard at k + 1 is read only for an iteration that exists.

    expected = """
    @T.prim_func
    def guarded_staged(A: T.Tensor((512,), "float32"), Mask: T.Tensor((4,), "bool"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((2, 128), "float32")
            acc = T.alloc_local((1,), "float32")
            for r1 in T.serial(1, annotations={'unroll': True}):
                acc[0] = 0.0
            if T.ir.keep(T.bool(True)):
                if Mask[0]:
                    for c2 in T.serial(1, annotations={'unroll': True}):
                        if c2 * 128 + tx < 32:
                            T.ir.cuda.AsyncCopy(dst=s, dst_offset=0 + T.cast(0 + T.cast((c2 * 128 + tx) * 4, "int64") * 1, "int32"), src=A, src_offset=0 + T.cast(T.ir.Mul(dtype="int32", a=0, b=128) + (c2 * 128 + tx) * 4, "int64") * 1, bytes=16, valid=T.ir.Mul(dtype="int32", a=0, b=128) + (c2 * 128 + tx) * 4 < 512)
            T.ir.cuda.AsyncCommit()
            for k in T.serial(4, annotations={'pipelined_buffers': (s,)}):
                T.ir.cuda.AsyncWait(pending=0)
                T.sync_threads()
                if k + 1 < 4:
                    if Mask[k + 1]:
                        for c2_1 in T.serial(1, annotations={'unroll': True}):
                            if c2_1 * 128 + tx < 32:
                                T.ir.cuda.AsyncCopy(dst=s, dst_offset=(k + 1) % 2 * 128 + T.cast(0 + T.cast((c2_1 * 128 + tx) * 4, "int64") * 1, "int32"), src=A, src_offset=0 + T.cast((k + 1) * 128 + (c2_1 * 128 + tx) * 4, "int64") * 1, bytes=16, valid=(k + 1) * 128 + (c2_1 * 128 + tx) * 4 < 512)
                T.ir.cuda.AsyncCommit()
                if Mask[k]:
                    for r3 in T.serial(1, annotations={'unroll': True}):
                        acc[0] = acc[0] + s[k % 2, tx % 32 + tx // 32 * 32]
            T.ir.cuda.AsyncWait(pending=0)
            for r4 in T.serial(1, annotations={'unroll': True}):
                B[tx % 32 + tx // 32 * 32] = acc[0]
    """

    assert_pass(target, "inject-software-pipeline", guarded_staged, expected, prefix=True)


@pass_test("inject-software-pipeline", SM90A)
def test_a_guarded_warp_specialized_ring_advances_on_the_taken_count(target):
    """Producer and consumers of a guarded loop each count the iterations the guard takes and put the
    ring's stage and phase on that count, not on k."""
    # The producer loads iteration k into stage loaded % 2 after waiting for it to be empty; the consumers
    # wait for tile taken % 2 and release the stage of the previous taken tile, so skipped iterations
    # leave no hole in the ring and the waits on both sides see the same sequence of tiles.

    expected = """
    @T.prim_func
    def guarded_tma_gemm(A: T.Tensor((64, 128), "float16"), B: T.Tensor((128, 64), "float16"), Mask: T.Tensor((2,), "bool"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            As = T.alloc_shared((2, 64, 64), "float16")
            T.annotate_layout({As: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=64, atom=64)})
            Bs = T.alloc_shared((2, 64, 64), "float16")
            T.annotate_layout({Bs: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=64, atom=64)})
            Cf = T.alloc_local((32,), "float32")
            for r1 in T.serial(32, annotations={'unroll': True}):
                Cf[r1] = 0.0
            T.ir.cuda.MbarRing(ring=1, stages=2)
            T.ir.cuda.MbarRing(ring=2, stages=2, arrivals=4)
            with T.ir.cuda.ProducerLoop(consumer_threads=128):
                loaded = T.alloc_var("int32")
                loaded = 0
                for k in T.serial(2):
                    if Mask[k]:
                        loaded_k: T.int32 = loaded
                        loaded = loaded_k + 1
                        T.ir.cuda.MbarWait(ring=2, stage=loaded_k % 2, parity=(loaded_k // 2 + 1) % 2)
                        T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=As, dst_offset=loaded_k % 2 * 4096 + 0, src=A, box=(64, 64), swizzle=128, coords=(k * 64 + 0, 0)), T.ir.cuda.TmaLoad(dst=Bs, dst_offset=loaded_k % 2 * 4096 + 0, src=B, box=(64, 64), swizzle=128, coords=(0, k * 64))), bytes=16384, ring=1, stage=loaded_k % 2, elected=True)
            with T.ir.scope():
                taken = T.alloc_var("int32")
                taken = 0
                for k_1 in T.serial(2, annotations={'pipelined_buffers': (As, Bs)}):
                    if Mask[k_1]:
                        taken_k: T.int32 = taken
                        taken = taken_k + 1
                        T.ir.cuda.MbarWait(ring=1, stage=taken_k % 2, parity=taken_k // 2 % 2)
                        T.ir.cuda.GemmCall(variant='wgmma', a=As, b=Bs, c=Cf, m=64, n=64, k=64, warps_m=1, warps_n=1, trans_a=False, trans_b=False, bf16=False, a_offset=taken_k % 2 * 4096 + 0, b_offset=taken_k % 2 * 4096 + 0, atom_a=64, atom_b=64, wait=1)
                        if taken_k > 0:
                            T.ir.cuda.MbarArrive(ring=2, stage=(taken_k + 1) % 2)
            T.ir.cuda.WgmmaWait(pending=0, c=(Cf,))
            for v2 in T.serial(16, annotations={'unroll': True}):
                T.ir.cuda.VectorStore(dst=C, dst_offset=0 + T.cast((tx % 32 & 3) * 2 + (v2 >> 1) * 8, "int64") * 1 + T.cast((tx % 32 >> 2) + (v2 & 1) * 8 + tx // 32 * 16, "int64") * 64, values=(Cf[v2 * 2 + 0], Cf[v2 * 2 + 1]))
    """

    assert_pass(target, "inject-software-pipeline", guarded_tma_gemm, expected, prefix=True)


@pass_test("inject-software-pipeline", SM90A)
def test_a_guarded_tma_ring_without_a_producer_completes_the_gemm_in_flight_when_skipping(target):
    """Without warp specialization a guarded TMA ring stays on k; a skipped iteration completes the wgmma
    group still in flight before the refill of the previous iteration's stage."""
    # The taken iteration waits for its stage and leaves its wgmma in flight (wait=1), which the next
    # taken one retires; a skipped one waits for it (wait_group 0) instead, since the refill below the
    # barrier overwrites stage (k - 1) % 2, which that group may still read.

    expected = """
    @T.prim_func
    def guarded_tma_gemm(A: T.Tensor((64, 128), "float16"), B: T.Tensor((128, 64), "float16"), Mask: T.Tensor((2,), "bool"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            As = T.alloc_shared((2, 64, 64), "float16")
            T.annotate_layout({As: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=64, atom=64)})
            Bs = T.alloc_shared((2, 64, 64), "float16")
            T.annotate_layout({Bs: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=64, atom=64)})
            Cf = T.alloc_local((32,), "float32")
            for r1 in T.serial(32, annotations={'unroll': True}):
                Cf[r1] = 0.0
            T.ir.cuda.MbarRing(ring=1, stages=2, arrivals=2)
            if T.ir.keep(T.bool(True)):
                if Mask[0]:
                    T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=As, dst_offset=0, src=A, box=(64, 64), swizzle=128, coords=(T.ir.Mul(dtype="int32", a=0, b=64) + 0, 0)),), bytes=8192, ring=1, stage=T.int32(0))
                    T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Bs, dst_offset=0, src=B, box=(64, 64), swizzle=128, coords=(0, T.ir.Mul(dtype="int32", a=0, b=64))),), bytes=8192, ring=1, stage=T.int32(0))
            for k in T.serial(2, annotations={'pipelined_buffers': (As, Bs)}):
                if Mask[k]:
                    T.ir.cuda.MbarWait(ring=1, stage=k % 2)
                    T.ir.cuda.GemmCall(variant='wgmma', a=As, b=Bs, c=Cf, m=64, n=64, k=64, warps_m=1, warps_n=1, trans_a=False, trans_b=False, bf16=False, a_offset=k % 2 * 4096 + 0, b_offset=k % 2 * 4096 + 0, atom_a=64, atom_b=64, wait=1)
                else:
                    T.ir.cuda.WgmmaWait(pending=0, c=(Cf,))
                T.sync_threads()
                if k + 1 < 2:
                    if Mask[k + 1]:
                        T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=As, dst_offset=(k + 1) % 2 * 4096 + 0, src=A, box=(64, 64), swizzle=128, coords=((k + 1) * 64 + 0, 0)),), bytes=8192, ring=1, stage=(k + 1) % 2)
                        T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Bs, dst_offset=(k + 1) % 2 * 4096 + 0, src=B, box=(64, 64), swizzle=128, coords=(0, (k + 1) * 64)),), bytes=8192, ring=1, stage=(k + 1) % 2)
            T.ir.cuda.WgmmaWait(pending=0, c=(Cf,))
            for v2 in T.serial(16, annotations={'unroll': True}):
                T.ir.cuda.VectorStore(dst=C, dst_offset=0 + T.cast((tx % 32 & 3) * 2 + (v2 >> 1) * 8, "int64") * 1 + T.cast((tx % 32 >> 2) + (v2 & 1) * 8 + tx // 32 * 16, "int64") * 64, values=(Cf[v2 * 2 + 0], Cf[v2 * 2 + 1]))
    """

    assert_pass(target, "inject-software-pipeline", guarded_tma_gemm, expected, prefix=True,
                pass_configs={"tl.disable_warp_specialized": True})  # fmt: skip


@pass_test("inject-software-pipeline", SM90A)
def test_a_tma_ring_without_a_producer_waits_and_refills_each_tile_at_its_own_readers(target):
    """Without warp specialization, a loop with code besides its gemms gets a ring per copy: K's tile is
    waited for right before Q @ K^T and V's before P @ V (V loads during the first gemm and the cast),
    and each tile is refilled right after its reader, behind a barrier, with the tile two iterations
    on, so both stages are in flight from the prologue."""
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
            T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Qs, dst_offset=0, src=Q, box=(64, 64), swizzle=128, coords=(0, 0)),), bytes=8192)
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

    assert_pass(target, "inject-software-pipeline", decode_tiles, expected, prefix=True,
                pass_configs={"tl.disable_warp_specialized": True})  # fmt: skip


@pass_test("inject-software-pipeline", SM90A)
def test_one_stage_per_tile_still_loads_a_tile_while_the_other_is_read(target):
    """num_stages=1 without warp specialization (TileLang's fused MoE asks for it): each tile has one
    stage, refilled with the next iteration's tile right after its reader, so K(k+1) loads during the cast
    and P @ V(k), and V(k+1) during Q @ K(k+1)^T; one ring for both tiles could not prefetch at all."""
    expected = """
    @T.prim_func
    def decode_tiles(Q: T.Tensor((64, 64), "float16"), K: T.Tensor((256, 64), "float16"), V: T.Tensor((256, 64), "float16"), Out: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            Qs = T.alloc_shared((64, 64), "float16")
            T.annotate_layout({Qs: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=64, atom=64)})
            Ks = T.alloc_shared((1, 64, 64), "float16")
            T.annotate_layout({Ks: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=64, atom=64)})
            Vs = T.alloc_shared((1, 64, 64), "float16")
            T.annotate_layout({Vs: T.ir.cuda.SharedLayout(kind='wgmma', rows=64, row_length=64, atom=64)})
            S = T.alloc_local((32,), "float32")
            P = T.alloc_local((32,), "float16")
            Of = T.alloc_local((32,), "float32")
            T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Qs, dst_offset=0, src=Q, box=(64, 64), swizzle=128, coords=(0, 0)),), bytes=8192)
            for r1 in T.serial(32, annotations={'unroll': True}):
                Of[r1] = 0.0
            T.ir.cuda.MbarRing(ring=1, stages=1)
            T.ir.cuda.MbarRing(ring=2, stages=1)
            if T.ir.keep(T.bool(True)):
                T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Ks, dst_offset=0, src=K, box=(64, 64), swizzle=128, coords=(0, T.ir.Mul(dtype="int32", a=0, b=64))),), bytes=8192, ring=1, stage=T.int32(0))
            if T.ir.keep(T.bool(True)):
                T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Vs, dst_offset=0, src=V, box=(64, 64), swizzle=128, coords=(0, T.ir.Mul(dtype="int32", a=0, b=64))),), bytes=8192, ring=2, stage=T.int32(0))
            for k in T.serial(4, annotations={'pipelined_buffers': (Ks, Vs)}):
                for r2 in T.serial(32, annotations={'unroll': True}):
                    S[r2] = 0.0
                T.ir.cuda.MbarWait(ring=1, stage=T.int32(0))
                T.ir.cuda.GemmCall(variant='wgmma', a=Qs, b=Ks, c=S, m=64, n=64, k=64, warps_m=1, warps_n=1, trans_a=False, trans_b=True, bf16=False, a_offset=T.int32(0), b_offset=T.int32(0), atom_a=64, atom_b=64)
                T.sync_threads()
                if k + 1 < 4:
                    T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Ks, dst_offset=0, src=K, box=(64, 64), swizzle=128, coords=(0, (k + 1) * 64)),), bytes=8192, ring=1, stage=T.int32(0))
                for r3 in T.serial(32, annotations={'unroll': True}):
                    P[r3] = T.cast(S[r3], "float16")
                T.ir.cuda.MbarWait(ring=2, stage=T.int32(0))
                T.ir.cuda.GemmCall(variant='wgmma_rs', a=P, b=Vs, c=Of, m=64, n=64, k=64, warps_m=1, warps_n=1, trans_a=False, trans_b=False, bf16=False, b_offset=T.int32(0), atom_b=64)
                T.sync_threads()
                if k + 1 < 4:
                    T.ir.cuda.TmaCopy(loads=(T.ir.cuda.TmaLoad(dst=Vs, dst_offset=0, src=V, box=(64, 64), swizzle=128, coords=(0, (k + 1) * 64)),), bytes=8192, ring=2, stage=T.int32(0))
            for v4 in T.serial(16, annotations={'unroll': True}):
                T.ir.cuda.VectorStore(dst=Out, dst_offset=0 + T.cast((tx % 32 & 3) * 2 + (v4 >> 1) * 8, "int64") * 1 + T.cast((tx % 32 >> 2) + (v4 & 1) * 8 + tx // 32 * 16, "int64") * 64, values=(Of[v4 * 2 + 0], Of[v4 * 2 + 1]))
    """  # noqa: E501

    assert_pass(target, "inject-software-pipeline", decode_tiles_kernel(1), expected, prefix=True,
                pass_configs={"tl.disable_warp_specialized": True})  # fmt: skip
