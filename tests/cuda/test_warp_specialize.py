"""Warp-specialized TMA + wgmma pipelines on sm_90a without a GPU: the generated code's structure (a
producer warpgroup after the consumers, setmaxnreg, full and empty mbarrier rings and their parities,
no block barrier in the main loop, named barriers among consumers), the launch metadata, the register
budget, the kernels that keep the pipeline without a producer (and the note saying why), and nvcc."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import tilecraft
import tilecraft.language as T
from benchmarks.hopper_check import build
from tilecraft.cuda.transform.warp_specialize import (
    GENERAL,
    PRODUCER_THREADS,
    REGISTERS_PER_SM,
    SPLITS,
    entry_registers,
)
from tilecraft.testing.filecheck import filecheck

SM90A = "cuda -arch=sm_90a"
OFF = {"tl.disable_warp_specialized": True}
RAGGED = (1000, 1032, 520)
# (block_M, block_N, block_K, threads, stages) -> (launch bounds, setmaxnreg dec / inc, consumer warps)
CONFIGS = {
    (128, 128, 64, 128, 3): ("256, 2", 24, 232, 4),
    (128, 256, 64, 256, 3): ("384, 1", 40, 232, 8),
    (64, 128, 64, 128, 3): ("256, 2", 24, 232, 4),
}


def _lower(func, configs=None):
    # nvrtc: generate only (the nvcc backend would also compile, which the nvcc tests below do on purpose)
    art = tilecraft.lower(func, target=SM90A, execution_backend="nvrtc", pass_configs=configs)
    src = art.device_sources["cuda-source"]
    return art, src[src.index('extern "C" __global__') :]


def _gemm(layout="NT", size=RAGGED, cfg=(128, 128, 64, 128, 3), dtype="bfloat16", configs=None):
    return _lower(build(*size, *cfg, dtype, layout), configs)


def _between(text: str, start: str, end: str) -> str:
    begin = text.index(start)
    return text[begin : text.index(end, begin)]


# ---------------------------------------------------------------- structure


@pytest.mark.parametrize("cfg", list(CONFIGS), ids=lambda c: "x".join(map(str, c)))
def test_a_producer_warpgroup_issues_the_tiles_and_the_consumers_run_wgmma(cfg):
    bounds, dec, inc, warps = CONFIGS[cfg]
    threads = cfg[3]
    art, kernel = _gemm(cfg=cfg)
    n = -(-RAGGED[2] // cfg[2])  # k tiles
    # full ring: the producer's expect-tx; empty ring: one arrival per consumer warp. The only block
    # barrier publishes the rings' initialisation, before the roles split; the parities come from the
    # iteration (no tc_phase state).
    checks = f"""
        CHECK: __launch_bounds__({bounds})
        CHECK: uint64_t tc_mbar[6]
        CHECK: for (int i = 0; i < 3; ++i) tc_mbar_init(&tc_mbar[i], 1);
        CHECK-NEXT: for (int i = 3; i < 6; ++i) tc_mbar_init(&tc_mbar[i], {warps});
        CHECK-NEXT: tc_mbar_init_fence();
        CHECK: __syncthreads();
        CHECK: if ((tx >= {threads})) {{
        CHECK-NEXT: tc_setmaxnreg_dec<{dec}>();
        CHECK-NEXT: if ((tx == {threads})) {{
        CHECK-NEXT: for (int32_t ko = 0; ko < {n}; ++ko) {{
        CHECK-NEXT: tc_mbar_wait(&tc_mbar[3 + (ko % 3)], (uint32_t)((((ko / 3) + 1) % 2)));
        CHECK-NEXT: tc_mbar_expect_tx(&tc_mbar[0 + (ko % 3)],
        CHECK-NEXT: tc_tma_load<2>(A_s + (((ko % 3) *
        CHECK: tc_tma_load<2>(B_s + (((ko % 3) *
        CHECK: }} else {{
        CHECK-NEXT: tc_setmaxnreg_inc<{inc}>();
        CHECK: for (int32_t ko = 0; ko < {n}; ++ko) {{
        CHECK-NEXT: tc_mbar_wait(&tc_mbar[0 + (ko % 3)], (uint32_t)(((ko / 3) % 2)));
        CHECK-NEXT: tc::gemm_wgmma<
        CHECK-SAME: , 1>(A_s + (((ko % 3) *
        CHECK-NEXT: if ((ko > 0)) {{
        CHECK-NEXT: if ((threadIdx.x & 31u) == 0u) tc_mbar_arrive(&tc_mbar[3 + ((ko + 2) % 3)]);
        CHECK: tc_wgmma_wait<0>();
        CHECK: *(uint32_t*)(C +
    """
    filecheck(kernel, checks)
    assert art.kernels[0].block == (threads + PRODUCER_THREADS,)
    assert kernel.count("__syncthreads()") == 1
    producer = _between(kernel, "tc_setmaxnreg_dec", "} else {")
    assert "tc_leader()" not in producer and producer.count("tc_mbar_expect_tx(") == 1  # one per tile
    assert "tc_phase" not in kernel


@T.prim_func
def gemm_through_shared(A: T.Tensor((1024, 512), "float16"), B: T.Tensor((512, 1024), "float16"),
                        C: T.Tensor((1024, 1024), "float16"), Flag: T.Tensor((8, 8), "int32")):  # fmt: skip
    # The consumers' code around the loop, with the thread indices it was written for; they meet at a
    # named barrier among themselves, never at a block barrier the producer would have to join.
    # CHECK: } else {
    # CHECK-NEXT: tc_setmaxnreg_inc<232>();
    # CHECK-NOT: __syncthreads
    # CHECK: tc_wgmma_wait<0>();
    # CHECK-NOT: __syncthreads
    # CHECK: tc_stmatrix_x4(C_s +
    # CHECK-NEXT: }
    # CHECK-NEXT: tc_fence_proxy_async(); tc_named_barrier(1, 128);
    # CHECK-NOT: __syncthreads
    # CHECK: tc_tma_store<2>(tc_tmap2,
    # CHECK-NOT: __syncthreads
    # CHECK: if ((tx == 127)) {
    # CHECK-NEXT: Flag[
    # CHECK-NOT: __syncthreads
    # CHECK: if (tc_leader()) tc_tma_store_wait_read();
    # CHECK-NOT: __syncthreads
    with T.Kernel(8, 8, threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        C_s = T.alloc_shared((128, 128), "float16")
        C_l = T.alloc_fragment((128, 128), "float32")
        tx = T.get_thread_binding()
        T.clear(C_l)
        for ko in T.Pipelined(8, num_stages=3):
            T.copy(A[by * 128, ko * 64], A_s)
            T.copy(B[ko * 64, bx * 128], B_s)
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C_s)
        T.copy(C_s, C[by * 128, bx * 128])
        if tx == 127:
            Flag[by, bx] = 1


def test_the_consumers_epilogue_meets_at_a_named_barrier_without_the_producer():
    """Code around the loop runs on the consumers only, with the thread indices it was written for."""
    art, kernel = _lower(gemm_through_shared)
    filecheck(kernel, gemm_through_shared)
    assert art.kernels[0].block == (256,)


def test_disable_warp_specialized_keeps_the_ring_without_a_producer():
    art, kernel = _gemm(configs=OFF)
    assert "setmaxnreg" not in kernel and "tc_mbar_arrive" not in kernel
    assert "__launch_bounds__(128)" in kernel and art.kernels[0].block == (128,)
    # each iteration waits for its stage, multiplies, and refills the stage after a block barrier
    checks = """
        CHECK: for (int32_t ko
        CHECK: tc_mbar_wait(
        CHECK: tc::gemm_wgmma<
        CHECK: __syncthreads()
        CHECK: tc_tma_load<2>(
    """
    filecheck(kernel, checks)


def test_the_other_paths_are_unchanged():
    for configs in ({"tl.disable_tma_lower": True}, {"tl.disable_wgmma": True}):
        art, kernel = _gemm(configs=configs)
        assert "setmaxnreg" not in kernel and art.kernels[0].block == (128,)
    art = tilecraft.lower(build(*RAGGED, 128, 128, 64, 128, 3, "bfloat16", "NT"), target="cuda -arch=sm_80")
    assert "tc_setmaxnreg_inc<" not in art.source("cuda-source").split('extern "C"')[1]


def test_fewer_k_tiles_than_stages():
    _, kernel = _gemm(size=(256, 256, 64))  # one k tile, three stages
    checks = """
        CHECK: tc_setmaxnreg_dec<24>();
        CHECK: tc_mbar_wait(&tc_mbar[3
        CHECK: tc_tma_load<2>(A_s
        CHECK: tc_setmaxnreg_inc<232>();
        CHECK: tc_mbar_wait(&tc_mbar[0
        CHECK-NEXT: tc::gemm_wgmma<
        CHECK: tc_wgmma_wait<0>();
    """
    filecheck(kernel, checks)


# ---------------------------------------------------------------- registers


@pytest.mark.parametrize("groups", sorted(SPLITS))
def test_the_register_split_fits_what_the_block_gets_at_launch(groups):
    split = SPLITS[groups]
    consumers = groups * 128
    total = consumers + PRODUCER_THREADS
    entry = entry_registers(total, split.min_blocks)
    for regs in (split.producer, split.consumer):
        assert regs % 8 == 0 and 24 <= regs <= 256  # PTX ISA: setmaxnreg's operand
    assert split.producer <= entry <= split.consumer  # .dec lowers, .inc raises (else undefined)
    assert PRODUCER_THREADS * split.producer + consumers * split.consumer <= total * entry
    assert total * entry * split.min_blocks <= REGISTERS_PER_SM


# ---------------------------------------------------------------- kernels that keep the plain ring


@T.prim_func
def gemm_with_a_scale(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"),
                      C: T.Tensor((512, 512), "float32")):  # fmt: skip
    with T.Kernel(4, 4, threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        C_l = T.alloc_fragment((128, 128), "float32")
        T.clear(C_l)
        for ko in T.Pipelined(8, num_stages=3):
            T.copy(A[by * 128, ko * 64], A_s)
            T.copy(B[ko * 64, bx * 128], B_s)
            T.gemm(A_s, B_s, C_l)
            for i, j in T.Parallel(128, 128):
                C_l[i, j] = C_l[i, j] * 0.5
        T.copy(C_l, C[by * 128, bx * 128])


@T.prim_func
def gemm_of_512_threads(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"),
                        C: T.Tensor((512, 512), "float32")):  # fmt: skip
    with T.Kernel(2, 2, threads=512) as (bx, by):
        A_s = T.alloc_shared((256, 64), "float16")
        B_s = T.alloc_shared((64, 256), "float16")
        C_l = T.alloc_fragment((256, 256), "float32")
        T.clear(C_l)
        for ko in T.Pipelined(8, num_stages=3):
            T.copy(A[by * 256, ko * 64], A_s)
            T.copy(B[ko * 64, bx * 256], B_s)
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[by * 256, bx * 256])


@T.prim_func
def gemm_in_two_halves(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"),
                       C: T.Tensor((512, 512), "float32")):  # fmt: skip
    with T.Kernel(4, 4, threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        C_l = T.alloc_fragment((128, 128), "float32")
        T.clear(C_l)
        for ko in T.Pipelined(4, num_stages=2):
            T.copy(A[by * 128, ko * 64], A_s)
            T.copy(B[ko * 64, bx * 128], B_s)
            T.gemm(A_s, B_s, C_l)
        for ko in T.Pipelined(4, num_stages=2):
            T.copy(A[by * 128, ko * 64 + 256], A_s)
            T.copy(B[ko * 64 + 256, bx * 128], B_s)
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[by * 128, bx * 128])


@T.prim_func
def gemm_reading_a_tile_after_the_loop(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"),
                                       C: T.Tensor((512, 512), "float32"), D: T.Tensor((512, 64), "float16")):  # fmt: skip
    with T.Kernel(4, 4, threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        C_l = T.alloc_fragment((128, 128), "float32")
        T.clear(C_l)
        for ko in T.Pipelined(8, num_stages=3):
            T.copy(A[by * 128, ko * 64], A_s)
            T.copy(B[ko * 64, bx * 128], B_s)
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[by * 128, bx * 128])
        T.copy(A_s, D[by * 128, 0])


@T.prim_func
def gemm_with_computed_offsets(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"),
                               C: T.Tensor((512, 512), "float32")):  # fmt: skip
    with T.Kernel(4, 4, threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        C_l = T.alloc_fragment((128, 128), "float32")
        row = T.alloc_var("int32")
        row = by * 128
        T.clear(C_l)
        for ko in T.Pipelined(8, num_stages=3):
            T.copy(A[row, ko * 64], A_s)
            T.copy(B[ko * 64, bx * 128], B_s)
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[by * 128, bx * 128])


@T.prim_func
def gemm_with_a_cp_async_operand(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"),
                                 C: T.Tensor((512, 512), "float32")):  # fmt: skip
    with T.Kernel(4, 4, threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        C_l = T.alloc_fragment((128, 128), "float32")
        T.clear(C_l)
        for ko in T.Pipelined(8, num_stages=3):
            T.copy(A[by * 128, ko * 64], A_s)
            T.copy(B[ko * 64, bx * 128], B_s, disable_tma=True)
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[by * 128, bx * 128])


@pytest.mark.parametrize(
    ("func", "threads", "reason"),
    [
        (gemm_with_a_cp_async_operand, 128, "a copy of the loop is not a TMA load (cp.async)"),
        (gemm_of_512_threads, 512, "threads=(512,)"),
        (gemm_in_two_halves, 128, "the kernel has 2 T.Pipelined loops"),
        (gemm_reading_a_tile_after_the_loop, 128, "a tile the loop loads is also used outside the loop"),
        (gemm_with_computed_offsets, 128, "the TMA coordinates read on-chip values"),
    ],
    ids=[
        "cp-async",
        "512-threads",
        "two-loops",
        "tile-used-after",
        "on-chip-coordinates",
    ],
)
def test_kernels_that_do_not_fit_keep_the_ring_and_a_verbose_note_says_why(func, threads, reason, capsys):
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        art, kernel = _lower(func)
    err = capsys.readouterr().err
    assert "T.Pipelined loop is not warp-specialized" in err and reason in err, err
    assert "test_warp_specialize.py:" in err  # located at the user's loop
    assert "setmaxnreg" not in kernel and "tc_mbar_arrive" not in kernel
    assert art.kernels[0].block == (threads,) and f"__launch_bounds__({threads})" in kernel


def test_operands_off_tma_keep_the_ring_with_a_note(capsys):
    """The consumers would still load B's tiles themselves and meet at a barrier for each."""
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        art, kernel = _gemm("NN", (1000, 1030, 520))  # B's rows of 2060 bytes: element copies
    err = capsys.readouterr().err
    assert (
        "not warp-specialized: a copy of the loop is not a TMA load (B_s is loaded from global memory" in err
    )
    assert "setmaxnreg" not in kernel and art.kernels[0].block == (128,)


def test_the_general_schedule_is_on_by_default_and_its_switch_keeps_the_ring(capsys):
    """Loops with code between their gemms are specialized by default; with the switch off they keep
    the ring, and the note names the switch."""
    art, kernel = _lower(gemm_with_a_scale)
    assert "setmaxnreg" in kernel and art.kernels[0].block == (256,)
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        art, kernel = _lower(gemm_with_a_scale, {GENERAL: False})
    assert f"switched off ({GENERAL}=False)" in capsys.readouterr().err
    assert "setmaxnreg" not in kernel and art.kernels[0].block == (128,)


def test_code_beside_the_gemm_takes_the_general_schedule():
    """A loop with other code than gemms (here a scale of the accumulator) is specialized too: each
    copy's tile has its own full and empty ring, the gemm completes (no group in flight across
    iterations), and each tile is released after the gemm that reads it."""
    art, kernel = _lower(gemm_with_a_scale, {GENERAL: True})
    checks = """
        CHECK: __launch_bounds__(256, 2)
        CHECK: uint64_t tc_mbar[12]
        CHECK: tc_setmaxnreg_dec<24>();
        CHECK: for (int32_t ko = 0; ko < 8; ++ko) {
        CHECK: tc_mbar_wait(&tc_mbar[3 + (ko % 3)]
        CHECK: tc_tma_load<2>(A_s
        CHECK: tc_mbar_wait(&tc_mbar[9 + (ko % 3)]
        CHECK: tc_tma_load<2>(B_s
        CHECK: tc_setmaxnreg_inc<232>();
        CHECK: for (int32_t ko = 0; ko < 8; ++ko) {
        CHECK: tc_mbar_wait(&tc_mbar[0 + (ko % 3)]
        CHECK: tc_mbar_wait(&tc_mbar[6 + (ko % 3)]
        CHECK-NOT: tc_mbar_arrive(
        CHECK: tc::gemm_wgmma<128, 128, 64, 1, 1, false, false, false, 64, 64>(A_s
        CHECK: tc_mbar_arrive(&tc_mbar[3 + (ko % 3)]);
        CHECK: tc_mbar_arrive(&tc_mbar[9 + (ko % 3)]);
        CHECK: (C_l[(int32_t)r2] * 0.5f)
    """
    filecheck(kernel, checks)
    assert art.kernels[0].block == (256,) and "tc_wgmma_wait<0>" not in kernel


def test_a_gemm_whose_accumulator_is_read_under_a_condition_stays_in_flight():
    """fp8 GEMM's "2xAcc" (the accumulator added into a second one every other tile): the gemm leaves its
    group in flight, releases the previous tile's stages once it returns, and completes inside the branch
    that reads the accumulator and after the loop."""
    from tilecraft.testing.conformance.pipelined_stages import promoted_accumulator

    art, kernel = _lower(promoted_accumulator())
    consumer = kernel[kernel.index("tc_setmaxnreg_inc") :]
    checks = """
        CHECK: for (int32_t ko = 0; ko < 5; ++ko) {
        CHECK: tc_mbar_wait(&tc_mbar[0 + (ko % 3)]
        CHECK: tc_mbar_wait(&tc_mbar[6 + (ko % 3)]
        CHECK-NOT: tc_mbar_arrive(
        CHECK: tc::gemm_wgmma<128, 128, 64, 1, 1, false, true, false, 64, 64, 1>(A_s
        CHECK-NEXT: if ((ko > 0)) {
        CHECK-NEXT: tc_mbar_arrive(&tc_mbar[3 + ((ko + 2) % 3)]);
        CHECK-NEXT: tc_mbar_arrive(&tc_mbar[9 + ((ko + 2) % 3)]);
        CHECK: if ((((ko + 1) % 2) == 0)) {
        CHECK-NEXT: tc_wgmma_wait<0>();
        CHECK: C_sum[(int32_t)r{{[0-9]+}}] + C_l[(int32_t)r{{[0-9]+}}]
        CHECK: tc_wgmma_wait<0>();
    """
    filecheck(consumer, checks)
    assert art.kernels[0].block == (256,)


def test_a_gemm_whose_accumulator_is_read_right_after_completes_in_place(capsys):
    """Nothing would run beside the gemm: it completes in place (the general schedule's default) and the
    note says why."""
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        _, kernel = _lower(gemm_with_a_scale, {GENERAL: True})
    assert "tc_wgmma_wait<0>" not in kernel
    assert "reads its accumulator (nothing would overlap the gemm)" in capsys.readouterr().err


# ---------------------------------------------------------------- nvcc


def _ptxas(nvcc: str, source: str, tmp_path: Path) -> str:
    path = tmp_path / "k.cu"
    path.write_text(source)
    done = subprocess.run([nvcc, "-arch=sm_90a", "-cubin", "-O3", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"),
                           str(path)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.parametrize("layout", ["NN", "NT", "TN"])
@pytest.mark.parametrize("cfg", [*CONFIGS, (128, 128, 32, 128, 4)], ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("size", [(4096, 4096, 4096), RAGGED], ids=["4096", "ragged"])
def test_specialized_gemms_compile_for_sm90a_with_the_registers_setmaxnreg_assumes(nvcc, tmp_path, layout, cfg,
                                                                                  size):  # fmt: skip
    art, kernel = _gemm(layout, size, cfg, "float16")
    assert "tc_setmaxnreg_inc<" in kernel
    report = _ptxas(nvcc, art.device_sources["cuda-source"], tmp_path)
    assert "C7508" not in report  # "'setmaxnreg' ignored; unable to determine register count at entry"
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    split = SPLITS[cfg[3] // 128]
    used = int(re.search(r"Used (\d+) registers", report).group(1))
    assert used == entry_registers(cfg[3] + PRODUCER_THREADS, split.min_blocks), report


@pytest.mark.parametrize("layout", ["NN", "NT", "TN"])
@pytest.mark.parametrize("cfg", list(CONFIGS), ids=lambda c: "x".join(map(str, c)))
def test_unspecialized_ragged_gemms_compile_for_sm90a(nvcc, tmp_path, layout, cfg):
    """The ring without a producer at the ragged size (test_tma.py compiles it at 4096^3)."""
    art, kernel = _gemm(layout, cfg=cfg, configs=OFF)
    assert "setmaxnreg" not in kernel
    _ptxas(nvcc, art.device_sources["cuda-source"], tmp_path)


@pytest.mark.parametrize("func", [gemm_through_shared, build(1000, 1032, 64, 128, 128, 64, 128, 3, "float16", "TN")],
                         ids=["named-barrier-epilogue", "one-k-tile"])  # fmt: skip
def test_more_specialized_kernels_compile(nvcc, tmp_path, func):
    art, kernel = _lower(func)
    assert "tc_setmaxnreg_inc<" in kernel
    _ptxas(nvcc, art.device_sources["cuda-source"], tmp_path)


def test_two_pipelined_loops_over_one_tile_share_one_staged_allocation(nvcc, tmp_path):
    """Each loop staged the tile anew and only the last copy was allocated; the first loop's accesses
    then named a buffer out of scope once narrow-shared-scopes placed it (nvcc: A_s undefined)."""
    art, kernel = _lower(gemm_in_two_halves)
    assert kernel.count("uint16_t* __restrict__ A_s = ") == 1
    _ptxas(nvcc, art.device_sources["cuda-source"], tmp_path)
