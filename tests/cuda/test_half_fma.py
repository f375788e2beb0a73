"""A float16 multiply-add stored into float16 from float16 elements is one `fma.rn.f16` on CUDA (the
printer's fused_store): TileLang's dequantizing GEMV accumulates so, and the float32 path's four
conversions per multiply-add made its loop compute-bound. Anything else keeps the float32 path."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import assert_nvcc_compiles, cuda_source


def _gemv(accumulate):
    @T.prim_func
    def gemv(A: T.Tensor((64, 256), "float16"), x: T.Tensor((256,), "float16"), y: T.Tensor((64,), "float16")):
        with T.Kernel(64, threads=32) as bx:
            acc = T.alloc_local((1,), "float16")
            a = T.alloc_local((8,), "float16")
            v = T.alloc_local((8,), "float16")
            tx = T.get_thread_binding()
            acc[0] = 0
            for k in T.serial(256 // (32 * 8)):
                for i in T.vectorized(8):
                    a[i] = A[bx, k * 256 + tx * 8 + i]
                    v[i] = x[k * 256 + tx * 8 + i]
                for i in T.serial(8):
                    accumulate(acc, a, v, i)
            if tx == 0:
                y[bx] = acc[0]

    return gemv


def test_a_float16_multiply_add_of_elements_is_one_half_fma(tmp_path):
    @T.macro
    def accumulate(acc, a, v, i):
        acc[0] = acc[0] + a[i] * v[i]

    source = assert_nvcc_compiles(_gemv(accumulate), tmp_path)
    assert "acc[0] = tc_hfma(a[(int32_t)i], v[(int32_t)i], acc[0]);" in source


def test_the_addend_first_is_the_same_fma():
    @T.macro
    def accumulate(acc, a, v, i):
        acc[0] = a[i] * v[i] + acc[0]

    assert "tc_hfma(a[(int32_t)i], v[(int32_t)i], acc[0])" in cuda_source(_gemv(accumulate))


def test_an_operand_that_is_computed_keeps_the_float32_path():
    """(a + v) * v + acc: the sum is not a float16 element (rounding it would change the result)."""

    @T.macro
    def accumulate(acc, a, v, i):
        acc[0] = (a[i] + v[i]) * v[i] + acc[0]

    source = cuda_source(_gemv(accumulate))
    kernel = source[source.index('extern "C" __global__'):]
    assert "tc_hfma(" not in kernel and "tc_f2h(" in kernel
