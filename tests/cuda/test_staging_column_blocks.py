"""A staging tile stored in column blocks (split-staging-tiles) without a GPU: which accumulator registers
each block's stmatrix takes, every element of the 256x128 accumulator stored once where the 256x32 tiles'
layout puts it (checked against the PTX ISA's stmatrix and wgmma fragment layouts), the store protocol
under random schedules with two tiles taking four blocks in turn per output tile (a block's writes
while the previous block's store is in flight), and the ptxas compile."""

from __future__ import annotations

import pytest

from tests.cuda.test_tma_store import _consumers, _device, _Epilogue, _grid, _lower, _ptxas, isa_stmatrix
from tilecraft.cuda.intrinsics.mma_layouts import WARP_SIZE, wgmma_accumulator, wgmma_accumulator_coords
from tilecraft.cuda.ir import StMatrix
from tilecraft.cuda.op.stmatrix import column_groups
from tilecraft.cuda.shared_layout import wgmma_atom, wgmma_operand
from tilecraft.ir import stmt as S
from tilecraft.ir.eval import evaluate
from tilecraft.ir.expr import BufferLoad
from tilecraft.ir.visitor import walk
from tilecraft.testing.conformance import persistent_tiles as PT

ROWS, COLS, BLOCKS = PT.BIG_BM, PT.BIG_BN, 4
WIDTH = COLS // BLOCKS
TILES = ("C_s", "C_s_1")


def test_each_column_block_takes_whole_register_groups():
    # two consumer warpgroups over the rows: per 64-row block, 16 n8 chunks of 4 registers
    linear = wgmma_accumulator(ROWS, COLS, 2, 1)
    assert column_groups(linear, 4, 0, 64) == (0, 1, 2, 3, 8, 9, 10, 11)
    assert column_groups(linear, 4, 64, 64) == (4, 5, 6, 7, 12, 13, 14, 15)
    assert column_groups(linear, 4, 32, 32) == (2, 3, 10, 11)
    assert column_groups(linear, 4, 0, 8) is None  # one stmatrix.x4 spans 16 columns
    assert column_groups(linear, 4, 8, 16) is None  # a block starts at a multiple of its width
    # warpgroups side by side over the columns: a thread's block depends on its warp
    assert column_groups(wgmma_accumulator(128, 256, 1, 2), 4, 0, 128) is None


def _blocks(launch) -> list:
    """The stmatrix loop of each column block, in program order (a block's four groups: 2 of 16 columns
    in each of the warpgroup's two 64-row halves), through C_s and C_s_1 in turn."""
    loops = [n for n in walk(launch.body) if isinstance(n, S.For) and isinstance(n.body, StMatrix)]
    assert [(loop.body.dst.name, evaluate(loop.extent, {})) for loop in loops] == [
        (TILES[b % 2], 4) for b in range(BLOCKS)
    ]
    return loops


def test_every_element_is_stored_once_where_the_narrow_tiles_put_it():
    launch = _device(PT.persistent_gemm_in_column_blocks())
    (tid,) = launch.thread_vars
    layout = wgmma_operand(ROWS, WIDTH, wgmma_atom(WIDTH, 2), 2)  # 64-byte rows: the 64-byte swizzle
    where = {layout.offset(f): divmod(f, WIDTH) for f in range(ROWS * WIDTH)}
    consumers = ROWS * COLS // 128  # 256 threads
    for block, loop in enumerate(_blocks(launch)):
        st = loop.body
        regs = next(n.buffer for n in walk(st.values) if isinstance(n, BufferLoad))
        stored: dict[int, tuple[int, int]] = {}
        for group in range(evaluate(loop.extent, {})):
            for warp in range(consumers // WARP_SIZE):
                lanes = [warp * WARP_SIZE + lane for lane in range(WARP_SIZE)]
                env = [{tid: t, loop.loop_var: group, regs: lambda idx: idx[0]} for t in lanes]
                rows = [evaluate(st.dst_offset, e) for e in env]
                values = [[int(evaluate(v, e)) for v in st.values] for e in env]
                for address, lane, k in isa_stmatrix(rows, st.count):
                    assert address not in stored, f"block {block}: element {address} stored twice"
                    stored[address] = (lanes[lane], values[lane][k])
        assert len(stored) == ROWS * WIDTH
        for address, (thread, reg) in stored.items():
            row, col = wgmma_accumulator_coords(thread, reg, ROWS, COLS, *_grid(launch))
            assert where[address] == (row, col - block * WIDTH), (block, address, thread, reg)


@pytest.mark.parametrize("block", range(PT.BLOCKS))
def test_the_store_protocol_holds_with_a_store_per_block(block):
    launch = _device(PT.persistent_gemm_in_column_blocks())
    body, warps = _consumers(launch)
    env = {v: block for v in launch.block_vars}
    tiles = -(-PT.BIG_M // PT.BIG_BM) * -(-PT.BIG_N // PT.BIG_BN)
    waves = -(-(tiles - block) // PT.BLOCKS)
    for seed in range(6):
        assert _Epilogue(body, dict(env), launch.thread_vars[0], warps, TILES, seed).run() == BLOCKS * waves


def test_the_split_kernel_compiles_for_sm90a_within_its_registers(nvcc, tmp_path):
    art, kernel = _lower(PT.persistent_gemm_in_column_blocks())
    assert kernel.count("tc_tma_store<2>(tc_tmap2") == BLOCKS and kernel.count("tc_stmatrix_x4(C_s") == BLOCKS
    # each block's writes wait only for the store before the previous one
    assert kernel.count("tc_tma_store_wait_read<1>();") == BLOCKS
    assert [(m.buffer, m.box) for m in art.kernels[0].tensor_maps][2] == ("C", (WIDTH, ROWS))
    report = _ptxas(nvcc, art.device_sources["cuda-source"], tmp_path)
    assert "spill" not in report or "0 bytes spill stores" in report, report
