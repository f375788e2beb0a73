"""Barrier insertion (the shared SIMT pass), read off the OpenCL C it produces: where barriers go
matters for correctness (a missing one is a race) and for speed (one inside an unrolled loop runs
once per iteration)."""

from __future__ import annotations

import re

import tilecraft
import tilecraft.language as T
from tilecraft.testing.conformance import kernels as K
from tilecraft.testing.filecheck import filecheck

# Every capability given, so nothing asks a device.
TARGET = "opencl -fp16=false -fp64=true -int64_atomics=true -local_mem=65536 -max_work_group_size=1024"
BARRIER = "barrier("


def kernel_lines(func) -> list[str]:
    source = tilecraft.lower(func, target=TARGET, execution_backend="opencl").device_sources["opencl-source"]
    return source[source.index("__kernel") :].splitlines()


def loop_bodies(lines: list[str]) -> list[list[str]]:
    """The lines inside each `for` loop (by indentation)."""
    bodies = []
    for k, line in enumerate(lines):
        if line.lstrip().startswith("for ("):
            indent = len(line) - len(line.lstrip())
            body = []
            for inner in lines[k + 1 :]:
                if len(inner) - len(inner.lstrip()) <= indent:
                    break
                body.append(inner)
            bodies.append(body)
    return bodies


def barrier_count(lines) -> int:
    return sum(BARRIER in line for line in lines)


def test_a_hazard_before_a_loop_is_resolved_before_it_not_in_every_iteration():
    lines = kernel_lines(K.transpose(256, 128, 32))
    # tile is written, then read by other threads; tile_t is written, then read: two barriers, each
    # just before the loop that reads, none inside a loop
    checks = """
        CHECK-NOT: barrier(
        CHECK: for (
        CHECK-NEXT: tile[
        CHECK-SAME: = A[
        CHECK-NEXT: }
        CHECK-NOT: barrier(
        CHECK: barrier(CLK_LOCAL_MEM_FENCE
        CHECK-NEXT: #ifndef TC_NO_UNROLL
        CHECK-NEXT: #pragma unroll
        CHECK-NEXT: #endif
        CHECK-NEXT: for (
        CHECK-NEXT: tile_t[
        CHECK-SAME: = tile[
        CHECK-NEXT: }
        CHECK-NEXT: barrier(CLK_LOCAL_MEM_FENCE
        CHECK-NEXT: #ifndef TC_NO_UNROLL
        CHECK-NEXT: #pragma unroll
        CHECK-NEXT: #endif
        CHECK-NEXT: for (
        CHECK-NEXT: B[
        CHECK-SAME: = tile_t[
        CHECK-NEXT: }
        CHECK-NOT: barrier(
    """
    filecheck("\n".join(lines), checks, name="transpose")


def test_a_loop_that_refills_shared_memory_it_reads_has_barriers_in_its_body():
    lines = kernel_lines(K.gemm(128, 128, 128, 64, 64, 32, dtype="float32", accum_dtype="float32"))
    k_loop = next(body for body in loop_bodies(lines) if any("_shared[" in line and "= (" in line for line in body)
                  and barrier_count(body))  # fmt: skip
    # before the refill (the previous iteration's readers) and before the multiply-adds
    assert barrier_count(k_loop) == 2
    nested = [body for body in loop_bodies(k_loop) if barrier_count(body)]
    assert not nested, "a barrier inside an inner loop runs once per iteration"


def test_sibling_shared_scopes_that_may_share_bytes_are_separated():
    @T.prim_func
    def two_reductions(X: T.Tensor((64, 128), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((64, 128), "float32")
            a = T.alloc_fragment((64,), "float32")
            b = T.alloc_fragment((64,), "float32")
            T.copy(X, x)
            T.reduce_max(x, a, dim=1)
            T.reduce_sum(x, b, dim=1)
            for i in T.Parallel(64):
                Y[i] = a[i] + b[i]

    lines = kernel_lines(two_reductions)
    scratch = [k for k, line in enumerate(lines) if re.search(r"__local float\* restrict red_smem", line)]
    assert len(scratch) == 2
    between = lines[scratch[0] : scratch[1]]
    last_read = max(k for k, line in enumerate(between) if "red_smem" in line and "^" in line)
    assert barrier_count(between[last_read:]) >= 1, "the second scratch may overwrite bytes still being read"


def test_no_barrier_under_a_condition_that_depends_on_the_thread():
    @T.prim_func
    def guarded(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        # CHECK: s[(int32_t)tx] = A[
        # CHECK-NOT: barrier(
        # CHECK: }
        # CHECK-NEXT: barrier(CLK_LOCAL_MEM_FENCE
        # CHECK-NEXT: if ((tx < 64)) {
        # CHECK-NEXT: B[(int64_t)tx] = s[
        # CHECK-NOT: barrier(
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((128,), "float32")
            tx = T.get_thread_binding(0)
            T.copy(A, s)
            if tx < 64:
                B[tx] = s[127 - tx]

    filecheck("\n".join(kernel_lines(guarded)), guarded)


def test_an_if_whose_condition_reads_what_other_threads_wrote_has_a_barrier_before_it():
    @T.prim_func
    def flag(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        # CHECK: s[(int32_t)tx] = A[
        # CHECK-NOT: barrier(
        # CHECK: barrier(CLK_LOCAL_MEM_FENCE
        # CHECK-NEXT: if ((s[(int32_t)5] > 0.0f)) {
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((128,), "float32")
            T.copy(A, s)
            if s[5] > 0.0:
                for i in T.Parallel(128):
                    B[i] = 1.0

    filecheck("\n".join(kernel_lines(flag)), flag)


def _nest(depth: int, tile):
    """`depth` serial loops, each body a store into `tile` followed by the next loop."""
    from tilecraft.ir import dtype as dt
    from tilecraft.ir import expr as E
    from tilecraft.ir import stmt as S

    body = S.BufferStore(tile, E.BufferLoad(dt.float32, tile, (E.const(1),)), (E.const(0),))
    for level in range(depth):
        var = E.Var(dt.int32, f"i{level}")
        body = S.For(var, E.const(0), E.const(4), S.ForKind.SERIAL, S.seq(body, body))
    return body


def test_accesses_look_at_each_statement_once_however_deep_the_loops():
    # The analysis asks about every loop and each body twice; a walk per question grew with
    # size x depth (the split persistent GEMM's lowering spent 0.25 s in two such passes).
    from tilecraft.ir import dtype as dt
    from tilecraft.ir import expr as E
    from tilecraft.ir import stmt as S
    from tilecraft.ir.buffer import Buffer
    from tilecraft.transform.simt.barriers import Accesses, Barriers, State

    tile = Buffer("tile", (4,), dt.float32, "shared")
    seen: list[int] = []

    def count(node):
        if isinstance(node, S.Stmt):
            seen.append(id(node))

    nest = _nest(6, tile)
    launch = S.KernelLaunch((E.const(1),), (32,), (), (), nest)
    Barriers(launch, count).run(nest, State())
    assert seen and len(seen) == len(set(seen)), f"{len(seen)} looks at {len(set(seen))} statements"
    assert Accesses(set())(nest) == ({id(tile)}, {id(tile)})
