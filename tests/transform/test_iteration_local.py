"""mark-iteration-local-shared: a loop lists the shared tiles each iteration writes whole before it uses
them, and narrow-shared-scopes scopes those inside the loop body, so that bytes are reused within an
iteration; tiles whose values may cross iterations (or leave the loop) are never listed."""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import walk
from tilecraft.transform.iteration_local import ITERATION_LOCAL, mark_iteration_local
from tilecraft.transform.shared_scopes import narrow_into_loops, narrow_kernel_body

N, BN = 256, 64
SHARED = ("shared", "shared.dyn")


def _listed(func) -> dict[str, list[str]]:
    """loop variable -> the names of the buffers that loop lists."""
    marked = mark_iteration_local(IRModule.from_func(func)).functions[0]
    return {n.loop_var.name: [b.name for b in S.annotation(n.annotations, ITERATION_LOCAL) or ()]
            for n in walk(marked.body) if isinstance(n, S.For) and n.kind != S.ForKind.PARALLEL}  # fmt: skip


@T.prim_func
def two_tiles_per_iteration(A: T.Tensor((N, BN), "float32"), B: T.Tensor((N, BN), "float32"),
                            out: T.Tensor((BN, BN), "float32")):  # fmt: skip
    with T.Kernel(1, threads=128):
        a_s = T.alloc_shared((BN, BN), "float32")
        b_s = T.alloc_shared((BN, BN), "float32")
        acc = T.alloc_fragment((BN, BN), "float32")
        T.clear(acc)
        for k in T.serial(N // BN):
            T.copy(A[k * BN : (k + 1) * BN, :], a_s)
            for i, j in T.Parallel(BN, BN):
                acc[i, j] += a_s[i, j]
            T.copy(B[k * BN : (k + 1) * BN, :], b_s)
            for i, j in T.Parallel(BN, BN):
                acc[i, j] += b_s[i, j]
        T.copy(acc, out)


def test_tiles_written_whole_before_each_use_are_listed():
    assert _listed(two_tiles_per_iteration) == {"k": ["a_s", "b_s"]}


def test_the_tiles_get_scopes_of_their_own_inside_the_loop():
    marked = mark_iteration_local(IRModule.from_func(two_tiles_per_iteration)).functions[0]
    launch = marked.body
    body = narrow_into_loops(narrow_kernel_body(launch.body, SHARED), SHARED)
    loop = next(n for n in walk(body) if isinstance(n, S.For) and n.kind == S.ForKind.SERIAL)
    assert ITERATION_LOCAL not in dict(loop.annotations)
    inside = [n.buffer.name for n in walk(loop.body) if isinstance(n, S.Allocate)]
    assert inside == ["a_s", "b_s"]
    assert not [n for n in walk(body) if isinstance(n, S.Allocate) and n.buffer.name == "a_s"
                and n not in list(walk(loop.body))]  # fmt: skip
    siblings = [s for s in loop.body.stmts if isinstance(s, S.Allocate)]
    assert [s.buffer.name for s in siblings] == ["a_s", "b_s"]  # not nested: a_s's bytes free for b_s


@T.prim_func
def carried_tile(A: T.Tensor((N, BN), "float32"), out: T.Tensor((BN, BN), "float32")):
    with T.Kernel(1, threads=128):
        a_s = T.alloc_shared((BN, BN), "float32")
        acc = T.alloc_fragment((BN, BN), "float32")
        T.clear(acc)
        for k in T.serial(N // BN):
            for i, j in T.Parallel(BN, BN):
                acc[i, j] += a_s[i, j]  # reads what the previous iteration wrote
            T.copy(A[k * BN : (k + 1) * BN, :], a_s)
        T.copy(acc, out)


@T.prim_func
def partly_written_tile(A: T.Tensor((N, BN), "float32"), out: T.Tensor((BN, BN), "float32")):
    with T.Kernel(1, threads=128):
        a_s = T.alloc_shared((BN, BN), "float32")
        acc = T.alloc_fragment((BN, BN), "float32")
        T.clear(acc)
        for k in T.serial(N // BN):
            T.copy(A[k * BN : k * BN + BN // 2, :], a_s[0 : BN // 2, :])
            for i, j in T.Parallel(BN, BN):
                acc[i, j] += a_s[i, j]
        T.copy(acc, out)


@T.prim_func
def tile_used_after_the_loop(A: T.Tensor((N, BN), "float32"), out: T.Tensor((BN, BN), "float32")):
    with T.Kernel(1, threads=128):
        a_s = T.alloc_shared((BN, BN), "float32")
        for k in T.serial(N // BN):
            T.copy(A[k * BN : (k + 1) * BN, :], a_s)
        T.copy(a_s, out)


@T.prim_func
def tile_read_under_a_condition_first(A: T.Tensor((N, BN), "float32"), out: T.Tensor((BN, BN), "float32")):
    with T.Kernel(1, threads=128):
        a_s = T.alloc_shared((BN, BN), "float32")
        acc = T.alloc_fragment((BN, BN), "float32")
        T.clear(acc)
        for k in T.serial(N // BN):
            if k > 0:
                for i, j in T.Parallel(BN, BN):
                    acc[i, j] += a_s[i, j]
            T.copy(A[k * BN : (k + 1) * BN, :], a_s)
        T.copy(acc, out)


def test_tiles_whose_values_may_cross_iterations_or_leave_the_loop_are_not_listed():
    for func in (carried_tile, partly_written_tile, tile_used_after_the_loop, tile_read_under_a_condition_first):
        assert _listed(func) == {"k": []}, func.name


@T.prim_func
def nested_loops(A: T.Tensor((N, N), "float32"), out: T.Tensor((BN, BN), "float32")):
    with T.Kernel(1, threads=128):
        a_s = T.alloc_shared((BN, BN), "float32")
        acc = T.alloc_fragment((BN, BN), "float32")
        T.clear(acc)
        for k in T.serial(N // BN):
            for m in T.serial(N // BN):
                T.copy(A[k * BN : (k + 1) * BN, m * BN : (m + 1) * BN], a_s)
                for i, j in T.Parallel(BN, BN):
                    acc[i, j] += a_s[i, j]
        T.copy(acc, out)


def test_the_innermost_loop_that_writes_the_tile_first_lists_it():
    assert _listed(nested_loops) == {"k": [], "m": ["a_s"]}
