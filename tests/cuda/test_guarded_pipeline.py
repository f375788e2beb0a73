"""T.Pipelined loops under a block-uniform guard (block-sparse kernels, tilecraft/cuda/transform/guards.py)
without a GPU: the generated code of TileLang's blocksparse_gemm example on every path (a producer
warpgroup counting the taken iterations on sm_90a, the TMA ring without it, cp.async on sm_80), nvcc
and ptxas on them, and the guards that keep today's synchronous loop with the note saying why.
tests/cuda/test_warp_specialize_protocol.py runs the protocol under random masks; the conformance
cases blocksparse_* run the kernels on a GPU."""

from __future__ import annotations

import re
import subprocess

import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.cuda.transform.warp_specialize import PRODUCER_THREADS, SPLITS, entry_registers
from tilecraft.testing.conformance.block_sparse import blocksparse_gemm
from tilecraft.testing.filecheck import filecheck

OFF = {"tl.disable_warp_specialized": True}
EXAMPLE = (1024, 1024, 1024, 128, 128, 32, 2, 128)  # TileLang's run_regression_perf configuration


def _lower(func, arch="sm_90a", configs=None):
    art = tilecraft.lower(func, target=f"cuda -arch={arch}", execution_backend="nvrtc", pass_configs=configs)
    src = art.device_sources["cuda-source"]
    return art, src[src.index('extern "C" __global__') :]


def test_the_blocksparse_example_gets_a_producer_warpgroup_counting_the_taken_tiles():
    """The producer loads only the taken k-blocks, into the stage of its count of them; the consumers
    wait for the stage of their own count, leave the wgmma in flight and release the previous taken
    stage: no block barrier in either loop, one expect-tx per tile."""
    art, kernel = _lower(blocksparse_gemm(*EXAMPLE))
    mask = "BlockMask[(int64_t)by_r * 256 + (int64_t)bx_r * 32 + (int64_t)ko]"
    checks = f"""
        CHECK: __launch_bounds__(256, 2)
        CHECK: for (int i = 0; i < 2; ++i) tc_mbar_init(&tc_mbar[i], 1);
        CHECK-NEXT: for (int i = 2; i < 4; ++i) tc_mbar_init(&tc_mbar[i], 4);
        CHECK: if ((tx >= 128)) {{
        CHECK-NEXT: tc_setmaxnreg_dec<24>();
        CHECK-NEXT: if ((tx == 128)) {{
        CHECK: loaded = 0;
        CHECK-NEXT: for (int32_t ko = 0; ko < 32; ++ko) {{
        CHECK-NEXT: if ({mask}) {{
        CHECK: const int32_t loaded_k = loaded;
        CHECK-NEXT: loaded = ((int32_t)((uint32_t)(loaded_k) + (uint32_t)(1)));
        CHECK-NEXT: tc_mbar_wait(&tc_mbar[2 + ((int32_t)tc_floormod(loaded_k, 2))],
        CHECK-NEXT: tc_mbar_expect_tx(&tc_mbar[0 + ((int32_t)tc_floormod(loaded_k, 2))], 16384u);
        CHECK-NEXT: tc_tma_load<2>(A_shared +
        CHECK-SAME: {{(int32_t)(((ko * 32) + 0)), (int32_t)((by_r * 128))}}
        CHECK: }} else {{
        CHECK-NEXT: tc_setmaxnreg_inc<232>();
        CHECK: taken = 0;
        CHECK-NEXT: for (int32_t ko = 0; ko < 32; ++ko) {{
        CHECK-NEXT: if ({mask}) {{
        CHECK: const int32_t taken_k = taken;
        CHECK-NEXT: taken = ((int32_t)((uint32_t)(taken_k) + (uint32_t)(1)));
        CHECK-NEXT: tc_mbar_wait(&tc_mbar[0 + ((int32_t)tc_floormod(taken_k, 2))],
        CHECK-NEXT: tc::gemm_wgmma<128, 128, 32, 1, 1, false, false, false, 32, 64, 1>(
        CHECK-NEXT: if ((taken_k > 0)) {{
        CHECK-NEXT: tc_mbar_arrive(&tc_mbar[2 +
        CHECK: tc_wgmma_wait<0>();
        CHECK: tc_tma_store<2>(tc_tmap2,
    """
    filecheck(kernel, checks)
    assert art.kernels[0].block == (128 + PRODUCER_THREADS,)
    assert kernel.count("__syncthreads()") == 1  # the rings' initialisation only
    assert "tc_phase" not in kernel  # every parity comes from a count


