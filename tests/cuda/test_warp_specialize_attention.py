"""Warp specialization of flash attention's pipelined loop on sm_90a without a GPU (the general
schedule: softmax between TMA-fed gemms). The generated code's structure (a producer warpgroup issuing K
and V on separate barriers, the consumers waiting for each tile where its copy stood and releasing it
after the gemm that reads it, no block barrier in the main loop), the trip counts of the causal loop,
the register split and ptxas's report, the kernels that keep the pipeline without a producer, and that
the conformance cases and the benchmarks' kernels take this path."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import tilecraft
import tilecraft.language as T
from benchmarks.hopper_attention import build
from tests.cuda.helpers import check_in_order
from tilecraft.cuda.transform.overlap import OVERLAP
from tilecraft.cuda.transform.warp_specialize import (
    GENERAL,
    GENERAL_SPLITS,
    PRODUCER_THREADS,
    REGISTERS_PER_SM,
    entry_registers,
)
from tilecraft.testing.conformance import attention_bhsd as AB

SM90A = "cuda -arch=sm_90a"
OFF = {"tl.disable_warp_specialized": True}
SIZE = (8, 16, 4096)  # the benchmark's B8 H16 S4096 (D 128, 128x128 tiles, 2 stages, 256 threads)


def _lower(func, configs=None):
    # the general schedule alone, as written out; tests/cuda/test_overlap.py covers the overlap on top of it
    art = tilecraft.lower(func, target=SM90A, pass_configs={GENERAL: True, OVERLAP: False, **(configs or {})})
    src = art.device_sources["cuda-source"]
    return art, src[src.index('extern "C" __global__') :]


def _between(text: str, start: str, end: str) -> str:
    begin = text.index(start)
    return text[begin : text.index(end, begin)]


# ---------------------------------------------------------------- structure

# K's ring pair is barriers 1-2 (full) and 3-4 (empty), V's 5-6 and 7-8; barrier 0 is Q's load.
PRODUCER = (
    "tc_mbar_wait(&tc_mbar[3 + (k % 2)], (uint32_t)((((k / 2) + 1) % 2)));",  # K's stage is empty
    "tc_mbar_expect_tx(&tc_mbar[1 + (k % 2)], 32768u);",
    "tc_tma_load<4>(K_shared + (((k % 2) * 16384) + 0), tc_tmap0, {(int32_t)(0), (int32_t)((k * 128))",
    "tc_tma_load<4>(K_shared + (((k % 2) * 16384) + 8192), tc_tmap0, {(int32_t)(64), (int32_t)((k * 128))",
    "tc_mbar_wait(&tc_mbar[7 + (k % 2)], (uint32_t)((((k / 2) + 1) % 2)));",  # V's stage is empty
    "tc_mbar_expect_tx(&tc_mbar[5 + (k % 2)], 32768u);",
    "tc_tma_load<4>(V_shared + (((k % 2) * 16384) + 0), tc_tmap1,",
    "tc_tma_load<4>(V_shared + (((k % 2) * 16384) + 8192), tc_tmap1,",
)
CONSUMER_LOOP = (
    "tc_mbar_wait(&tc_mbar[1 + (k % 2)], (uint32_t)(((k / 2) % 2)));",  # K, where its copy was: the top
    "acc_s[(int32_t)r4] = ",  # the mask
    "tc::gemm_wgmma<128, 128, 128, 2, 1, false, true, false, 64, 64>(Q_shared, K_shared + (((k % 2) * 16384) + 0),"
    " acc_s);",  # no group left in flight: the call has waited for its wgmmas
    "if ((threadIdx.x & 31u) == 0u) tc_mbar_arrive(&tc_mbar[3 + (k % 2)]);",  # K released
    "tc_max_f32(",
    "exp2f(",
    "acc_s_cast[(int32_t)r11] = ",
    "acc_o[(int32_t)r12] = (acc_o[(int32_t)r12] * scores_scale",
    "tc_mbar_wait(&tc_mbar[5 + (k % 2)], (uint32_t)(((k / 2) % 2)));",  # V, where its copy was: mid-loop
    "tc::gemm_wgmma_rs<128, 128, 128, 2, 1, false, false, 64>((const uint32_t*)acc_s_cast, V_shared + (((k % 2)"
    " * 16384) + 0), acc_o);",
    "if ((threadIdx.x & 31u) == 0u) tc_mbar_arrive(&tc_mbar[7 + (k % 2)]);",  # V released
)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_the_producer_issues_k_and_v_and_the_consumers_wait_where_the_copies_were(causal):
    art, kernel = _lower(build(*SIZE, causal))
    trips = ("(bx + 1)", "loop_range") if causal else ("32", "32")  # min(32, bx + 1) for bx < 32
    check_in_order(kernel, "__launch_bounds__(384, 1)", "uint64_t tc_mbar[9]",
           "for (int i = 0; i < 1; ++i) tc_mbar_init(&tc_mbar[i], 1);",  # Q's synchronous barrier
           "for (int i = 1; i < 3; ++i) tc_mbar_init(&tc_mbar[i], 1);",  # K full: the producer's expect-tx
           "for (int i = 3; i < 5; ++i) tc_mbar_init(&tc_mbar[i], 8);",  # K empty: one per consumer warp
           "for (int i = 5; i < 7; ++i) tc_mbar_init(&tc_mbar[i], 1);",  # V full
           "for (int i = 7; i < 9; ++i) tc_mbar_init(&tc_mbar[i], 8);",  # V empty
           "tc_mbar_init_fence();", "__syncthreads();",
           "if ((tx >= 256)) {", "tc_setmaxnreg_dec<24>();", "if ((tx == 256)) {",
           f"for (int32_t k = 0; k < {trips[0]}; ++k) {{", *PRODUCER,
           "} else {", "tc_setmaxnreg_inc<240>();",
           "tc_tma_load<4>(Q_shared + 0, tc_tmap2", "tc_mbar_wait(&tc_mbar[0], tc_phase0 & 1u);",
           f"for (int32_t k = 0; k < {trips[1]}; ++k) {{", *CONSUMER_LOOP,
           "/ logsum[", "tc_named_barrier(1, 256);", "tc_tma_store<4>(tc_tmap3")  # fmt: skip
    assert art.kernels[0].block == (256 + PRODUCER_THREADS,)
    # the only block barrier publishes the mbarriers' initialisation, before the roles split
    assert kernel.count("__syncthreads()") == 1
    assert kernel.index("__syncthreads()") < kernel.index("tc_setmaxnreg_dec")
    producer = _between(kernel, "tc_setmaxnreg_dec", "} else {")
    assert "tc_leader()" not in producer and producer.count("tc_mbar_expect_tx(") == 2  # K and V
    consumer = kernel[kernel.index("tc_setmaxnreg_inc") :]
    loop = _between(consumer, f"for (int32_t k = 0; k < {trips[1]}; ++k) {{", "/ logsum[")
    assert "__syncthreads" not in loop and "tc_named_barrier" not in loop and "__syncwarp" not in loop
    assert "tc_wgmma_wait" not in loop and "tc_phase" not in loop  # parities come from the iteration
    if causal:
        assert "const int32_t loop_range = (bx + 1);" in kernel  # the consumers' trip count, the producer's


def test_the_producer_inlines_only_the_lets_below_the_split():
    """The causal `loop_range` is bound inside the consumers' branch, so the producer computes its value;
    the GEMM's rasterized block indices (T.use_swizzle) are bound above the split, in both branches."""
    from benchmarks.hopper_check import build as gemm

    _, kernel = _lower(build(*SIZE, True))
    producer = _between(kernel, "tc_setmaxnreg_dec", "} else {")
    assert "loop_range" not in producer and "k < (bx + 1)" in producer
    _, kernel = _lower(gemm(4096, 4096, 4096, 128, 128, 64, 128, 3, "float16", "NT"))
    producer = _between(kernel, "tc_setmaxnreg_dec", "} else {")
    assert "(int32_t)((by_r * 128))" in producer and "(int32_t)((bx_r * 128))" in producer


