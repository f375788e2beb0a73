"""The sm_90a epilogue through shared memory without a GPU: TMA stores of staging tiles (the generated code's
fences, barriers and waits in their order, the producer warpgroup kept out of them), stmatrix into
them checked element by element against the PTX ISA's fragment layout, the switches and fallbacks, the
tensor maps of stores against the driver's rules, and nvcc compiles of GEMMs, flash attention and a
persistent GEMM that stage their output."""

from __future__ import annotations

import itertools
import random
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

import tilecraft
import tilecraft.language as T
from benchmarks import hopper_epilogue as HE
from benchmarks.hopper_attention import build as attention
from tests.cuda.helpers import check_in_order
from tests.cuda.test_tma import FakeDriver
from tilecraft.backend import Target
from tilecraft.backend.context import create_backend_context
from tilecraft.cuda.intrinsics.mma_layouts import (
    WARP_SIZE,
    mma_accumulator,
    mma_accumulator_coords,
    wgmma_accumulator,
    wgmma_accumulator_coords,
)
from tilecraft.cuda.intrinsics.simt import cuda_simt
from tilecraft.cuda.ir import NamedBarrier, SetMaxNReg, StMatrix, TmaStoreCopy, TmaStoreWait
from tilecraft.cuda.op.stmatrix import matrices
from tilecraft.cuda.op.tma_store import TMA_STORE
from tilecraft.cuda.shared_layout import wgmma_operand
from tilecraft.cuda.transform.warp_specialize import PRODUCER_THREADS, SPLITS, entry_registers
from tilecraft.errors import ArgumentError
from tilecraft.execution.cuda_driver.tensor_map import TensorMaps, encode_arguments
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.eval import evaluate
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import Mutator, walk
from tilecraft.layout.tile import blocked_layout
from tilecraft.runtime.artifact import TensorMapInfo
from tilecraft.testing.conformance import persistent_tiles as PT
from tilecraft.testing.filecheck import filecheck

SM90A = "cuda -arch=sm_90a -sm_count=132"
OFF = {TMA_STORE: False}
NO_WS = {"tl.disable_warp_specialized": True}
RAGGED = (1000, 1032, 520)  # ragged in M and N; rows of 2064 bytes: TMA stores, clipped at both edges
WIDE = (128, 256, 64, 256, 3, False)


def _lower(func, configs=None):
    art = tilecraft.lower(func, target=SM90A, execution_backend="nvrtc", pass_configs=configs)
    src = art.device_sources["cuda-source"]
    return art, src[src.index('extern "C" __global__') :]


def _gemm(size=RAGGED, cfg=WIDE, dtype="float16", configs=None):
    return _lower(HE.gemm(*size, *cfg, dtype, HE.DRY_SMS), configs)


def _roles(kernel: str) -> tuple[str, str]:
    """The producer's and the consumers' code of a warp-specialized kernel."""
    start = kernel.index("tc_setmaxnreg_dec")
    producer, consumer = kernel[start:].split("} else {", 1)
    return producer, consumer


def _offset(kernel: str, name: str) -> int:
    return int(re.search(rf"\* __restrict__ {name} = \(\w+\*\)\(tc_smem \+ (\d+)\)", kernel).group(1))


# ---------------------------------------------------------------- the generated code


