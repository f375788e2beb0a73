"""A causal backward pass's loop starts at the diagonal and reads lse / Delta as 1-D slices: on sm_90a it
gets the same warp-specialized TMA pipeline as a loop from 0 (normalize-pipelined-loops, 1-D TMA boxes),
and its slices stay on cp.async where the kernel's arrays leave a producer no room."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import cuda_source
from tilecraft.testing.conformance.attention_bwd import causal_backward


def _kernel(source: str) -> str:
    return source[source.index('extern "C" __global__') :]


def test_the_loop_from_the_diagonal_gets_a_producer_and_tma_slices():
    kernel = _kernel(cuda_source(causal_backward()))
    assert "__launch_bounds__(384, 1)" in kernel  # a producer warpgroup beside the 256 threads
    assert "tc_setmaxnreg_dec<24>" in kernel and "tc_setmaxnreg_inc<240>" in kernel
    assert "tc_cp_async16" not in kernel  # lse and Delta slices are TMA boxes too
    assert kernel.count("tc_tma_load<3>") == 2  # the two 1-D slices of the (batch, heads, seq) tensors


def _wide_backward(dim: int = 256):
    """The same loop shape with accumulators too large for the registers a producer leaves."""

    @T.prim_func
    def wide(
        Q: T.Tensor((256, dim), "float16"),
        K: T.Tensor((256, dim), "float16"),
        lse: T.Tensor((256,), "float32"),
        dK: T.Tensor((256, dim), "float32"),
    ):
        with T.Kernel(2, threads=256) as by:
            k_s = T.alloc_shared((128, dim), "float16")
            q = T.alloc_shared((32, dim), "float16")
            lse_s = T.alloc_shared((32,), "float32")
            p = T.alloc_fragment((128, 32), "float32")
            p_cast = T.alloc_fragment((128, 32), "float16")
            dk = T.alloc_fragment((128, dim), "float32")
            dk2 = T.alloc_fragment((128, dim), "float32")
            T.copy(K[by * 128, 0], k_s)
            T.clear(dk)
            T.clear(dk2)
            for k in T.Pipelined(by * 4, 8, num_stages=2):
                T.copy(Q[k * 32, 0], q)
                T.copy(lse[k * 32], lse_s)
                T.clear(p)
                T.gemm(k_s, q, p, transpose_B=True)
                for i, j in T.Parallel(128, 32):
                    p[i, j] = T.exp2(p[i, j] - lse_s[j])
                T.copy(p, p_cast)
                T.gemm(p_cast, q, dk)
                T.gemm(p_cast, q, dk2)
            for i, j in T.Parallel(128, dim):
                dk[i, j] = dk[i, j] + dk2[i, j]
            T.copy(dk, dK[by * 128, 0])

    return wide


def test_slices_stay_on_cp_async_where_the_arrays_leave_no_room_for_a_producer():
    kernel = _kernel(cuda_source(_wide_backward()))
    assert "tc_setmaxnreg" not in kernel  # 2 x 128 accumulator registers a thread: no producer
    assert "tc_cp_async16" in kernel  # the lse slice
    assert "tc_tma_load<2>(q" in kernel  # the operand tile is still a TMA box, pipelined from 0
