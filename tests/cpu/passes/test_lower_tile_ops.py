"""lower-tile-ops (CPU), Before/Expected: every tile op becomes loops or a call of the kernel library."""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("lower-tile-ops", "c")
def test_fills_and_copies_become_parallel_nests_over_the_tile(target):
    """T.fill and T.copy are element-wise T.Parallel nests over the destination, in program order."""

    @T.prim_func
    def before(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((8, 16), "float32")
            T.fill(s, 0.0)
            T.copy(A, s)
            T.copy(s, B)

    @T.prim_func
    def expected(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((8, 16), "float32")
            for i0, i1 in T.Parallel(8, 16):
                s[i0, i1] = 0.0
            for i0, i1 in T.Parallel(8, 16):
                s[i0, i1] = A[i0, i1]
            for i0, i1 in T.Parallel(8, 16):
                B[i0, i1] = s[i0, i1]

    assert_pass(target, "lower-tile-ops", before, expected)


@pass_test("lower-tile-ops", "c")
def test_a_row_reduction_is_a_serial_accumulation_per_row(target):
    """reduce_sum over dim 1: for each row, a scalar accumulator starts at 0 and adds the row's elements."""

    @T.prim_func
    def before(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((4, 8), "float32")
            s = T.alloc_fragment((4,), "float32")
            T.copy(A, f)
            T.reduce_sum(f, s, dim=1)
            T.copy(s, B)

    @T.prim_func
    def expected(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((4, 8), "float32")
            s = T.alloc_fragment((4,), "float32")
            for i0, i1 in T.Parallel(4, 8):
                f[i0, i1] = A[i0, i1]
            for r0 in T.serial(4):
                acc = T.alloc_var("float32")
                acc = 0.0
                for rk in T.serial(8, annotations={"reduction": "sum"}):
                    acc = acc + f[r0, rk]
                s[r0] = acc
            for i0 in T.Parallel(4):
                B[i0] = s[i0]

    assert_pass(target, "lower-tile-ops", before, expected)


@pass_test("lower-tile-ops", "c")
def test_a_gemm_is_a_matmul_call_after_clearing_the_accumulator(target):
    """clear_accum zeroes the accumulator, then one matmul call multiplies the tiles in place."""

    @T.prim_func
    def mm(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32"), C: T.Tensor((8, 8), "float32")):
        with T.Kernel(1, threads=128):
            Cf = T.alloc_fragment((8, 8), "float32")
            T.gemm(A, B, Cf, clear_accum=True)
            T.copy(Cf, C)

    expected = """
    @T.prim_func
    def mm(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32"), C: T.Tensor((8, 8), "float32")):
        with T.Kernel(1, threads=128) as bx:
            Cf = T.alloc_fragment((8, 8), "float32")
            for gi in T.serial(8):
                for gj in T.Parallel(8):
                    Cf[0 + gi, 0 + gj] = 0.0
            T.ir.cpu.MatmulCall(a=A, a_offset=0, a_strides=(8, 1), b=B, b_offset=0, b_row_stride=8, c=Cf, c_offset=0, c_row_stride=8, m=8, n=8, k=8)
            for i0, i1 in T.Parallel(8, 8):
                C[i0, i1] = Cf[i0, i1]
    """

    assert_pass(target, "lower-tile-ops", mm, expected)