def test_a_specialized_gemm_stores_its_staging_tile_through_tma_after_a_consumer_barrier():
    art, kernel = _gemm()
    producer, consumer = _roles(kernel)
    # stmatrix into the tile; each writer fences for the async proxy and the consumers meet (never the
    # producer); one thread issues a box per 64-column block and commits them; it waits for their reads
    # at the end of the consumers' code, before the block may exit
    check_in_order(consumer, "tc_setmaxnreg_inc<232>();", "tc_wgmma_wait<0>();", "tc_stmatrix_x4(C_s + ",
                   "tc_fence_proxy_async(); tc_named_barrier(1, 256);", "if (tc_leader()) {",
                   "tc_tma_store<2>(tc_tmap2, {(int32_t)(((bx_r * 256) + 0)), (int32_t)((by_r * 128))}, C_s + 0);",
                   "tc_tma_store<2>(tc_tmap2, {(int32_t)(((bx_r * 256) + 192)), (int32_t)((by_r * 128))}, C_s + 24576);",
                   "tc_tma_store_commit();", "if (tc_leader()) tc_tma_store_wait_read();")  # fmt: skip
    epilogue = consumer[consumer.index("tc_stmatrix_x4") :]
    assert (
        "__syncthreads" not in consumer
        and "tc_stmatrix_x4" not in consumer[: consumer.index("tc_wgmma_wait<0>")]
    )
    assert consumer.count("tc_tma_store_wait_read") == 1  # nothing is in flight before the tile is written
    assert "< 1032" not in epilogue and "< 1000" not in epilogue  # the hardware clips the boxes at the edges
    for name in ("tc_named_barrier", "tc_tma_store", "__syncthreads", "tc_stmatrix"):
        assert name not in producer
    maps = art.kernels[0].tensor_maps
    assert [(m.buffer, m.box, m.swizzle) for m in maps][2] == ("C", (64, 128), 128)
    assert _offset(kernel, "C_s") % 1024 == 0  # the 128-byte swizzle repeats every 1024 bytes of address


def test_the_ring_publishes_the_tile_with_a_fenced_block_barrier():
    _, kernel = _gemm(configs=NO_WS)
    epilogue = kernel[kernel.index("tc_stmatrix_x4") :]
    check_in_order(epilogue, "tc_stmatrix_x4(C_s + ", "tc_fence_proxy_async(); __syncthreads();",
                   "if (tc_leader()) {", "tc_tma_store<2>(", "tc_tma_store_commit();",
                   "if (tc_leader()) tc_tma_store_wait_read();")  # fmt: skip


def test_a_persistent_gemm_waits_for_the_previous_tiles_store_before_rewriting_the_tile():
    _, kernel = _lower(PT.persistent_gemm_staged())
    producer, consumer = _roles(kernel)
    loop = consumer[consumer.index("for (int32_t wave") :]
    # the issuing thread waits for the last tile's reads, then the consumers meet, then they overwrite
    checks = """
        CHECK: tc_wgmma_wait<0>();
        CHECK: tc_mbar_arrive(
        CHECK-NEXT: if (tc_leader()) tc_tma_store_wait_read();
        CHECK-NEXT: tc_fence_proxy_async(); tc_named_barrier(1, 128);
        CHECK-NEXT: #pragma unroll
        CHECK-NEXT: for (int32_t m
        CHECK-NEXT: tc_stmatrix_x4(C_s +
        CHECK: tc_fence_proxy_async(); tc_named_barrier(1, 128);
        CHECK-NEXT: if (tc_leader()) {
        CHECK-NEXT: tc_tma_store<2>(tc_tmap2,
        CHECK-NEXT: tc_tma_store_commit();
        CHECK: if (tc_leader()) tc_tma_store_wait_read();
    """
    filecheck(loop, checks)
    assert loop.count("tc_tma_store_wait_read") == 2  # in the loop, and after it
    assert "tc_named_barrier" not in producer and "tc_tma_store" not in producer


def test_flash_attention_stores_o_through_a_four_dim_tensor_map():
    art, kernel = _lower(attention(8, 16, 4096, True))
    _, consumer = _roles(kernel)
    check_in_order(consumer, "/ logsum[", "tc_stmatrix_x4(O_shared + ", "tc_named_barrier(1, 256);",
                   "tc_tma_store<4>(tc_tmap3, {(int32_t)(0), (int32_t)((bx * 128)), (int32_t)(by), (int32_t)(bz)}, "
                   "O_shared + 0);",
                   "tc_tma_store<4>(tc_tmap3, {(int32_t)(64), (int32_t)((bx * 128)), (int32_t)(by), (int32_t)(bz)}, "
                   "O_shared + 8192);", "tc_tma_store_commit();", "tc_tma_store_wait_read();")  # fmt: skip
    out = [m for m in art.kernels[0].tensor_maps if m.buffer == "Output"]
    assert [(m.box, m.swizzle) for m in out] == [((64, 128, 1, 1), 128)]


