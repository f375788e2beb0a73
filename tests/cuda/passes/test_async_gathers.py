"""async-gathers (CUDA), Before/Expected: in a T.Pipelined loop, a thread's run of elements gathered into a
shared tile becomes one zero-filling cp.async when the run is consecutive and aligned on both sides and
under one guard; a run that is not stays as it is. The input is per-thread code that lower-to-threads
made, so each Before is a kernel taken through the earlier passes."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import SM80
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


def _gather(bound: int):
    @T.prim_func
    def gather(A: T.Tensor((64, 64), "float16"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((8, 32), "float16")
            acc = T.alloc_fragment((8,), "float32")
            T.clear(acc)
            for k in T.Pipelined(2, num_stages=2):
                for i, j in T.Parallel(8, 32):
                    if k * 32 + j < bound:
                        s[i, j] = A[i, k * 32 + j]
                    else:
                        s[i, j] = 0
                for i in T.Parallel(8):
                    acc[i] = acc[i] + s[i, 0]
            T.copy(acc, B)

    return gather


@pass_test("async-gathers", SM80)
def test_runs_of_16_bytes_under_one_guard_become_cp_async(target):
    """Thread tx's 8 columns (tx % 4) * 8 .. + 7 of row tx // 4 are one 16-byte chunk on both sides, and the
    guard k * 32 + j < 48 is the same for all of them (48 is a multiple of 8): one AsyncCopy, zero-filled
    where the guard is false."""
    expected = """
    @T.prim_func
    def gather(A: T.Tensor((64, 64), "float16"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((8, 32), "float16")
            acc = T.alloc_local((1,), "float32")
            for r1 in T.serial(1, annotations={'unroll': True}):
                acc[0] = 0.0
            for k in T.Pipelined(2, num_stages=2):
                T.ir.cuda.AsyncCopy(dst=s, dst_offset=(tx % 32 & 3) * 8 + (tx % 32 >> 2) * 32, src=A, src_offset=T.cast(k * 32 + (tx % 32 & 3) * 8 + (tx % 32 >> 2) * 64, "int64"), bytes=16, valid=k * 32 + (tx % 32 & 3) * 8 - 48 < 0)
                for r3 in T.serial(1, annotations={'unroll': True}):
                    acc[0] = acc[0] + T.cast(s[tx % 32 & 7, 0], "float32")
            for r4 in T.serial(1, annotations={'unroll': True}):
                if tx % 32 & 24 == 0:
                    B[tx % 32 & 7] = acc[0]
    """
    assert_pass(target, "async-gathers", _gather(48), expected, prefix=True, as_text=True)


@pass_test("async-gathers", SM80)
def test_a_bound_inside_every_run_leaves_the_gather_as_it_is(target):
    """47 falls inside a run of 8 and of 2 columns alike: no chunk has one guard."""
    assert_pass(target, "async-gathers", _gather(47), UNCHANGED, prefix=True)
