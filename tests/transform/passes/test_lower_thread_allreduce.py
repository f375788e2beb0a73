"""lower-thread-allreduce, Before/Expected: TVM's thread all-reduce becomes per-thread code: a butterfly
of lane exchanges over the reduced bits that name lanes (where the target has an exchange), then each
thread's value in a shared slot, a barrier, and each thread combining its partners' slots in one order."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import assert_pass, pass_test, run_pass

HIP = "hip -arch=gfx942"
METAL = "metal -family=apple7"


def before():
    @T.prim_func
    def before(A: T.Tensor((64,), "float32"), B: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=(2, 32)):
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            out = T.alloc_local((1,), "float32")
            with T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), "reduce_scope",
                        T.reinterpret(T.uint64(0), dtype="handle")):  # fmt: skip
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), A[tk * 2 + tn], True, out[0], tk, dtype="handle"))
            B[tn] = out[0]

    return before


@pass_test("lower-thread-allreduce", "c", OPENCL, WEBGPU)
def test_without_an_exchange_every_axis_goes_through_shared_memory(target):
    """Reducing over threadIdx.y of a (2, 32) block: 32 slots two apart, read in one order by every thread."""

    @T.prim_func
    def expected(A: T.Tensor((64,), "float32"), B: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            out = T.alloc_local((1,), "float32")
            with T.ir.scope():
                acc = T.alloc_var("float32")
                acc = A[tx // 2 * 2 + tx % 2]
                smem = T.alloc_shared((64,), "float32")
                total = T.alloc_var("float32")
                smem[tx] = acc
                T.sync_threads()
                total = 0.0
                for j in T.serial(32):
                    total = total + smem[tx - tx // 2 * 2 + j * 2]
                out[0] = total
            B[tx % 2] = out[0]

    assert_pass(target, "lower-thread-allreduce", before(), expected, prefix=True)


@pass_test("lower-thread-allreduce", SM80, METAL)
def test_lane_bits_go_through_exchanges_and_the_warp_bit_through_shared_memory(target):
    """Threads 2 apart in a (2, 32) block: lane bits 1..4 by shuffles, bit 5 (the warp) through shared memory."""

    @T.prim_func
    def expected(A: T.Tensor((64,), "float32"), B: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            out = T.alloc_local((1,), "float32")
            with T.ir.scope():
                acc = T.alloc_var("float32")
                acc = A[tx // 2 * 2 + tx % 2]
                for mask in (2, 4, 8, 16):
                    acc = acc + _shuffle(target, acc, mask)
                smem = T.alloc_shared((64,), "float32")
                total = T.alloc_var("float32")
                smem[tx] = acc
                T.sync_threads()
                total = 0.0
                for j in T.serial(2):
                    total = total + smem[tx - tx // 32 * 32 + j * 32]
                out[0] = total
            B[tx % 2] = out[0]

    assert_pass(target, "lower-thread-allreduce", before(), expected, prefix=True)


def _shuffle(target, value, mask):
    """The target's own lane exchange (the pass asks the target for it)."""
    from tilecraft.backend.target import Target
    from tilecraft.cuda.intrinsics.simt import cuda_simt
    from tilecraft.hip.intrinsics.simt import hip_simt
    from tilecraft.metal.simt import metal_simt

    parsed = Target.parse(target)
    simt = {"cuda": cuda_simt, "hip": hip_simt, "metal": metal_simt}[parsed.kind]
    return simt(parsed).exchange(value, mask)


@pass_test("lower-thread-allreduce", HIP)
def test_on_wavefronts_of_64_every_reduced_bit_is_a_lane_bit(target):
    """A (2, 32) block is one wavefront: five exchanges and no shared memory."""

    @T.prim_func
    def expected(A: T.Tensor((64,), "float32"), B: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            out = T.alloc_local((1,), "float32")
            with T.ir.scope():
                acc = T.alloc_var("float32")
                acc = A[tx // 2 * 2 + tx % 2]
                for mask in (2, 4, 8, 16, 32):
                    acc = acc + _shuffle(target, acc, mask)
                out[0] = acc
            B[tx % 2] = out[0]

    assert_pass(target, "lower-thread-allreduce", before(), expected, prefix=True)


@pytest.mark.parametrize("target", ["c", SM80])
def test_an_allreduce_some_threads_skip_is_located(target):
    """Every thread must reach the all-reduce: under a branch on the thread index it is a located error."""

    @T.prim_func
    def skipped(A: T.Tensor((64,), "float32"), B: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=(2, 32)):
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            out = T.alloc_local((1,), "float32")
            if tn == 0:
                with T.attr(T.comm_reducer(lambda x, y: T.max(x, y), [T.float32(0)]), "reduce_scope", 0):
                    T.evaluate(T.tvm_thread_allreduce(1, A[tk * 2], True, out[0], tk))
            B[tn] = out[0]

    with pytest.raises(LoweringError, match="every thread of the block must reach it") as err:
        run_pass(target, "lower-thread-allreduce", skipped, prefix=True)
    assert "T.tvm_thread_allreduce" in str(err.value)
