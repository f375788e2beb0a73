"""check-planned-shared-memory (CUDA), Before/Expected: a kernel whose planned shared memory fits the
target passes unchanged; one past it (a T.Persistent GEMM with a staging tile next to 4 stages, which
warp specialization keeps live together, with the TMA-store epilogue off) stops lowering with its line instead of failing at load."""

from __future__ import annotations

import pytest

import tilecraft
import tilecraft.language as T
from tests.transform.helpers import SM80
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass


@T.prim_func
def planned(A: T.Tensor((64,), "float32")):
    T.func_attr({"tilecraft.role": "device", "tilecraft.arena_bytes": 1024})
    with T.Kernel(1, threads=64):
        tx = T.get_thread_binding(0)
        A[tx] = 1.0


@pass_test("check-planned-shared-memory", SM80)
def test_a_plan_within_the_target_passes_unchanged(target):
    """1 KiB planned on sm_80 (163 KiB per block): nothing to refuse, nothing changed."""
    assert_pass(target, "check-planned-shared-memory", planned, UNCHANGED)


def test_a_plan_past_the_target_is_refused():
    with pytest.raises(LoweringError, match="needs 1024 bytes .1 KiB. of shared memory as planned"):
        run_pass("cuda -arch=sm_80 -max_shared_memory_per_block_optin=512", "check-planned-shared-memory", planned)


def _persistent_staged(stages: int):
    M = N = K = 1024

    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(132, threads=256) as block:
            A_s = T.alloc_shared((256, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((256, 128), "float32")
            C_s = T.alloc_shared((256, 128), "float16")
            for bx, by in T.Persistent([T.ceildiv(M, 256), T.ceildiv(N, 128)], 132, block):
                T.clear(C_l)
                for k in T.Pipelined(T.ceildiv(K, 64), num_stages=stages):
                    T.copy(A[bx * 256, k * 64], A_s)
                    T.copy(B[k * 64, by * 128], B_s)
                    T.gemm(A_s, B_s, C_l)
                T.copy(C_l, C_s)
                T.copy(C_s, C[bx * 256, by * 128])

    return gemm


def test_a_persistent_gemm_whose_staging_tile_does_not_fit_beside_its_stages_is_refused_with_its_line():
    """With the TMA-store epilogue (default), split-staging-tiles stores the tile in column blocks and 4
    stages fit; with it off the tile stays whole and the plan (256 KiB) is refused."""
    tilecraft.lower(_persistent_staged(3), target="cuda -arch=sm_90a", execution_backend="nvrtc")
    tilecraft.lower(_persistent_staged(4), target="cuda -arch=sm_90a", execution_backend="nvrtc")
    with pytest.raises(LoweringError, match="once warp-specialized") as info:
        tilecraft.lower(_persistent_staged(4), target="cuda -arch=sm_90a", execution_backend="nvrtc",
                        pass_configs={"tilecraft.cuda.tma_store": False})  # fmt: skip
    assert "test_check_planned_shared_memory.py" in str(info.value) and "fewer pipeline stages" in str(info.value)