def _ptxas(nvcc: str, art, tmp_path) -> str:
    path = tmp_path / "k.cu"
    path.write_text(art.device_sources["cuda-source"])
    done = subprocess.run([nvcc, "-arch=sm_90a", "-cubin", "-O3", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"),
                           str(path)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_the_blocksparse_example_compiles_with_the_registers_setmaxnreg_assumes(nvcc, tmp_path):
    art, _ = _lower(blocksparse_gemm(*EXAMPLE))
    report = _ptxas(nvcc, art, tmp_path)
    assert "C7508" not in report and "0 bytes spill stores, 0 bytes spill loads" in report, report
    used = int(re.search(r"Used (\d+) registers", report).group(1))
    assert used == entry_registers(128 + PRODUCER_THREADS, SPLITS[1].min_blocks), report


def test_without_a_producer_the_ring_stays_on_k_and_skips_untaken_iterations():
    """tl.disable_warp_specialized: iteration k refills stage (k + 1) % 2 only for a taken k + 1, waits
    for its own stage only when taken, and completes the wgmma in flight when not."""
    art, kernel = _lower(blocksparse_gemm(*EXAMPLE), configs=OFF)
    checks = """
        CHECK: for (int32_t ko = 0; ko < 32; ++ko) {
        CHECK-NEXT: if (BlockMask[
        CHECK: tc_mbar_wait(&tc_mbar[0 + tc_stage], (tc_phase1 >> tc_stage) & 1u);
        CHECK: tc::gemm_wgmma<128, 128, 32, 1, 1, false, false, false, 32, 64, 1>(
        CHECK-NEXT: } else {
        CHECK-NEXT: tc_wgmma_wait<0>();
        CHECK: __syncthreads();
        CHECK-NEXT: if (((ko + 1) < 32)) {
        CHECK-NEXT: if (BlockMask[
        CHECK-SAME: (int64_t)(ko + 1)]) {
        CHECK: tc_tma_load<2>(A_shared + ((((ko + 1) % 2) * 4096) + 0)
    """
    filecheck(kernel, checks)
    assert "setmaxnreg" not in kernel and art.kernels[0].block == (128,)


def test_cp_async_skips_the_copies_and_gemms_of_untaken_iterations_on_sm80():
    """sm_80: stages on k, every iteration commits a group (empty when the guard skips it)."""
    _, kernel = _lower(blocksparse_gemm(*EXAMPLE[:6], 3, 128), arch="sm_80")
    checks = """
        CHECK: for (int32_t ko = 0; ko < 32; ++ko) {
        CHECK-NEXT: tc_cp_async_wait<1>();
        CHECK-NEXT: __syncthreads();
        CHECK-NEXT: if (((ko + 2) < 32)) {
        CHECK-NEXT: if (BlockMask[
        CHECK: tc_cp_async16(A_shared + ((((ko + 2) % 3) * 4096)
        CHECK: tc_cp_async_commit();
        CHECK-NEXT: if (BlockMask[
        CHECK-NEXT: tc::gemm_ss<128, 128, 32, 2, 2, false, false, false>(A_shared + (((ko % 3) * 4096) + 0)
        CHECK: tc_cp_async_wait<0>();
    """
    filecheck(kernel, checks)


@T.prim_func
def selected_blocks(A: T.Tensor((1024, 64), "float16"), B: T.Tensor((64, 64), "float16"),
                    Index: T.Tensor((4, 8), "int32"), C: T.Tensor((512, 64), "float32")):  # fmt: skip
    # NSA's loop: a let read from global memory, then the guard on it
    with T.Kernel(4, threads=128) as bx:
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 64), "float16")
        C_l = T.alloc_fragment((128, 64), "float32")
        T.clear(C_l)
        for i in T.Pipelined(8, num_stages=3):
            start = Index[bx, i] * 128
            if start >= 0:
                T.copy(A[start, 0], A_s)
                T.copy(B[0, 0], B_s)
                T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[bx * 128, 0])