def test_one_consumer_warpgroup_keeps_two_blocks_per_sm():
    art, kernel = _lower(AB.mha_fwd_bhsd(*AB.CONFIGS["causal_one_warpgroup"]))
    check_in_order(kernel, "__launch_bounds__(256, 2)", "if ((tx >= 128)) {", "tc_setmaxnreg_dec<24>();",
           "if ((tx == 128)) {", "for (int32_t k = 0; k < (bx + 1); ++k) {", "} else {",
           "tc_setmaxnreg_inc<232>();", "for (int32_t k = 0; k < loop_range; ++k) {",
           "tc_mbar_wait(&tc_mbar[1 + (k % 2)]", "tc::gemm_wgmma<64, 64, 64, 1, 1,",
           "tc_mbar_arrive(&tc_mbar[3 + (k % 2)]);", "tc_mbar_wait(&tc_mbar[5 + (k % 2)]",
           "tc::gemm_wgmma_rs<64, 64, 64, 1, 1,", "tc_mbar_arrive(&tc_mbar[7 + (k % 2)]);")  # fmt: skip
    assert art.kernels[0].block == (256,)


def test_barriers_among_the_consumers_inside_the_loop_are_named_ones():
    """P staged through shared memory: its store must wait for the previous P @ V to finish reading it
    and the gemm for the store, both among the consumers alone (the producer never meets them)."""
    art, kernel = _lower(AB.build("p_shared")())
    consumer = kernel[kernel.index("tc_setmaxnreg_inc<232>();") :]
    loop = _between(consumer, "for (int32_t k = 0; k < 5; ++k) {", "/ logsum[")
    check_in_order(loop, "tc::gemm_wgmma<64, 64, 64, 1, 1, false, true,", "tc_mbar_arrive(&tc_mbar[3 + (k % 2)]);",
           "tc_fence_proxy_async(); tc_named_barrier(1, 128);", "P_shared[",
           "tc_mbar_wait(&tc_mbar[5 + (k % 2)]", "tc_fence_proxy_async(); tc_named_barrier(1, 128);",
           "tc::gemm_wgmma<64, 64, 64, 1, 1, false, false, false, 64, 64>(P_shared, V_shared",
           "tc_mbar_arrive(&tc_mbar[7 + (k % 2)]);")  # fmt: skip
    assert "__syncthreads" not in consumer and art.kernels[0].block == (256,)


