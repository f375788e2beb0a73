"""run-work-items (CPU), Before/Expected: per-thread code runs in loops over the block's threads, split at
barriers (written or needed by shared-memory hazards) and at code the block runs once; what lives across
a split is an array over the threads."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass


@pass_test("run-work-items", "c")
def test_a_shared_hazard_splits_the_threads_runs_and_a_local_becomes_an_array(target):
    """Each thread writes its slot, then reads another's: the hazard's barrier splits two thread loops,
    and the T.alloc_var that lives across it is one value per thread."""

    @T.prim_func
    def before(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((64,), "float32")
            x = T.alloc_var("float32")
            x = A[tx] * 2.0
            s[tx] = x
            B[tx] = s[63 - tx] + x

    @T.prim_func
    def expected(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            s = T.alloc_shared((64,), "float32")
            x = T.alloc_local((64, 1), "float32")
            for t in T.serial(64):
                x[t, 0] = A[t] * 2.0
                s[t] = x[t, 0]
            T.sync_threads()
            for t in T.serial(64):
                B[t] = s[63 - t] + x[t, 0]

    assert_pass(target, "run-work-items", before, expected)


@pass_test("run-work-items", "c")
def test_a_per_thread_value_bound_across_a_barrier_is_an_array(target):
    """A let-bound value that differs between threads, used after a barrier, is filled per thread first."""

    @T.prim_func
    def before(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((64,), "float32")
            y: T.float32 = A[tx] + 1.0
            s[tx] = y
            T.sync_threads()
            B[tx] = s[63 - tx] * y

    @T.prim_func
    def expected(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            s = T.alloc_shared((64,), "float32")
            y = T.alloc_local((64,), "float32")
            for t in T.serial(64):
                y[t] = A[t] + 1.0
            for t in T.serial(64):
                s[t] = y[t]
            T.sync_threads()
            for t in T.serial(64):
                B[t] = s[63 - t] * y[t]

    assert_pass(target, "run-work-items", before, expected)


@pass_test("run-work-items", "c")
def test_tile_level_code_runs_once_between_the_threads_runs_and_uniform_loops_stay(target):
    """A T.Parallel nest is the block's (once); a loop with the same trip count in every thread keeps its
    place and is split inside; a per-thread atomic runs in every thread."""

    @T.prim_func
    def before(A: T.Tensor((4, 32), "float32"), B: T.Tensor((32,), "float32"), C: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding(0)
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0.0
            for k in T.serial(4):
                for i in T.Parallel(32):
                    B[i] = A[k, i]
                acc[0] += B[tx]
            T.atomic_add(C[0], acc[0])

    @T.prim_func
    def expected(A: T.Tensor((4, 32), "float32"), B: T.Tensor((32,), "float32"), C: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_local((32, 1), "float32")
            for t in T.serial(32):
                acc[t, 0] = 0.0
            for k in T.serial(4):
                for i in T.Parallel(32):
                    B[i] = A[k, i]
                for t in T.serial(32):
                    acc[t, 0] = acc[t, 0] + B[t]
            for t in T.serial(32):
                T.atomic_add(C[0], acc[t, 0])

    assert_pass(target, "run-work-items", before, expected)


@pass_test("run-work-items", "c")
def test_a_kernel_without_per_thread_code_is_unchanged(target):
    """Tile-level code and thread-group branches are left to the block's one thread."""

    @T.prim_func
    def before(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            if T.get_thread_binding(0) < 32:
                for i in T.Parallel(64):
                    B[i] = A[i] * 2.0

    assert_pass(target, "run-work-items", before, UNCHANGED)


def test_a_barrier_under_a_branch_on_the_thread_index_is_located():
    """No order of the threads' runs honours a barrier only some threads reach."""

    @T.prim_func
    def before(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            for _k in T.serial(tx):
                A[tx] = A[tx] + 1.0
                T.sync_threads()

    with pytest.raises(LoweringError, match="a loop whose trip count differs between threads"):
        run_pass("c", "run-work-items", before)
