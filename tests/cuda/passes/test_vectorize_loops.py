"""vectorize-loops (CUDA), Before/Expected: a `T.vectorized` copy of one run between global memory and a
per-thread array becomes one VectorCopy when the index arithmetic proves the run contiguous and aligned;
a run that is not stays a loop."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import SM80
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


def _runs(start: int):
    @T.prim_func
    def runs(A: T.Tensor((4, 256), "float16"), B: T.Tensor((4, 256), "float16")):
        with T.Kernel(4, threads=32) as bx:
            tx = T.get_thread_binding(0)
            regs = T.alloc_local((8,), "float16")
            for v in T.vectorized(8):
                regs[v] = A[bx, tx * 8 + start + v]
            for v in T.vectorized(8):
                B[bx, tx * 8 + start + v] = regs[v]

    return runs


@pass_test("vectorize-loops", SM80)
def test_aligned_runs_become_16_byte_copies(target):
    """Thread tx's 8 float16 of row bx start at bx * 256 + tx * 8, a multiple of 8: one 16-byte load into
    the registers and one store out of them."""
    expected = """
    @T.prim_func
    def runs(A: T.Tensor((4, 256), "float16"), B: T.Tensor((4, 256), "float16")):
        with T.Kernel(4, threads=32) as bx:
            tx = T.get_thread_binding(0)
            regs = T.alloc_local((8,), "float16")
            T.ir.cuda.VectorCopy(dst=regs, dst_offset=0, src=A, src_offset=T.cast(bx, "int64") * 256 + T.cast(tx * 8, "int64"), bytes=16)
            T.ir.cuda.VectorCopy(dst=B, dst_offset=T.cast(bx, "int64") * 256 + T.cast(tx * 8, "int64"), src=regs, src_offset=0, bytes=16)
    """  # noqa: E501
    assert_pass(target, "vectorize-loops", _runs(0), expected, prefix=True)


@pass_test("vectorize-loops", SM80)
def test_a_run_off_its_alignment_stays_a_loop(target):
    """Starting at tx * 8 + 4, a run of 8 crosses a 16-byte boundary: no vector access holds it."""
    assert_pass(target, "vectorize-loops", _runs(4), UNCHANGED, prefix=True)