def test_a_let_above_the_guard_is_evaluated_by_both_roles(nvcc, tmp_path):
    """The producer computes the let and the guard itself, and loads from the let's row."""
    art, kernel = _lower(selected_blocks)
    checks = """
        CHECK: tc_setmaxnreg_dec<24>();
        CHECK: for (int32_t i = 0; i < 8; ++i) {
        CHECK: const int32_t start = ((int32_t)((uint32_t)(Index[(int64_t)bx * 8 + (int64_t)i]) * (uint32_t)(128)));
        CHECK-NEXT: if ((start >= 0)) {
        CHECK: tc_tma_load<2>(A_s +
        CHECK-SAME: (int32_t)(start)}
        CHECK: tc_setmaxnreg_inc<232>();
        CHECK: for (int32_t i = 0; i < 8; ++i) {
        CHECK: const int32_t start = ((int32_t)((uint32_t)(Index[(int64_t)bx * 8 + (int64_t)i]) * (uint32_t)(128)));
        CHECK-NEXT: if ((start >= 0)) {
        CHECK: tc::gemm_wgmma<
    """
    filecheck(kernel, checks)
    _ptxas(nvcc, art, tmp_path)


def _guarded(kind: str):
    @T.prim_func
    def guarded(A: T.Tensor((1024, 64), "float16"), Mask: T.Tensor((8,), "int32"),
                C: T.Tensor((128, 64), "float32")):  # fmt: skip
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            C_l = T.alloc_fragment((128, 64), "float32")
            flag = T.alloc_var("int32")
            flag = 1
            tx = T.get_thread_binding()
            lane = tx % 2
            T.clear(C_l)
            for i in T.Pipelined(8, num_stages=2):
                if kind == "thread":
                    if Mask[lane] > i:
                        T.copy(A[i * 128, 0], A_s)
                        T.copy(A[0, 0], B_s)
                        T.gemm(A_s, B_s, C_l)
                elif kind == "register":
                    if flag > 0:
                        T.copy(A[i * 128, 0], A_s)
                        T.copy(A[0, 0], B_s)
                        T.gemm(A_s, B_s, C_l)
                elif kind == "written":
                    if C[0, i] > 0:
                        T.copy(A[i * 128, 0], A_s)
                        T.copy(A[0, 0], B_s)
                        T.gemm(A_s, B_s, C_l)
                else:
                    if Mask[i] > 0:
                        T.copy(A[i * 128, 0], A_s)
                        T.copy(A[0, 0], B_s)
                        T.gemm(A_s, B_s, C_l)
                    else:
                        T.copy(A[0, 0], A_s)
                        T.copy(A[0, 0], B_s)
                        T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C)

    return guarded


@pytest.mark.parametrize(
    ("kind", "reason"),
    [("thread", "(Mask[lane] > i) is not provably the same for every thread of the block: it depends on the "
                "thread index (through lane)"),
     ("register", "(flag > 0) is not provably the same for every thread of the block: it reads flag, a "
                  "local.var buffer"),
     ("written", "it reads C, which the kernel writes"),
     ("else", "its copies are under a branch with an else, or beside other statements")],
)  # fmt: skip
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_guard_not_provably_uniform_keeps_the_loop_synchronous_with_a_note(kind, reason, arch, capsys):
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        _, kernel = _lower(_guarded(kind), arch=arch)
    err = capsys.readouterr().err
    assert "T.Pipelined loop is not pipelined (its copies complete where they are issued): " in err, err
    assert reason in err and "test_guarded_pipeline.py:" in err, err
    assert "setmaxnreg" not in kernel and "(i % 2)" not in kernel  # no producer, no stages