def test_fewer_tiles_than_stages():
    """One tile and three stages: the producer's first waits pass at once (the phase before)."""
    art, kernel = _lower(AB.mha_fwd_bhsd(*AB.CONFIGS["one_tile_three_stages"]))
    check_in_order(kernel, "uint64_t tc_mbar[13]", "tc_setmaxnreg_dec<24>();", "for (int32_t k = 0; k < 1; ++k) {",
           "tc_mbar_wait(&tc_mbar[4 + (k % 3)], (uint32_t)((((k / 3) + 1) % 2)));", "tc_setmaxnreg_inc<240>();",
           "for (int32_t k = 0; k < 1; ++k) {", "tc_mbar_wait(&tc_mbar[1 + (k % 3)], (uint32_t)(((k / 3) % 2)));")  # fmt: skip
    assert art.kernels[0].block == (384,)


# ---------------------------------------------------------------- registers


def test_the_general_register_split_fits_what_the_block_gets_at_launch():
    for groups, split in GENERAL_SPLITS.items():
        consumers = groups * 128
        total = consumers + PRODUCER_THREADS
        entry = entry_registers(total, split.min_blocks)
        for regs in (split.producer, split.consumer):
            assert regs % 8 == 0 and 24 <= regs <= 256  # PTX ISA: setmaxnreg's operand
        assert split.producer <= entry <= split.consumer  # .dec lowers, .inc raises (else undefined)
        assert PRODUCER_THREADS * split.producer + consumers * split.consumer <= total * entry
        assert total * entry * split.min_blocks <= REGISTERS_PER_SM