# ---------------------------------------------------------------- switches and fallbacks


def test_the_switch_keeps_the_epilogue_of_the_threads():
    art, kernel = _gemm(configs=OFF)
    assert "tc_tma_store" not in kernel and "tc_stmatrix" not in kernel
    assert "tc_tma_load<2>" in kernel and "*(uint4*)(C + " in kernel  # TMA loads, 16-byte stores of C
    assert [m.buffer for m in art.kernels[0].tensor_maps] == ["A", "B"]


def test_disable_tma_lower_switches_the_stores_off_too():
    art, kernel = _gemm(configs={"tl.disable_tma_lower": True})
    assert "tc_tma_store" not in kernel and "tc_tma_load" not in kernel and not art.kernels[0].tensor_maps
    assert "tc_stmatrix_x4(C_s + " in kernel  # into the row-major tile: stmatrix is not TMA


def test_sm80_has_neither():
    art = tilecraft.lower(
        HE.gemm(*RAGGED, 128, 128, 64, 128, 3, False, "float16", 1), target="cuda -arch=sm_80"
    )
    kernel = art.device_sources["cuda-source"].split('extern "C"', 1)[1]
    assert "tc_tma_store" not in kernel and "tc_stmatrix" not in kernel


def test_rows_off_16_bytes_keep_the_threads_stores_with_a_verbose_note(capsys):
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        art, kernel = _gemm(size=(1000, 1030, 520))
    assert (
        "T.copy to global memory is not a TMA store: rows of C are not provably a multiple of 16 bytes"
        in (capsys.readouterr().err)
    )
    assert "tc_tma_store" not in kernel and "C" not in [m.buffer for m in art.kernels[0].tensor_maps]


def test_a_dynamic_row_count_keeps_the_store_and_a_dynamic_row_length_does_not():
    m, n = T.dynamic("m"), T.dynamic("n")
    _, kernel = _lower(HE.gemm(m, 1032, 520, *WIDE, "float16", 1))
    assert "tc_tma_store<2>(" in kernel
    _, kernel = _lower(HE.gemm(1000, n, 520, *WIDE, "float16", 1))
    assert "tc_tma_store" not in kernel


@T.prim_func
def odd_epilogues(A: T.Tensor((256, 128), "float16"), B: T.Tensor((256, 128), "float32"),
                  C: T.Tensor((256, 128), "float16")):  # fmt: skip
    with T.Kernel(2, threads=128) as bx:
        S_h = T.alloc_shared((128, 128), "float16")
        tx = T.get_thread_binding()
        for i, j in T.Parallel(128, 128):
            S_h[i, j] = A[bx * 128 + i, j]
        T.copy(S_h, B[bx * 128, 0])  # converted: the threads' stores
        T.copy(S_h[0:64, :], C[bx * 128, 0])  # part of the tile
        if tx < bx * 64 + 64:  # (a condition on the thread index alone would make a thread group)
            T.copy(S_h, C[bx * 128, 0])  # under a condition on the thread index


def test_copies_tma_cannot_store_keep_the_threads_stores_with_notes(capsys):
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        _, kernel = _lower(odd_epilogues)
    notes = capsys.readouterr().err
    assert "a float16 -> float32 copy" in notes
    assert "the region is not a whole 2-D tile" in notes
    assert "under a condition on the thread index" in notes
    assert "tc_tma_store" not in kernel and "tc_tma_store_wait_read" not in kernel


