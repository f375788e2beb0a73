"""insert-barriers, Before/Expected: a barrier between shared-memory writes and other threads' reads (and
between reads and other threads' later writes); never more than the hazards need."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test

TARGETS = (SM80, OPENCL, WEBGPU)


@pass_test("insert-barriers", *TARGETS)
def test_each_hazard_between_threads_gets_a_barrier_before_the_second_access(target):
    """A barrier precedes the second access of each hazard between threads, and only there."""
    # Write then another thread's read (RAW), read then overwrite (WAR): a barrier before each second
    # access; consecutive reads share the first barrier.

    @T.prim_func
    def before(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((128,), "float32")
            s[tx] = A[tx]
            B[tx] = s[127 - tx]
            B[tx] = B[tx] + s[tx ^ 1]
            s[tx] = B[tx] + 1.0

    @T.prim_func
    def expected(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((128,), "float32")
            s[tx] = A[tx]
            T.sync_threads()
            B[tx] = s[127 - tx]
            B[tx] = B[tx] + s[tx ^ 1]
            T.sync_threads()
            s[tx] = B[tx] + 1.0

    assert_pass(target, "insert-barriers", before, expected)


@pass_test("insert-barriers", *TARGETS)
def test_a_hazard_before_a_loop_is_resolved_before_it_not_in_every_iteration(target):
    """The tile is written before a loop that only reads it: one barrier, before the loop."""

    @T.prim_func
    def before(A: T.Tensor((128,), "float32"), B: T.Tensor((512,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((128,), "float32")
            s[tx] = A[tx]
            for k in T.serial(4):
                B[k * 128 + tx] = s[(tx + k) % 128]

    @T.prim_func
    def expected(A: T.Tensor((128,), "float32"), B: T.Tensor((512,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((128,), "float32")
            s[tx] = A[tx]
            T.sync_threads()
            for k in T.serial(4):
                B[k * 128 + tx] = s[(tx + k) % 128]

    assert_pass(target, "insert-barriers", before, expected)


@pass_test("insert-barriers", *TARGETS)
def test_a_shared_read_bound_to_a_name_is_a_read(target):
    """A value bound to a name (a LetStmt) that reads the tile: a barrier before the binding (others wrote
    the tile) and one before the tile is overwritten (others read it there)."""
    # Found through TileLang's w4a8 dequantize example: the nibble bound by `nibble = ...` read a shared
    # tile whose bytes the next tile reused, with no barrier between (wrong results on OpenCL).

    @T.prim_func
    def before(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((128,), "float32")
            s[tx] = A[tx]
            v = s[127 - tx]
            s[tx] = v + 1.0
            B[tx] = v

    @T.prim_func
    def expected(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((128,), "float32")
            s[tx] = A[tx]
            T.sync_threads()
            v = s[127 - tx]
            T.sync_threads()
            s[tx] = v + 1.0
            B[tx] = v

    assert_pass(target, "insert-barriers", before, expected)


@pass_test("insert-barriers", *TARGETS)
def test_a_loop_that_refills_the_tile_it_reads_has_barriers_in_its_body(target):
    """A loop refilling the tile it reads has a barrier before the refill and one before the reads."""
    # Each iteration overwrites what the previous one read, then reads what other threads wrote.

    @T.prim_func
    def before(A: T.Tensor((512,), "float32"), B: T.Tensor((512,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((128,), "float32")
            for k in T.serial(4):
                s[tx] = A[k * 128 + tx]
                B[k * 128 + tx] = s[127 - tx]

    @T.prim_func
    def expected(A: T.Tensor((512,), "float32"), B: T.Tensor((512,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((128,), "float32")
            for k in T.serial(4):
                T.sync_threads()
                s[tx] = A[k * 128 + tx]
                T.sync_threads()
                B[k * 128 + tx] = s[127 - tx]

    assert_pass(target, "insert-barriers", before, expected)


@pass_test("insert-barriers", *TARGETS)
def test_no_barrier_under_a_condition_that_depends_on_the_thread(target):
    """The read sits under `if tx < 64`: its barrier goes before the branch, where every thread meets it."""

    @T.prim_func
    def before(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((128,), "float32")
            s[tx] = A[tx]
            if tx < 64:
                B[tx] = s[127 - tx]

    @T.prim_func
    def expected(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((128,), "float32")
            s[tx] = A[tx]
            T.sync_threads()
            if tx < 64:
                B[tx] = s[127 - tx]

    assert_pass(target, "insert-barriers", before, expected)


@pass_test("insert-barriers", *TARGETS)
def test_code_without_shared_memory_gets_no_barrier(target):
    """Global and register accesses are not the pass's business."""

    @T.prim_func
    def before(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            B[tx] = A[127 - tx]
            A[tx] = B[tx ^ 1]

    assert_pass(target, "insert-barriers", before, UNCHANGED)
