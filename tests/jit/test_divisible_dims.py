"""The eager JIT specializes dynamic dims on being multiples of 16, and lowering proves alignment from it.

TileLang's dynamic_shape example (a GEMM over `T.dynamic` m, n, k) got cp.async element copies on
sm_90a because a row of k float16 elements is not provably a 16-byte multiple; specialized on
`k % 16 == 0` it gets TMA loads and warp specialization, and a call with another k gets its own kernel.
"""

from __future__ import annotations

import numpy as np

import tilecraft
import tilecraft.language as T
from tilecraft.jit.api import DIM_MULTIPLE


def dynamic_gemm():
    m, n, k = T.dynamic("m, n, k")

    @T.prim_func
    def gemm(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"), C: T.Tensor((m, n), "float16")):
        with T.Kernel(T.ceildiv(n, 128), T.ceildiv(m, 128), threads=128) as (bx, by):
            A_shared = T.alloc_shared((128, 32), "float16")
            B_shared = T.alloc_shared((32, 128), "float16")
            C_local = T.alloc_fragment((128, 128), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(k, 32), num_stages=3):
                T.copy(A[by * 128, ko * 32], A_shared)
                T.copy(B[ko * 32, bx * 128], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * 128, bx * 128])

    return gemm, (m, n, k)


def _cuda_source(func) -> str:
    return tilecraft.lower(func, target="cuda -arch=sm_90a", execution_backend="nvrtc").source("cuda-source")


def test_divisible_dims_give_tma_on_sm90a_and_their_absence_cp_async():
    func, dims = dynamic_gemm()
    plain = _cuda_source(func)
    specialized = _cuda_source(
        func.with_attr("tilecraft.divisible_dims", tuple((d, DIM_MULTIPLE) for d in dims))
    )
    assert "tc_tma_load<2>(A_shared" in specialized and "tc_setmaxnreg_inc" in specialized
    assert "tc_tma_load<2>(A_shared" not in plain


@tilecraft.jit(target="c")
def scaled_rows(A, block=32):
    m, k = T.dynamic("m, k")
    A: T.Tensor((m, k), "float32")
    B = T.empty((m, k), "float32")
    with T.Kernel(T.ceildiv(m, block)) as bx:
        tile = T.alloc_shared((block, 64), "float32")
        for ko in T.serial(T.ceildiv(k, 64)):
            T.copy(A[bx * block, ko * 64], tile)
            for i, j in T.Parallel(block, 64):
                tile[i, j] = tile[i, j] * 2.0
            T.copy(tile, B[bx * block, ko * 64])
    return B


def test_each_divisibility_of_the_call_gets_its_kernel_and_the_right_answer():
    rng = np.random.default_rng(0)
    before = len(scaled_rows._kernels._values)
    for shape in [(64, 256), (50, 100), (96, 512), (33, 130)]:
        a = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_array_equal(scaled_rows(a), a * 2)
    # (64, 256) and (96, 512): m and k multiples of 16; (50, 100) and (33, 130): neither
    assert len(scaled_rows._kernels._values) - before == 2
