"""TileLang's explicit warp specialization on the CPU target (`T.ws`, `T.alloc_barrier`, the mbarrier
operations, `T.tma_copy`): thread groups run one after the other in program order, and an mbarrier is a
counter this order must satisfy; a wait it cannot satisfy raises, naming the wait."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.cuda.test_thread_groups import WS, ws_gemm, ws_inputs
from tilecraft.errors import ParseError, TilecraftError
from tilecraft.ir.structural import structural_equal


def test_a_warp_specialized_gemm_runs():
    a, b, want = ws_inputs(1)
    c = np.full((WS, WS), np.nan, np.float32)
    tilecraft.compile(ws_gemm, target="c")(a, b, c)
    np.testing.assert_allclose(c, want, rtol=2e-3, atol=2e-3)


def test_the_kernel_prints_and_parses_back():
    text = ws_gemm.script()
    assert "bars = T.alloc_barrier([128, 128, 128, 128])" in text and "T.mbarrier_arrive(bars[" in text
    assert structural_equal(T.parse_script(text), ws_gemm)


@T.prim_func
def consumer_first(A: T.Tensor((128,), T.float32), B: T.Tensor((128,), T.float32)):
    with T.Kernel(1, threads=256):
        tile = T.alloc_shared((128,), T.float32)
        ready = T.alloc_barrier(128)
        with T.ws(1):
            T.barrier_wait(ready, 0)  # <- waits for the copy below
            T.copy(tile, B)
        with T.ws(0):
            T.tma_copy(A, tile, barrier=ready)
            T.barrier_arrive(ready)


def test_a_wait_program_order_cannot_satisfy_raises():
    kernel = tilecraft.compile(consumer_first, target="c")
    with pytest.raises(TilecraftError) as info:
        kernel(np.ones(128, np.float32), np.zeros(128, np.float32))
    message = str(info.value)
    assert "the wait on mbarrier ready is for a phase no arrival has completed yet" in message
    assert "T.barrier_wait(ready, 0)" in message and "program order" in message


@T.prim_func
def arrivals(Out: T.Tensor((4,), T.int32)):
    """A barrier of count 64 completes a phase when warps 0, 1 arrive (64 threads), not before."""
    with T.Kernel(1, threads=128):
        bar = T.alloc_barrier(64)
        if T.get_thread_binding() < 32:
            T.barrier_arrive(bar)
        Out[0] = 1
        if T.get_thread_binding() >= 32 and T.get_thread_binding() < 64:
            T.barrier_arrive(bar)
        T.barrier_wait(bar, 0)  # complete: 64 arrivals
        Out[1] = 2
        T.barrier_wait(bar, 0)  # the phase of parity 0 stays complete until the next one does
        Out[2] = 3


def test_each_thread_of_a_group_arrives():
    out = np.zeros(4, np.int32)
    tilecraft.compile(arrivals, target="c")(out)
    assert list(out) == [1, 2, 3, 0]


def test_language_errors_are_located():
    with pytest.raises(ParseError, match=r"T.alloc_barrier needs arrival counts that are positive ints"):

        @T.prim_func
        def zero(A: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=128):
                T.alloc_barrier([128, 0])

    with pytest.raises(ParseError, match=r"warpgroup 2 starts at thread 256, but the kernel has 256 threads"):

        @T.prim_func
        def late(A: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=256):  # noqa: SIM117 - a kernel `with` takes one T.Kernel
                with T.ws(2):
                    A[0] = 1.0

    with pytest.raises(ParseError, match=r"T.tma_copy from global to shared memory needs barrier="):

        @T.prim_func
        def unbarred(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                tile = T.alloc_shared((128,), T.float32)
                T.tma_copy(A, tile)
