"""A register-resident A operand of a tensor-core gemm whose warps also split the columns: every warp
of a row block holds a copy of A's rows (TileLang's fusedmoe and GQA backward). Numbers on a GPU:
tests/conformance, cases gemm_register_a_*."""

from __future__ import annotations

import pytest

import tilecraft
from tests.transform.helpers import CUDA, assert_nvcc_compiles
from tilecraft.backend import Target
from tilecraft.cuda.intrinsics.mma_layouts import mma_operand_a_coords
from tilecraft.cuda.op.gemm_plan import plan_gemm
from tilecraft.ir import stmt as S
from tilecraft.ir.visitor import walk
from tilecraft.testing.conformance import register_operands


def _gemms(func):
    return [n for n in walk(func.body) if isinstance(n, S.Gemm)]


@pytest.mark.parametrize("build", ["fragment_a_from_global", "fragment_a_from_accumulator"])
def test_register_a_over_split_columns_compiles(build, tmp_path):
    # sm_90a: wgmma with A in registers, the operand replicated over the 2 warpgroup columns
    source = assert_nvcc_compiles(getattr(register_operands, build)(), tmp_path)
    assert "tc::gemm_wgmma_rs<" in source
    sm80 = tilecraft.lower(
        getattr(register_operands, build)(), target="cuda -arch=sm_80", execution_backend="nvrtc"
    )
    assert "tc::gemm_rs<" in sm80.source("cuda-source")


def test_register_a_layout_is_a_copy_per_warp_column():
    """Plan of the fusedmoe gemm: 8 warps as 4 x 2; warps 2w and 2w+1 hold the same rows of A, in the
    registers gemm_rs reads (mma_operand_a_coords)."""
    gemm = _gemms(register_operands.fragment_a_from_global())[0]
    plan = plan_gemm(gemm, 256, Target.parse(CUDA))
    assert (plan.warps_m, plan.warps_n, plan.variant) == (4, 2, "rs")
    layout = plan.a_layout
    for thread in (0, 37, 64, 99, 255):
        for reg in range(layout.num_registers):
            out = layout.linear.apply(register=reg, lane=thread % 32, warp=thread // 32)
            expected = mma_operand_a_coords(thread, reg, plan.m, plan.k, plan.warps_m, plan.warps_n)
            assert (out["dim0"], out["dim1"]) == expected
    assert layout.replica_mask() == (0, 1)


def test_register_a_off_the_tensor_cores_is_staged_through_shared_memory(tmp_path):
    """A float32 fragment A (TileLang's chunk_delta_bwd) takes the FMA path on CUDA, its tile first
    copied to a shared scratch tile that every thread's k loop reads, after a barrier. (A tfloat32 one,
    mhc_pre's, takes the TF32 tensor cores: tests/cuda/test_tf32_gemm.py.)"""
    func = register_operands.float32_fragment_a()
    plan = plan_gemm(_gemms(func)[0], 128, Target.parse(CUDA))
    assert (plan.variant, plan.a_layout) == ("fma", None)
    source = assert_nvcc_compiles(func, tmp_path)
    staged = source.index("_staged = ")
    assert "__syncthreads();" in source[staged:]
    assert "gemm_rs<" not in source and "gemm_ss<" not in source
