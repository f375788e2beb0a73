"""mark-iteration-local-shared (WebGPU), Before/Expected: a loop lists the shared tiles that each of its
iterations writes whole before it uses them; a tile that may carry a value into the next iteration is
not listed. The listing is printed as a loop annotation that does not parse back, so the expected IR is
compared as text."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import WEBGPU
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


@T.prim_func
def reloaded(A: T.Tensor((256, 64), "float32"), B: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, threads=128):
        a_s = T.alloc_shared((64, 64), "float32")
        acc = T.alloc_fragment((64, 64), "float32")
        T.clear(acc)
        for k in T.serial(4):
            T.copy(A[k * 64 : k * 64 + 64, :], a_s)
            T.gemm(a_s, a_s, acc)
        T.copy(acc, B)


@pass_test("mark-iteration-local-shared", WEBGPU)
def test_a_tile_copied_whole_at_the_top_of_each_iteration_is_listed(target):
    """The loop's annotation lists the tile it reloads whole before each use."""
    expected = """
    @T.prim_func
    def reloaded(A: T.Tensor((256, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((64, 64), "float32")
            acc = T.alloc_fragment((64, 64), "float32")
            T.fill(acc, 0.0)
            for k in T.serial(4, annotations={'iteration_local_shared': (a_s,)}):
                T.copy(A[k * 64:k * 64 + 64, :64], a_s)
                T.gemm(a_s, a_s, acc)
            T.copy(acc, B)
    """
    assert_pass(target, "mark-iteration-local-shared", reloaded, expected, as_text=True)


@T.prim_func
def carried(A: T.Tensor((256, 64), "float32"), B: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, threads=128):
        a_s = T.alloc_shared((64, 64), "float32")
        acc = T.alloc_fragment((64, 64), "float32")
        T.clear(acc)
        for k in T.serial(4):
            T.gemm(a_s, a_s, acc)  # the previous iteration's tile
            T.copy(A[k * 64 : k * 64 + 64, :], a_s)
        T.copy(acc, B)


@pass_test("mark-iteration-local-shared", WEBGPU)
def test_a_tile_read_before_it_is_reloaded_is_not_listed(target):
    """A tile read before the iteration rewrites it carries a value across iterations: unchanged."""
    assert_pass(target, "mark-iteration-local-shared", carried, UNCHANGED)
