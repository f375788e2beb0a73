"""gemm-a-in-place, gemm-b-panels and gemm-live-rows (CPU), Before/Expected: where a gemm's operand tiles live follows from
which ops write and read them."""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass


def tiled_gemm(a_reader: bool = False, b_transposed: bool = False, acc_reader: bool = False):
    """A 40x32 gemm in 16x32 tiles over K = 64 in steps of 32 (the last row of tiles crosses the edge)."""
    b_shape = (32, 64) if b_transposed else (64, 32)
    bs_shape = (32, 32)

    @T.prim_func
    def gemm(A: T.Tensor((40, 64), "float32"), B: T.Tensor(b_shape, "float32"), C: T.Tensor((40, 32), "float32"),
             D: T.Tensor((16, 32), "float32")):  # fmt: skip
        with T.Kernel(1, 3, threads=128) as (bx, by):
            A_s = T.alloc_shared((16, 32), "float32")
            B_s = T.alloc_shared(bs_shape, "float32")
            C_l = T.alloc_fragment((16, 32), "float32")
            T.clear(C_l)
            for k in T.serial(2):
                T.copy(A[by * 16, k * 32], A_s)
                if b_transposed:
                    T.copy(B[bx * 32, k * 32], B_s)
                else:
                    T.copy(B[k * 32, bx * 32], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=b_transposed)
                if a_reader:
                    T.copy(A_s, D)
            T.copy(C_l, C[by * 16, bx * 32])
            if acc_reader:
                T.copy(C_l, D)

    return gemm


@pass_test("gemm-a-in-place", "c")
def test_an_a_tile_only_its_copy_writes_and_the_gemm_reads_is_read_in_place(target):
    """Inside the tensor the gemm reads A's region itself; the copy runs only for tiles crossing the edge."""
    expected = """
    @T.prim_func
    def gemm(A: T.Tensor((40, 64), "float32"), B: T.Tensor((64, 32), "float32"), C: T.Tensor((40, 32), "float32"), D: T.Tensor((16, 32), "float32")):
        with T.Kernel(1, 3, threads=128) as (bx, by):
            A_s = T.alloc_shared((16, 32), "float32")
            B_s = T.alloc_shared((32, 32), "float32")
            C_l = T.alloc_fragment((16, 32), "float32")
            T.fill(C_l, 0.0)
            for k in T.serial(2):
                if not by * 16 + 16 <= 40:
                    T.copy(A[by * 16:by * 16 + 16, k * 32:k * 32 + 32], A_s)
                T.copy(B[k * 32:k * 32 + 32, bx * 32:bx * 32 + 32], B_s)
                if by * 16 + 16 <= 40:
                    T.gemm(A[by * 16:by * 16 + 16, k * 32:k * 32 + 32], B_s, C_l)
                else:
                    T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 16:by * 16 + 16, bx * 32:bx * 32 + 32])
    """
    assert_pass(target, "gemm-a-in-place", tiled_gemm(), expected, prefix=True)


@pass_test("gemm-a-in-place", "c")
def test_an_a_tile_another_op_reads_keeps_its_copy(target):
    """A tile read by anything besides the gemm holds what the copy wrote: nothing changes."""
    assert_pass(target, "gemm-a-in-place", tiled_gemm(a_reader=True), UNCHANGED, prefix=True)


@pass_test("gemm-b-panels", "c")
def test_a_b_tile_only_copies_write_and_gemms_read_is_stored_as_column_panels(target):
    """The B tile becomes (32 / 16 panels, 32 rows, 16 columns): the copy writes the panels, the gemm reads them."""
    expected = """
    @T.prim_func
    def gemm(A: T.Tensor((40, 64), "float32"), B: T.Tensor((64, 32), "float32"), C: T.Tensor((40, 32), "float32"), D: T.Tensor((16, 32), "float32")):
        with T.Kernel(1, 3, threads=128) as (bx, by):
            A_s = T.alloc_shared((16, 32), "float32")
            B_s = T.alloc_shared((2, 32, 16), "float32")
            C_l = T.alloc_fragment((16, 32), "float32")
            T.fill(C_l, 0.0)
            for k in T.serial(2):
                if not by * 16 + 16 <= 40:
                    T.copy(A[by * 16:by * 16 + 16, k * 32:k * 32 + 32], A_s)
                T.ir.cpu.PanelCopy(src=B[k * 32:k * 32 + 32, bx * 32:bx * 32 + 32], dst=B_s)
                if by * 16 + 16 <= 40:
                    T.ir.cpu.PanelGemm(a=A[by * 16:by * 16 + 16, k * 32:k * 32 + 32], b=B_s, c=C_l)
                else:
                    T.ir.cpu.PanelGemm(a=A_s, b=B_s, c=C_l)
            T.copy(C_l, C[by * 16:by * 16 + 16, bx * 32:bx * 32 + 32])
    """
    assert_pass(target, "gemm-b-panels", tiled_gemm(), expected, prefix=True)


@pass_test("gemm-b-panels", "c")
def test_a_transposed_b_tile_stays_row_major(target):
    """A gemm reading its B tile transposed is staged by the gemm lowering: the tile keeps its rows."""
    assert_pass(target, "gemm-b-panels", tiled_gemm(b_transposed=True), UNCHANGED, prefix=True)


@pass_test("gemm-live-rows", "c")
def test_a_gemm_on_an_a_tile_past_the_edge_updates_only_the_rows_that_are_stored(target):
    """The last row of tiles holds 8 of A's 40 rows: its gemm updates min(16, 40 - by * 16) rows of C_l,
    whose other rows only reach C's copy, which drops them."""
    expected = """
    @T.prim_func
    def gemm(A: T.Tensor((40, 64), "float32"), B: T.Tensor((64, 32), "float32"), C: T.Tensor((40, 32), "float32"), D: T.Tensor((16, 32), "float32")):
        with T.Kernel(1, 3, threads=128) as (bx, by):
            A_s = T.alloc_shared((16, 32), "float32")
            B_s = T.alloc_shared((2, 32, 16), "float32")
            C_l = T.alloc_fragment((16, 32), "float32")
            T.fill(C_l, 0.0)
            for k in T.serial(2):
                if not by * 16 + 16 <= 40:
                    T.copy(A[by * 16:by * 16 + 16, k * 32:k * 32 + 32], A_s)
                T.ir.cpu.PanelCopy(src=B[k * 32:k * 32 + 32, bx * 32:bx * 32 + 32], dst=B_s)
                if by * 16 + 16 <= 40:
                    T.ir.cpu.PanelGemm(a=A[by * 16:by * 16 + 16, k * 32:k * 32 + 32], b=B_s, c=C_l)
                else:
                    T.ir.cpu.PanelGemm(a=A_s, b=B_s, c=C_l, rows=T.min(16, 40 - by * 16))
            T.copy(C_l, C[by * 16:by * 16 + 16, bx * 32:bx * 32 + 32])
    """
    assert_pass(target, "gemm-live-rows", tiled_gemm(), expected, prefix=True)


@pass_test("gemm-live-rows", "c")
def test_an_accumulator_copied_whole_elsewhere_keeps_every_row(target):
    """C_l is also copied into D whole: its rows past A's edge are stored there, so the gemm updates all."""
    before = run_pass(target, "gemm-b-panels", tiled_gemm(acc_reader=True), prefix=True)
    assert_pass(target, "gemm-live-rows", before, UNCHANGED)