def _ptxas(nvcc: str, source: str, tmp_path: Path, *flags: str) -> str:
    path = tmp_path / "k.cu"
    path.write_text(source)
    done = subprocess.run([nvcc, "-arch=sm_90a", "-cubin", "-O3", *flags, "-Xptxas", "-v", "-o",
                           str(tmp_path / "k.cubin"), str(path)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr


KERNELS = {
    "full": (lambda: build(*SIZE, False), 384, 1),
    "causal": (lambda: build(*SIZE, True), 384, 1),
    "ragged-causal": (lambda: AB.mha_fwd_bhsd(*AB.CONFIGS["causal"]), 384, 1),
    "one-warpgroup": (lambda: AB.mha_fwd_bhsd(*AB.CONFIGS["causal_one_warpgroup"]), 256, 2),
    "one-tile": (lambda: AB.mha_fwd_bhsd(*AB.CONFIGS["one_tile_three_stages"]), 384, 1),
    "p-shared": (lambda: AB.mha_fwd_bhsd(*AB.CONFIGS["p_shared"]), 256, 2),
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_attention_compiles_for_sm90a_without_spills(nvcc, tmp_path, name):
    make, threads, min_blocks = KERNELS[name]
    art, kernel = _lower(make())
    assert "tc_setmaxnreg_inc<" in kernel
    report = _ptxas(nvcc, art.device_sources["cuda-source"], tmp_path)
    assert "C7508" not in report  # "'setmaxnreg' ignored; unable to determine register count at entry"
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "serialized" not in report, report  # ptxas keeps the wgmmas asynchronous
    used = int(re.search(r"Used (\d+) registers", report).group(1))
    assert used == entry_registers(threads, min_blocks), report


# ---------------------------------------------------------------- kernels that keep the plain ring


def test_one_stage_gets_a_producer_with_one_ring_slot_per_tile():
    """TileLang's 64x64 / 128 threads / 1 stage, as TileLang runs it: K and V each have one stage and
    their own ring pair, so the producer loads V(k) while the consumers compute Q @ K(k)^T and the
    softmax, and K(k + 1) once K(k) is released (parities k % 2, the empty barrier's the phase before)."""
    art, kernel = _lower(AB.mha_fwd_bhsd(1, 2, 200, 64, True, 64, 64, 1, 128))
    assert "tc_setmaxnreg_dec<24>" in kernel and art.kernels[0].block == (256,)
    check_in_order(
        kernel,
        "tc_mbar_wait(&tc_mbar[2], (uint32_t)(((k + 1) % 2)));",  # K's slot is empty
        "tc_tma_load<4>(K_shared + 0, tc_tmap0,",
        "tc_mbar_wait(&tc_mbar[4], (uint32_t)(((k + 1) % 2)));",  # V's slot is empty
        "tc_tma_load<4>(V_shared + 0, tc_tmap1,",
        "tc_setmaxnreg_inc<232>",
        "tc_mbar_wait(&tc_mbar[1], (uint32_t)((k % 2)));",  # K(k) has landed
        "tc::gemm_wgmma<",
        "tc_mbar_arrive(&tc_mbar[2]",  # K released after Q @ K^T
        "tc_mbar_wait(&tc_mbar[3], (uint32_t)((k % 2)));",  # V(k) has landed
        "tc::gemm_wgmma_rs<",
        "tc_mbar_arrive(&tc_mbar[4]",
    )


def test_a_one_stage_gemm_loop_keeps_the_ring(capsys):
    """The GEMM schedule releases a stage once the next one's wgmmas are issued: one stage would wait on
    itself, so a loop of TMA loads and gemms only needs two."""
    from benchmarks.hopper_check import build as gemm

    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        art, kernel = _lower(gemm(512, 512, 512, 128, 128, 64, 128, 1, "float16", "NT"))
    assert "num_stages=1 in a loop of TMA loads and gemms only" in capsys.readouterr().err
    assert "setmaxnreg" not in kernel and art.kernels[0].block == (128,)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_disable_warp_specialized_keeps_the_ring_without_a_producer(nvcc, tmp_path, causal):
    art, kernel = _lower(build(*SIZE, causal), OFF)
    assert "setmaxnreg" not in kernel and "tc_mbar_arrive" not in kernel
    assert "__launch_bounds__(256)" in kernel and art.kernels[0].block == (256,)
    # a ring per tile (software_pipeline._per_tile): each thread waits for K right before Q @ K^T, meets
    # the others and refills K's stage with the tile two on; the same for V around P @ V
    check_in_order(kernel, "for (int i = 1; i < 3; ++i) tc_mbar_init(&tc_mbar[i], 1);",
                   "for (int i = 3; i < 5; ++i) tc_mbar_init(&tc_mbar[i], 1);", "for (int32_t k = 0; k < ",
                   "tc_mbar_wait(&tc_mbar[1 + tc_stage], (tc_phase1 >> tc_stage) & 1u);", "tc::gemm_wgmma<",
                   "__syncthreads();", "tc_tma_load<4>(K_shared + ((((k + 2) % 2)",
                   "tc_mbar_wait(&tc_mbar[3 + tc_stage], (tc_phase2 >> tc_stage) & 1u);", "tc::gemm_wgmma_rs<",
                   "__syncthreads();", "tc_tma_load<4>(V_shared + ((((k + 2) % 2)")  # fmt: skip
    _ptxas(nvcc, art.device_sources["cuda-source"], tmp_path)


@T.prim_func
def reads_a_tile_before_its_copy(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"),
                                 C: T.Tensor((512, 512), "float32")):  # fmt: skip
    with T.Kernel(4, 4, threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        C_l = T.alloc_fragment((128, 128), "float32")
        T.clear(C_l)
        for ko in T.Pipelined(8, num_stages=2):
            T.copy(B[ko * 64, bx * 128], B_s)
            T.gemm(A_s, B_s, C_l)  # A_s of the previous iteration
            T.copy(A[by * 128, ko * 64], A_s)
            for i, j in T.Parallel(128, 128):
                C_l[i, j] = C_l[i, j] * 0.5
        T.copy(C_l, C[by * 128, bx * 128])


@T.prim_func
def writes_a_loaded_tile(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"),
                         C: T.Tensor((512, 512), "float32")):  # fmt: skip
    with T.Kernel(4, 4, threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        C_l = T.alloc_fragment((128, 128), "float32")
        T.clear(C_l)
        for ko in T.Pipelined(8, num_stages=2):
            T.copy(A[by * 128, ko * 64], A_s)
            T.copy(B[ko * 64, bx * 128], B_s)
            for i, j in T.Parallel(128, 64):
                A_s[i, j] = A_s[i, j] * 2.0
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[by * 128, bx * 128])


@pytest.mark.parametrize(
    ("func", "reason"),
    [
        (reads_a_tile_before_its_copy, "the loop reads A_s before its TMA copy (line "),
        (writes_a_loaded_tile, "the loop's code writes A_s, a tile it loads by TMA (line "),
    ],
    ids=["read-before-copy", "writes-loaded-tile"],
)
def test_loops_the_general_schedule_cannot_take_keep_the_ring_with_a_note(func, reason, capsys):
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        art, kernel = _lower(func)
    err = capsys.readouterr().err
    assert "T.Pipelined loop is not warp-specialized" in err and reason in err, err
    assert "setmaxnreg" not in kernel and art.kernels[0].block == (128,)


# ---------------------------------------------------------------- who takes this path


@pytest.mark.parametrize("name", list(AB.CONFIGS))
def test_the_conformance_attention_cases_are_specialized(name):
    """tests/conformance runs these on the GPU (flash_attention_bhsd_*; the bshd layout's
    flash_attention_bshd_* are in test_tma_nd.py); the older flash_attention_* cases (bshd, 1 stage)
    load K and V by TMA without a producer."""
    threads = AB.CONFIGS[name][8]
    art, kernel = _lower(AB.build(name)())
    assert "tc_setmaxnreg_inc<" in kernel and art.kernels[0].block == (threads + PRODUCER_THREADS,)
    assert kernel.count("tc_mbar_expect_tx(") == 3  # Q (the consumers' own), K and V (the producer's)


def test_the_attention_benchmark_measures_the_specialized_path():
    from benchmarks.hopper_attention import PATHS

    def kernel(causal, path):  # as the benchmark lowers it
        art = tilecraft.lower(build(*SIZE, causal), target=SM90A, pass_configs=PATHS[path] or None)
        src = art.device_sources["cuda-source"]
        return src[src.index('extern "C" __global__') :]

    for causal in (False, True):
        sm90, overlap = kernel(causal, "sm90"), kernel(causal, "overlap")
        assert "tc_setmaxnreg_inc<240>" in sm90 and "tc_wgmma_wait<1>" not in sm90
        assert "tc_setmaxnreg_inc<240>" in overlap and "tc_wgmma_wait<1>" in overlap
        for path in ("ring", "ampere"):
            assert "setmaxnreg" not in kernel(causal, path)


def test_the_contender_attention_text_is_specialized(monkeypatch):
    """benchmarks/tilelang_contender.py's copy of TileLang's example (fast math, `q_idx` lets)."""
    pytest.importorskip("torch")
    # the module imports benchmarks/cuda.py's timing helpers (triton) at its top; the kernel text needs none
    monkeypatch.setitem(sys.modules, "benchmarks.cuda", SimpleNamespace(check=None, side_by_side_ms=None))
    sys.modules.pop("benchmarks.tilelang_contender", None)
    try:
        from benchmarks.tilelang_contender import ATTENTION, mha_program
    finally:
        sys.modules.pop("benchmarks.tilelang_contender", None)  # it holds the stand-ins: import it anew later

    lang = SimpleNamespace(jit=lambda **_: lambda f: f, T=T, fast_math={"tl.enable_fast_math": True})
    a = ATTENTION
    for causal in (False, True):
        func = mha_program(lang, a["batch"], a["heads"], a["seq"], a["dim"], causal, a["block_M"], a["block_N"],
                           a["stages"], a["threads"])  # fmt: skip
        art, kernel = _lower(func, lang.fast_math)
        assert "tc_setmaxnreg_inc<240>" in kernel and art.kernels[0].block == (384,)
