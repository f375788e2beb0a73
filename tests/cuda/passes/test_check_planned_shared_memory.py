"""check-planned-shared-memory (CUDA), Before/Expected: a kernel whose planned shared memory fits the
target passes unchanged; one past it (a T.Persistent GEMM with a staging tile next to 4 stages, which
warp specialization keeps live together, with the TMA-store epilogue off) stops lowering with its line instead of failing at load."""

from __future__ import annotations

import pytest

import tilecraft
import tilecraft.language as T
from tests.cuda.passes.kernels import persistent_staged
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
    return persistent_staged(1024, (256, 128, 64), 256, 132, stages)


def test_a_persistent_gemm_whose_staging_tile_does_not_fit_beside_its_stages_is_refused_with_its_line():
    """With the TMA-store epilogue (default), split-staging-tiles stores the tile in column blocks and 4
    stages fit; with it off the tile stays whole and the plan (256 KiB) is refused."""
    tilecraft.lower(_persistent_staged(3), target="cuda -arch=sm_90a", execution_backend="nvrtc")
    tilecraft.lower(_persistent_staged(4), target="cuda -arch=sm_90a", execution_backend="nvrtc")
    with pytest.raises(LoweringError, match="once warp-specialized") as info:
        tilecraft.lower(_persistent_staged(4), target="cuda -arch=sm_90a", execution_backend="nvrtc",
                        pass_configs={"tilecraft.cuda.tma_store": False})  # fmt: skip
    assert "kernels.py" in str(info.value) and "fewer pipeline stages" in str(info.value)  # the kernel's line
    assert "the pass config 'tilecraft.cuda.tma_store' switches it off" in str(info.value)


def test_the_hint_names_no_switch_where_none_is_set():
    with pytest.raises(LoweringError, match="as planned") as info:
        tilecraft.lower(_persistent_staged(4), target="cuda -arch=sm_80", execution_backend="nvrtc")
    assert "switch" not in str(info.value)
