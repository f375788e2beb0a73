"""stage-simdgroup-gemms (Metal), Before/Expected: a gemm whose C is a fragment is staged through a
threadgroup tile of C (copied in unless the gemm clears it, multiplied there, copied back) where the
simdgroup_matrix path takes it and the tile fits; elsewhere the gemm stays as it is."""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.ir import stmt as S
from tilecraft.ir.visitor import walk
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


def gemm_kernel(dtype: str = "float16", clear: bool = True):
    @T.prim_func
    def gemm(A: T.Tensor((64, 32), dtype), B: T.Tensor((32, 64), dtype), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 32), dtype)
            b = T.alloc_shared((32, 64), dtype)
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=clear)
            T.copy(c, C)

    return gemm


def stage_scope(mod) -> list[str]:
    """The statements in the staging tile's scope (the printer does not show where a scope ends)."""
    (alloc,) = [
        n for n in walk(mod.functions[0].body) if isinstance(n, S.Allocate) and n.buffer.name == "c_simdgroup"
    ]
    body = alloc.body.stmts if isinstance(alloc.body, S.SeqStmt) else (alloc.body,)
    return [type(s).__name__ for s in body]


@pass_test("stage-simdgroup-gemms", "metal -family=apple7")
def test_a_cleared_fragment_accumulator_is_produced_in_a_threadgroup_tile(target):
    """clear_accum: nothing to copy in; the gemm writes the tile and the tile is copied to the fragment."""

    @T.prim_func
    def expected(
        A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"), C: T.Tensor((64, 64), "float32")
    ):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 32), "float16")
            b = T.alloc_shared((32, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a)
            T.copy(B, b)
            with T.ir.scope():  # the tile is allocated for the gemm alone
                c_simdgroup = T.alloc_shared((64, 64), "float32")
                T.gemm(a, b, c_simdgroup, clear_accum=True)
                T.copy(c_simdgroup, c)
            T.copy(c, C)

    result = assert_pass(target, "stage-simdgroup-gemms", gemm_kernel(), expected)
    assert stage_scope(result) == ["Gemm", "Copy"]


@pass_test("stage-simdgroup-gemms", "metal -family=apple7")
def test_an_accumulating_gemm_copies_its_fragment_in_first(target):
    """Without clear_accum the fragment's values are the gemm's input: copied to the tile before it."""

    @T.prim_func
    def expected(
        A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"), C: T.Tensor((64, 64), "float32")
    ):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 32), "float16")
            b = T.alloc_shared((32, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a)
            T.copy(B, b)
            with T.ir.scope():  # the tile is allocated for the gemm alone
                c_simdgroup = T.alloc_shared((64, 64), "float32")
                T.copy(c, c_simdgroup)
                T.gemm(a, b, c_simdgroup)
                T.copy(c_simdgroup, c)
            T.copy(c, C)

    result = assert_pass(target, "stage-simdgroup-gemms", gemm_kernel(clear=False), expected)
    assert stage_scope(result) == ["Copy", "Gemm", "Copy"]


@pass_test("stage-simdgroup-gemms", "metal -family=apple6", "metal -family=apple7 -threadgroup_memory=16384")
def test_no_staging_without_simdgroup_matrix_or_room_for_the_tile(target):
    """apple6 has no simdgroup_matrix; with 16 KiB the 16 KiB tile cannot sit beside A and B (8 KiB)."""
    assert_pass(target, "stage-simdgroup-gemms", gemm_kernel(), UNCHANGED)


@pass_test("stage-simdgroup-gemms", "metal -family=apple9")
def test_bfloat16_operands_are_not_staged(target):
    """simdgroup_matrix here takes float and half: a bfloat16 gemm stays on the FMA path, unstaged."""
    assert_pass(target, "stage-simdgroup-gemms", gemm_kernel("bfloat16"), UNCHANGED)
