"""emulate-mbarriers (CPU), Before/Expected: T.alloc_barrier's mbarriers become counters of the block."""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("emulate-mbarriers", "c")
def test_arrivals_count_the_threads_that_run_them_and_a_wait_checks_the_phase(target):
    """A barrier is (pending, phase, count); an arrival by n threads takes n, and a wait whose phase has
    not completed records a failure."""

    @T.prim_func
    def before(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=128):
            bar = T.alloc_barrier(64)
            if T.get_thread_binding() < 32:
                T.barrier_arrive(bar)
            T.barrier_wait(bar, 0)
            A[0] = 1.0

    expected = """
    @T.prim_func
    def before(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            bar = T.alloc_local((1, 3), "int32")
            bar[0, 0] = 64
            bar[0, 1] = 0
            bar[0, 2] = 64
            if tx < 32:
                bar[0, 0] = bar[0, 0] - 32
                while bar[0, 0] <= 0:
                    bar[0, 1] = 1 - bar[0, 1]
                    bar[0, 0] = bar[0, 0] + bar[0, 2]
            if bar[0, 1] == 0:
                T.ir.cpu.CheckFailed(message='the wait on mbarrier bar is for a phase no arrival has completed yet: threads running at once on a GPU would complete it later, but the CPU target runs thread groups one after the other in program order (put the code that arrives before the code that waits)')
            A[0] = 1.0
    """

    assert_pass(target, "emulate-mbarriers", before, expected, as_text=True)