@T.prim_func
def load_and_store_one_tensor(X: T.Tensor((256, 128), "float16"), Y: T.Tensor((256, 128), "float16")):
    with T.Kernel(2, threads=128) as bx:
        In = T.alloc_shared((64, 128), "float16")
        Out = T.alloc_shared((128, 128), "float16")
        T.copy(X[bx * 64, 0], In)
        T.copy(In, Y[bx * 64, 0])
        for i, j in T.Parallel(128, 128):
            Out[i, j] = Y[bx * 128 + i, j]
        T.copy(Out, X[bx * 128, 0])


def test_a_store_map_and_a_load_map_of_one_buffer_coexist():
    art, kernel = _lower(load_and_store_one_tensor)
    maps = [(m.buffer, m.box, m.swizzle) for m in art.kernels[0].tensor_maps]
    assert maps == [("X", (64, 64), 128), ("Y", (64, 64), 128), ("X", (64, 128), 128)]
    check_in_order(kernel, "tc_tma_load<2>(In + 0, tc_tmap0", "tc_tma_store<2>(tc_tmap1", "tc_tma_store_commit",
                   "tc_tma_store<2>(tc_tmap2", "tc_tma_store_commit", "tc_tma_store_wait_read")  # fmt: skip
    # In is read by the TMA unit until the wait, so it is still in scope (its bytes not reused) at the end
    assert _offset(kernel, "In") != _offset(kernel, "Out")


# ---------------------------------------------------------------- tensor maps of stores (driver rules)


def test_store_maps_encode_by_the_driver_rules():
    driver = FakeDriver()
    TensorMaps(driver, TensorMapInfo("B", dt.float32, (32, 32), 128), "k")(0x3000, (256, 128))
    dtype, rank, _, dims, strides, box, _, modes = driver.calls[0]
    assert (dtype, rank, dims, strides, box, modes[1]) == (7, 2, [128, 256], [512], [32, 32], 3)
    driver = FakeDriver()
    TensorMaps(driver, TensorMapInfo("O", dt.float16, (64, 128, 1, 1), 128), "k")(0x4000, (8, 16, 4096, 128))
    assert driver.calls[0][3:6] == ([128, 4096, 16, 8], [256, 256 * 4096, 256 * 4096 * 16], [64, 128, 1, 1])
    assert encode_arguments(TensorMapInfo("I", dt.int8, (128, 64), 128), 0x1000, (64, 256), (256, 1))[0] == 0
    with pytest.raises(ArgumentError, match="exceeds the 128-byte swizzle"):
        encode_arguments(TensorMapInfo("B", dt.float32, (64, 32), 128), 0x1000, (64, 64), (64, 1))


# ---------------------------------------------------------------- stmatrix against the ISA


def isa_stmatrix(lane_rows, count: int):
    """The PTX ISA's stmatrix .m8n8.x{count}.b16 (the fragment layout of ldmatrix): element (row r, column
    2c + h) of matrix i comes from register i (half h) of lane 4r + c and lands at the row address of
    lane 8i + r, plus 2c + h. Yields (address, lane, value index) per element."""
    for i, r, c, h in itertools.product(range(count), range(8), range(4), range(2)):
        yield lane_rows[8 * i + r] + 2 * c + h, 4 * r + c, 2 * i + h


def _device(func, configs=None) -> S.KernelLaunch:
    ctx = create_backend_context(SM90A, None, "auto", require_available=False)
    _, device = ctx.split(ctx.lower(IRModule.from_func(func), configs))
    return device.functions[0].body


def _stored(launch: S.KernelLaunch, tile: str) -> dict[int, tuple[int, int]]:
    """Physical element offset -> (thread, accumulator register) of every element the stmatrix loops
    of `launch` store into `tile`, with each row address and value evaluated per thread."""
    (tid,) = launch.thread_vars
    loops = [n for n in walk(launch.body) if isinstance(n, S.For) and isinstance(n.body, StMatrix)]
    assert loops and all(loop.body.dst.name == tile for loop in loops)
    stored: dict[int, tuple[int, int]] = {}
    for loop in loops:
        _store_loop(loop, tid, launch.threads[0], stored)
    return stored


