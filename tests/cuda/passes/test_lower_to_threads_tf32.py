"""lower-to-threads (CUDA), Before/Expected: a T.gemm with a T.tfloat32 operand is one TF32 tensor-core call
(GemmCall on float32 buffers, which only TF32 gemms reach the tensor cores with), its register A in the
m16n8k8 .tf32 A layout and its shared B in the swizzle32 layout. The input carries inferred layouts, so
Before is taken through the passes ahead of this one (`prefix=True`)."""

from __future__ import annotations

from tests.cuda.passes.kernels import tf32_register_a
from tests.transform.helpers import SM80
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("lower-to-threads", SM80)
def test_a_tfloat32_register_a_gemm_is_one_tf32_mma_call(target):
    """Lane l loads A rows l/4 and l/4 + 8, columns l%4 and l%4 + 4 (a0..a3 of m16n8k8 .tf32); B lands in
    its swizzled tile in 16-byte chunks; the gemm is GemmCall 'rs' on the float32 registers."""
    # The register order is the instruction's: register i holds row + 8 * (i & 1), column + 4 * (i >> 1).

    expected = """
    @T.prim_func
    def tf32_register_a(A: T.Tensor((16, 8), "tfloat32"), B: T.Tensor((16, 8), "float32"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding(0)
            a = T.alloc_local((4,), "float32")
            b = T.alloc_shared((16, 8), "float32")
            T.annotate_layout({b: T.ir.cuda.SharedLayout(kind='swizzle32', line_shift=5, row_length=8, element_bytes=4)})
            c = T.alloc_local((8,), "float32")
            for r1 in T.serial(4, annotations={'unroll': True}):
                a[r1] = A[(tx % 32 >> 2) + (r1 & 1) * 8, (tx % 32 & 3) + (r1 >> 1) * 4]
            for c2 in T.serial(1, annotations={'unroll': True}):
                T.ir.cuda.VectorCopy(dst=b, dst_offset=T.cast(0 + T.cast((c2 * 32 + tx) * 4 % 8, "int64") * 1 + T.cast((c2 * 32 + tx) * 4 // 8, "int64") * 8, "int32") ^ (T.cast(0 + T.cast((c2 * 32 + tx) * 4 % 8, "int64") * 1 + T.cast((c2 * 32 + tx) * 4 // 8, "int64") * 8, "int32") >> 5 & 7) << 2, src=B, src_offset=0 + T.cast((c2 * 32 + tx) * 4 % 8, "int64") * 1 + T.cast((c2 * 32 + tx) * 4 // 8, "int64") * 8, bytes=16)
            for r3 in T.serial(8, annotations={'unroll': True}):
                c[r3] = 0.0
            T.ir.cuda.GemmCall(variant='rs', a=a, b=b, c=c, m=16, n=16, k=8, warps_m=1, warps_n=1, trans_a=False, trans_b=True, bf16=False, b_offset=T.int32(0))
            for v4 in T.serial(4, annotations={'unroll': True}):
                T.ir.cuda.VectorStore(dst=C, dst_offset=0 + T.cast((tx % 32 & 3) * 2 + (v4 >> 1) * 8, "int64") * 1 + T.cast((tx % 32 >> 2) + (v4 & 1) * 8, "int64") * 16, values=(c[v4 * 2 + 0], c[v4 * 2 + 1]))
    """

    assert_pass(target, "lower-to-threads", tf32_register_a, expected, prefix=True)
