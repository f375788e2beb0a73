"""split-staging-tiles (CUDA), Before/Expected: a T.Persistent kernel's staging tile that would take its
shared memory past the target's limit beside the pipeline's stages is narrowed to a block of its columns,
its pair of copies repeated per block; kernels that fit, and kernels it cannot bring under the limit,
pass unchanged."""

from __future__ import annotations

import pytest

import tilecraft
from tests.cuda.passes.kernels import SM90A, persistent_staged
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass

# 3 stages of two 8 KiB tiles and an 8 KiB staging tile: 56 KiB and the mbarriers; 4 KiB for it fit 53
SM90A_53K = f"{SM90A} -max_shared_memory_per_block_optin={53 * 1024}"


def _persistent(target: str, stages: int = 3, epilogue_reads_the_tile: bool = False, pass_configs=None):
    """The kernel as the pass gets it: its gemm's instructions and the sm_90a path already decided."""
    kernel = persistent_staged(256, (64, 64, 64), 128, 4, stages, epilogue_reads_the_tile)
    return run_pass(target, "select-gemm-instructions", kernel, pass_configs=pass_configs)


@pass_test("split-staging-tiles", SM90A_53K)
def test_a_staging_tile_past_the_limit_is_stored_in_column_blocks(target):
    """C_s (64x64) becomes two 64x16 tiles used in turn, copied in and stored out once per column block."""
    expected = """
    @T.prim_func
    def _(A: T.Tensor((256, 256), "float16"), B: T.Tensor((256, 256), "float16"), C: T.Tensor((256, 256), "float16")):
        T.func_attr({'tilecraft.cuda.wgmma': True})
        with T.Kernel(4, threads=128) as block:
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            C_l = T.alloc_fragment((64, 64), "float32")
            C_s = T.alloc_shared((64, 16), "float16")
            C_s_1 = T.alloc_shared((64, 16), "float16")
            for wave in T.serial((16 - block + 3) // 4, annotations={'persistent': True}):
                tile: T.int32 = wave * 4 + block
                bx: T.int32 = tile // 32 * 8 + tile % 32 % T.min(4 - tile // 32 * 8, 8)
                by: T.int32 = tile % 32 // T.min(4 - tile // 32 * 8, 8)
                T.fill(C_l, 0.0)
                for k in T.Pipelined(4, num_stages=3):
                    T.copy(A[bx * 64:bx * 64 + 64, k * 64:k * 64 + 64], A_s)
                    T.copy(B[k * 64:k * 64 + 64, by * 64:by * 64 + 64], B_s)
                    T.gemm(A_s, B_s, C_l, annotations={'gemm_plan': T.ir.cuda.GemmPlan(m=64, n=64, k=64, warps_m=1, warps_n=1, tensor_cores=True, variant='wgmma', c_layout=T.ir.TileLayout(shape=(64, 64), linear=T.ir.LinearLayout(bases={'register': ((0, 1), (8, 0), (0, 8), (0, 16), (0, 32)), 'lane': ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)), 'warp': ((16, 0), (32, 0))}, out_dims={'dim0': 64, 'dim1': 64})), a_layout=None, atom_a=64, atom_b=64)})
                T.copy(C_l[:64, :16], C_s)
                T.copy(C_s, C[bx * 64:bx * 64 + 64, by * 64:by * 64 + 16])
                T.copy(C_l[:64, 16:32], C_s_1)
                T.copy(C_s_1, C[bx * 64:bx * 64 + 64, by * 64 + 16:by * 64 + 16 + 16])
                T.copy(C_l[:64, 32:48], C_s)
                T.copy(C_s, C[bx * 64:bx * 64 + 64, by * 64 + 32:by * 64 + 32 + 16])
                T.copy(C_l[:64, 48:64], C_s_1)
                T.copy(C_s_1, C[bx * 64:bx * 64 + 64, by * 64 + 48:by * 64 + 48 + 16])
    """
    assert_pass(target, "split-staging-tiles", _persistent(target), expected, as_text=True)


@pass_test("split-staging-tiles", SM90A)
def test_a_kernel_within_the_limit_is_unchanged(target):
    """56 KiB against sm_90a's 227: nothing to narrow."""
    assert_pass(target, "split-staging-tiles", _persistent(target), UNCHANGED)


@pass_test("split-staging-tiles", SM90A_53K)
def test_a_staging_tile_read_by_something_else_is_unchanged(target):
    """A tile the epilogue also reads is not a staging tile of one store: it keeps its shape."""
    assert_pass(target, "split-staging-tiles", _persistent(target, epilogue_reads_the_tile=True), UNCHANGED)


@pass_test("split-staging-tiles", SM90A_53K)
def test_a_kernel_no_split_brings_under_the_limit_is_unchanged(target):
    """6 stages need 96 KiB with no staging tile at all: the pass leaves it to the later refusal."""
    assert_pass(target, "split-staging-tiles", _persistent(target, stages=6), UNCHANGED)


@pass_test("split-staging-tiles", SM90A_53K)
def test_without_the_tma_store_epilogue_nothing_is_narrowed(target):
    """tilecraft.cuda.tma_store False keeps the epilogue through the threads, and the tile as written."""
    configs = {"tilecraft.cuda.tma_store": False}
    assert_pass(target, "split-staging-tiles", _persistent(target, pass_configs=configs), UNCHANGED,
                pass_configs=configs)  # fmt: skip


def test_the_narrowed_kernel_lowers_and_the_unsplit_one_is_refused():
    """End to end at 53 KiB: the split kernel's plan fits; with the TMA-store epilogue off it does not."""
    kernel = persistent_staged(256, (64, 64, 64), 128, 4, 3)
    tilecraft.lower(kernel, target=SM90A_53K, execution_backend="nvrtc")
    with pytest.raises(LoweringError, match="once warp-specialized"):
        tilecraft.lower(kernel, target=SM90A_53K, execution_backend="nvrtc",
                        pass_configs={"tilecraft.cuda.tma_store": False})  # fmt: skip