def _store_loop(loop: S.For, tid, threads: int, stored: dict[int, tuple[int, int]]) -> None:
    st = loop.body
    for group in range(E.const_value(loop.extent)):
        regs = next(n.buffer for n in walk(st.values) if isinstance(n, E.BufferLoad))
        for warp in range(threads // WARP_SIZE):
            lanes = [warp * WARP_SIZE + lane for lane in range(WARP_SIZE)]
            env = [{tid: t, loop.loop_var: group, regs: lambda idx: idx[0]} for t in lanes]
            rows = [evaluate(st.dst_offset, e) for e in env]
            values = [[int(evaluate(v, e)) for v in st.values] for e in env]
            assert all(row % 8 == 0 for row in rows)  # 16-byte aligned rows
            for address, lane, k in isa_stmatrix(rows, st.count):
                assert address not in stored, f"element {address} stored twice"
                stored[address] = (lanes[lane], values[lane][k])


def _accumulator_in(rows: int, cols: int, dtype: str, threads: int, read_back: bool = False):
    @T.prim_func
    def staged(
        A: T.Tensor((rows, 64), "float16"),
        B: T.Tensor((64, cols), "float16"),
        C: T.Tensor((rows, cols), dtype),
    ):
        with T.Kernel(1, threads=threads) as bx:
            A_s = T.alloc_shared((rows, 64), "float16")
            B_s = T.alloc_shared((64, cols), "float16")
            C_s = T.alloc_shared((rows, cols), dtype)
            C_l = T.alloc_fragment((rows, cols), "float32")
            T.copy(A[0, 0], A_s)
            T.copy(B[0, 0], B_s)
            T.gemm(A_s, B_s, C_l, clear_accum=True)
            T.copy(C_l, C_s)
            if read_back:
                for i, j in T.Parallel(rows, cols):
                    C[i, j] = C_s[i, j]
            else:
                T.copy(C_s, C[bx * rows, 0])

    return staged


@pytest.mark.parametrize(
    ("rows", "cols", "threads", "read_back", "configs"),
    [(128, 256, 256, False, None), (64, 128, 128, False, None), (256, 128, 256, False, None),
     (128, 128, 128, True, None), (128, 128, 128, False, {"tl.disable_wgmma": True})],
    ids=["wgmma-128x256-staged", "wgmma-64x128-staged", "wgmma-256x128-staged", "wgmma-row-major",
         "mma-sync-row-major"],
)  # fmt: skip
def test_stmatrix_stores_every_accumulator_element_where_the_tile_layout_puts_it(rows, cols, threads, read_back,
                                                                                 configs):  # fmt: skip
    mma = bool(configs)
    launch = _device(_accumulator_in(rows, cols, "float16", threads, read_back), configs)
    staged = not read_back and not mma
    layout = wgmma_operand(rows, cols, 64) if staged else None
    where = {(layout.offset(f) if layout else f): divmod(f, cols) for f in range(rows * cols)}
    stored = _stored(launch, "C_s")
    assert len(stored) == rows * cols  # every element once
    warps = threads // WARP_SIZE
    grid = _grid(launch)
    for address, (thread, reg) in stored.items():
        if mma:
            held = mma_accumulator_coords(thread, reg, rows, cols, *grid)
        else:
            held = wgmma_accumulator_coords(thread, reg, rows, cols, *grid)
        assert where[address] == held, (address, thread, reg, warps)


def _grid(launch: S.KernelLaunch) -> tuple[int, int]:
    from tilecraft.cuda.ir import GemmCall

    call = next(n for n in walk(launch.body) if isinstance(n, GemmCall))
    return call.warps_m, call.warps_n


def test_only_layouts_of_the_isa_form_take_stmatrix():
    assert matrices(wgmma_accumulator(128, 256, 1, 2)) == 4
    assert matrices(mma_accumulator(16, 8, 1, 1)) == 2  # one m16n8 tile: two matrices per warp
    # the default layout gives each thread 8 consecutive elements of a row, not ldmatrix's pairs
    simt = cuda_simt(Target.parse(SM90A))
    assert matrices(blocked_layout((128, 128), 128, simt, dt.float16).linear) is None


def test_a_32_bit_staging_tile_keeps_the_threads_writes_and_still_stores_through_tma():
    _, kernel = _lower(_accumulator_in(128, 128, "float32", 128))
    assert "tc_stmatrix" not in kernel and "tc_tma_store<2>(tc_tmap2" in kernel


# ---------------------------------------------------------------- nvcc


def _ptxas(nvcc: str, source: str, tmp_path: Path) -> str:
    path = tmp_path / "k.cu"
    path.write_text(source)
    done = subprocess.run([nvcc, "-arch=sm_90a", "-cubin", "-O3", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"),
                           str(path)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "0 bytes spill stores, 0 bytes spill loads" in done.stderr, done.stderr
    return done.stderr


KERNELS = {
    "gemm-ws-128x256": lambda: HE.gemm(4096, 4096, 4096, *WIDE, "float16", 132),
    "gemm-ws-256x128-bf16": lambda: HE.gemm(4096, 4096, 4096, 256, 128, 64, 256, 3, False, "bfloat16", 132),
    "gemm-ring": lambda: HE.gemm(4096, 4096, 4096, *WIDE, "float16", 132),
    "gemm-ragged-1032": lambda: HE.gemm(*RAGGED, *WIDE, "float16", 132),
    "gemm-ragged-1030": lambda: HE.gemm(1000, 1030, 520, *WIDE, "float16", 132),
    "gemm-dynamic-m": lambda: HE.gemm(T.dynamic("m"), 1032, 520, *WIDE, "float16", 132),
    "gemm-dynamic-n": lambda: HE.gemm(1000, T.dynamic("n"), 520, *WIDE, "float16", 132),
    "gemm-persistent": lambda: HE.gemm(8192, 8192, 8192, 256, 128, 64, 256, 3, True, "float16", 132),
    "persistent-staged-conformance": PT.persistent_gemm_staged,
    "attention-full": lambda: attention(8, 16, 4096, False),
    "attention-causal": lambda: attention(8, 16, 4096, True),
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_staged_epilogues_compile_for_sm90a(nvcc, tmp_path, name):
    configs = NO_WS if name == "gemm-ring" else None
    art, kernel = _lower(KERNELS[name](), configs)
    assert ("tc_tma_store<" in kernel) == (name not in ("gemm-ragged-1030", "gemm-dynamic-n"))
    report = _ptxas(nvcc, art.device_sources["cuda-source"], tmp_path)
    if "tc_setmaxnreg_inc<" in kernel and name.startswith("gemm"):
        # the registers setmaxnreg assumes: the epilogue's addresses must not push the kernel past them
        threads = art.kernels[0].block[0] - PRODUCER_THREADS
        used = int(re.search(r"Used (\d+) registers", report).group(1))
        assert used == entry_registers(threads + PRODUCER_THREADS, SPLITS[threads // 128].min_blocks), report


# ---------------------------------------------------------------- the GPU script's dry mode


def test_the_gpu_script_covers_every_case_with_both_variants():
    specs = HE.specs()
    assert Counter(s[4] for s in specs) == {"on": len(specs) // 2, "off": len(specs) // 2}
    assert {s[1] for s in specs if s[0] == "gemm"} == {*HE.GEMM_SIZES, *HE.RAGGED}
    assert {s[2] for s in specs if s[0] == "attention"} == {False, True}
    on, off = ("gemm", RAGGED, WIDE, "float16", "on"), ("gemm", RAGGED, WIDE, "float16", "off")
    assert HE.source_problem(on, 'extern "C" tc_tma_store<2>(') is None
    assert HE.source_problem(off, 'extern "C" tc_tma_store<2>(') is not None  # a variant that lies fails
    assert HE.source_problem(on, 'extern "C" *(uint4*)(C + ') is not None


@pytest.mark.parametrize("spec", [("gemm", RAGGED, WIDE, "bfloat16", "on"), ("gemm", (1000, 1030, 520), WIDE,
                                  "float16", "off"), ("attention", (8, 16, 4096), True, "float16", "on")],
                         ids=["gemm-on", "gemm-ragged-off", "attention-on"])  # fmt: skip
def test_the_gpu_script_dry_mode_lowers_and_compiles(nvcc, spec):
    assert HE.dry_one(spec) is None


# ---------------------------------------------------------------- the store protocol, executed


class _Epilogue:
    """The consumers' warps run the statements of the store protocol under a random schedule: writes of
    the staging tiles (stmatrix loops, stores), barriers (each a count of warps), the elected thread's
    TMA stores (each a bulk group reading its tiles until a random later time, the oldest first) and its
    waits (for all groups but the `pending` newest). Checked: a store is issued only once every warp has
    written its tiles' current contents, no warp writes a tile while a store still reads it, and no store
    is in flight when the issuing warp finishes."""

    PROTOCOL = (StMatrix, S.BufferStore, TmaStoreCopy, TmaStoreWait, NamedBarrier)

    def __init__(
        self, body: S.Stmt, env: dict, tid, warps: int, tiles: str | tuple[str, ...], seed: int
    ) -> None:
        self.tiles = {tiles} if isinstance(tiles, str) else set(tiles)
        self.warps, self.rng = warps, random.Random(seed)
        self.writes = {t: [0] * warps for t in self.tiles}  # writes of each tile each warp has done
        self.in_flight: list[set[str]] = []  # the tiles each committed group still reads, oldest first
        self.stores = 0
        self.arrived, self.generation = 0, 0
        self.procs = [self._warp(w, body, {**env, tid: w * WARP_SIZE}) for w in range(warps)]

    def relevant(self, s) -> bool:
        return any(isinstance(n, self.PROTOCOL) or _is_sync(n) for n in walk(s))

    def ordering(self, s) -> bool:
        """`s` holds barriers, stores or waits (a loop of writes alone is one write)."""
        return any(isinstance(n, (TmaStoreCopy, TmaStoreWait, NamedBarrier)) or _is_sync(n) for n in walk(s))

    def written(self, s) -> str | None:
        """The staging tile `s` writes, if any."""
        for n in walk(s):
            name = (
                n.dst.name
                if isinstance(n, StMatrix)
                else n.buffer.name
                if isinstance(n, S.BufferStore)
                else None
            )
            if name in self.tiles:
                return name
        return None

    def _warp(self, w: int, body: S.Stmt, env: dict):
        yield from self._stmt(w, body, env)
        if w == 0:
            assert not self.in_flight, "the issuing thread finished with a TMA store still reading a tile"

    def _stmt(self, w: int, s: S.Stmt, env: dict):
        if not self.relevant(s):
            return
        if isinstance(s, S.SeqStmt):
            for c in s.stmts:
                yield from self._stmt(w, c, env)
        elif isinstance(s, (S.Allocate, S.LetStmt)):
            if isinstance(s, S.LetStmt):
                env[s.var] = evaluate(s.value, env)
            yield from self._stmt(w, s.body, env)
        elif isinstance(s, S.IfThenElse):
            branch = s.then_case if evaluate(s.condition, env) else s.else_case
            if branch is not None:
                yield from self._stmt(w, branch, env)
        elif isinstance(s, S.For) and self.ordering(s):
            start = evaluate(s.min, env)
            for k in range(start, start + evaluate(s.extent, env)):
                env[s.loop_var] = k
                yield from self._stmt(w, s.body, env)
        else:
            yield from self._leaf(w, s)

    def _leaf(self, w: int, s: S.Stmt):
        if isinstance(s, TmaStoreCopy):
            if w == 0:
                read = {t.name for t in s.tiles}
                for name in read & self.tiles:
                    counts = self.writes[name]
                    assert all(n == counts[0] for n in counts), (
                        f"a store of {name} before every warp wrote: {counts}"
                    )
                self.in_flight.append(read)
                self.stores += 1
        elif isinstance(s, TmaStoreWait):
            while w == 0 and len(self.in_flight) > s.pending:
                yield
        elif isinstance(s, NamedBarrier) or _is_sync(s):
            generation = self.generation
            self.arrived += 1
            if self.arrived == self.warps:
                self.arrived, self.generation = 0, generation + 1
            while self.generation == generation:
                yield
        else:
            name = self.written(s)
            if name is not None:
                assert not any(name in group for group in self.in_flight), (
                    f"warp {w} writes {name} while a TMA store reads it"
                )
                self.writes[name][w] += 1
        yield

    def run(self) -> int:
        live = list(self.procs)
        for _ in range(10**6):
            if not live and not self.in_flight:
                return self.stores
            # the TMA unit is slow to read the tile, so schedules that race it are likely
            if self.in_flight and (not live or self.rng.random() < 0.02):
                self.in_flight.pop(0)  # the TMA unit has read the oldest group's sources
                continue
            choice = self.rng.randrange(len(live))
            try:
                next(live[choice])
            except StopIteration:
                live.pop(choice)
        raise AssertionError(f"deadlock: {len(live)} warps never finish")


def _is_sync(n) -> bool:
    return isinstance(n, S.Evaluate) and isinstance(n.value, E.Call) and n.value.op == "sync_threads"


def _consumers(launch: S.KernelLaunch) -> tuple[S.Stmt, int]:
    """The consumers' code and warps (the whole body and every warp without a producer)."""
    split = [n for n in walk(launch.body) if isinstance(n, S.IfThenElse)
             and any(isinstance(m, SetMaxNReg) and not m.increase for m in walk(n.then_case))]  # fmt: skip
    if not split:
        return launch.body, launch.threads[0] // WARP_SIZE
    return split[0].else_case, (launch.threads[0] - PRODUCER_THREADS) // WARP_SIZE


@pytest.mark.parametrize("configs", [None, NO_WS], ids=["specialized", "ring"])
@pytest.mark.parametrize("block", range(PT.BLOCKS))
def test_the_persistent_store_protocol_holds_under_random_schedules(configs, block):
    launch = _device(PT.persistent_gemm_staged(), configs)
    body, warps = _consumers(launch)
    env = {v: block for v in launch.block_vars}
    waves = -(-(PT.M // PT.BM * -(-PT.N // PT.BN) - block) // PT.BLOCKS)
    for seed in range(8):
        assert _Epilogue(body, dict(env), launch.thread_vars[0], warps, "C_s", seed).run() == waves


def test_the_protocol_check_catches_a_missing_wait():
    """Without the wait before the next tile's writes (and its barrier), a schedule overwrites the tile."""
    launch = _device(PT.persistent_gemm_staged())
    body, warps = _consumers(launch)

    class _NoWaits(Mutator):
        def mutate_Buffer(self, buf):
            return buf

        def mutate_SeqStmt(self, s):
            kept = [self.mutate(c) for c in s.stmts if not isinstance(c, (TmaStoreWait, NamedBarrier))
                    or isinstance(c, NamedBarrier) and not _follows_wait(s, c)]  # fmt: skip
            return S.seq(*kept)

    def _follows_wait(seq, stmt) -> bool:
        i = next(k for k, c in enumerate(seq.stmts) if c is stmt)
        return i > 0 and isinstance(seq.stmts[i - 1], TmaStoreWait)

    broken = _NoWaits().mutate(body)
    env = {v: 0 for v in launch.block_vars}
    with pytest.raises(AssertionError, match="while a TMA store reads it|still reading"):
        for seed in range(20):
            _Epilogue(broken, dict(env), launch.thread_vars[0], warps, "C_s", seed).run()
