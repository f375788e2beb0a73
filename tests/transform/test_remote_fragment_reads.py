"""Fragment reads of elements another thread holds are legal on SIMT targets: layout inference keeps a
row vector read across a tile in registers where it can, and lower-to-threads broadcasts the rest
through shared memory. Writes of another thread's element stay an error."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.transform.helpers import OPENCL, assert_nvcc_compiles, opencl_source, run
from tilecraft.cuda.intrinsics.mma_layouts import mma_accumulator, mma_operand_a_tf32
from tilecraft.cuda.intrinsics.simt import WARPS
from tilecraft.errors import LoweringError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.layout.inference import block_positions, extend
from tilecraft.layout.tile import TileLayout, block_of, blocked_layout, project, register_map
from tilecraft.testing.conformance.register_operands import tf32_gemm_with_row_sums
from tilecraft.testing.conformance.regressions import (
    column_block_reads,
    column_block_reference,
    decode_reference,
    decode_scores,
    remote_reads,
    remote_reference,
)


def _shared_copies(source: str) -> set[str]:
    return set(re.findall(r"\b(\w+)_shared\d+\b", source))


# ---------------------------------------------------------------- flash decoding: kept in registers


def test_a_row_vector_read_across_a_tile_lowers_on_opencl_and_matches(opencl):
    rng = np.random.default_rng(11)
    q = rng.standard_normal((64, 32)).astype(np.float16)
    k = rng.standard_normal((100, 32)).astype(np.float16)
    s, total = np.full((64, 4), np.nan, np.float32), np.full(64, np.nan, np.float32)
    run(decode_scores(), opencl, q, k, s, total)
    ref_s, ref_total = decode_reference(q, k)
    np.testing.assert_allclose(s, ref_s, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(total, ref_total, rtol=1e-4)


def test_a_row_vector_read_across_a_tile_stays_in_registers_on_cuda(nvcc, tmp_path):
    """The loop over (heads, kv blocks) is partitioned like the row vectors it reads: no broadcast."""
    source = assert_nvcc_compiles(decode_scores(), tmp_path)
    assert not _shared_copies(source), _shared_copies(source)


def test_extended_layouts_keep_the_read_fragment_local_and_cover_the_loop():
    rows = project(TileLayout((64, 32), mma_accumulator(64, 32, 4, 1)), 1)
    for dims, extents in (([0], (64, 4)), ([0], (64, 100)), ([1], (3, 64)), ([0], (64, 1))):
        nest = extend(rows, dims, extents)
        assert nest is not None and nest.shape == extents
        assert nest.linear.is_surjective()
        assert register_map(nest, dims, rows) is not None
    tile = blocked_layout((16, 64), 128, WARPS)
    nest = extend(tile, [1, 2], (5, 16, 64))
    assert nest is not None and register_map(nest, [1, 2], tile) is not None


# ---------------------------------------------------------------- broadcast through shared memory


def test_reads_of_other_threads_elements_run_on_opencl(opencl):
    rng = np.random.default_rng(12)
    x = rng.standard_normal((32, 64)).astype(np.float32)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    y, z, r = (np.full(shape, np.nan, np.float32) for shape in ((32, 64), (32, 64), 4))
    run(remote_reads(), opencl, x, w, y, z, r)
    ref_y, ref_z, ref_r = remote_reference(x, w)
    np.testing.assert_allclose(y, ref_y, rtol=1e-6)
    np.testing.assert_array_equal(z, ref_z)
    np.testing.assert_array_equal(r, ref_r)


def test_reads_of_other_threads_elements_go_through_shared_memory_with_barriers():
    source = opencl_source(remote_reads())
    assert _shared_copies(source) == {"x", "row_max"}
    lines = source[source.index("__kernel") :].splitlines()
    for copy in sorted(set(re.findall(r"\w+_shared\d+", "\n".join(lines)))):
        stores = [k for k, line in enumerate(lines) if re.search(rf"\b{copy}\[[^\]]*\] = ", line)]
        reads = [k for k, line in enumerate(lines) if f"{copy}[" in line and k not in stores]
        assert stores and reads, copy
        between = lines[stores[-1] : reads[0]]
        assert any("barrier(" in line for line in between), "\n".join(between)


def test_reads_of_other_threads_elements_compile_for_cuda(nvcc, tmp_path):
    source = assert_nvcc_compiles(remote_reads(), tmp_path)
    assert _shared_copies(source) == {"x", "row_max"}


# ---------------------------------------------------------------- what stays an error


def test_writing_another_thread_s_element_is_a_located_error():
    @T.prim_func
    def mirrored_write(X: T.Tensor((32, 64), "float32"), Y: T.Tensor((32, 64), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((32, 64), "float32")
            T.copy(X, x)
            for i, j in T.Parallel(32, 64):
                x[31 - i, j] = x[i, j] * 2.0  # the element another thread holds
            T.copy(x, Y)

    with pytest.raises(LoweringError) as info:
        tilecraft.lower(mirrored_write, target=OPENCL, execution_backend="opencl")
    err = info.value
    assert "fragment x is written at an element the writing thread does not hold" in err.message
    assert err.span is not None and "the element another thread holds" in err.span.source_line()
    assert "shared buffer" in err.hint


def test_a_broadcast_under_a_branch_on_the_thread_index_is_a_located_error():
    @T.prim_func
    def divergent(X: T.Tensor((32, 64), "float32"), R: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((32, 64), "float32")
            m = T.alloc_fragment((32,), "float32")
            T.copy(X, x)
            T.reduce_max(x, m, dim=1)
            tx = T.get_thread_binding()
            if tx < 64:
                R[tx] = m[3]  # every thread reads one row's maximum

    with pytest.raises(LoweringError) as info:
        tilecraft.lower(divergent, target=OPENCL, execution_backend="opencl")
    err = info.value
    assert "depends on the thread index" in err.message and "no barrier can be placed" in err.message
    assert err.span is not None and "every thread reads" in err.span.source_line()


# ---------------------------------------------------------------- aligned column blocks (mhc_pre's row sums)


def test_column_blocks_of_a_fragment_are_broadcast_once_before_the_serial_loop(nvcc, tmp_path):
    """`x[i, jj * 4 + j]` in a serial loop over jj: the threads holding a block change with jj, and the loop
    does not write x, so x goes through shared memory once, before the loop (it went once per block)."""
    source = assert_nvcc_compiles(column_block_reads(), tmp_path)
    body = source[source.index('extern "C"') :]
    assert _shared_copies(body) == {"x"}
    loop = body.index("for (int32_t jj")
    stores = [m.start() for m in re.finditer(r"x_shared\d+\[[^\]]*\] = x\[", body)]
    assert len(stores) == 1 and stores[0] < body.index("__syncthreads();", stores[0]) < loop


def test_column_blocks_of_the_tf32_operand_are_read_from_registers(nvcc, tmp_path):
    """In mhc_pre's gemm, x_frag has the m16n8k8 .tf32 A layout: lane l holds columns l % 4 (+ 4) of every
    8-column block, so the loop over 4-column blocks takes that layout restricted to a block and reads
    each block from the thread's registers (register r XOR the block's register bits): no broadcast."""
    source = assert_nvcc_compiles(tf32_gemm_with_row_sums(), tmp_path)
    body = source[source.index('extern "C"') :]
    assert not _shared_copies(body), _shared_copies(body)
    assert re.search(r"x_frag\[\(int32_t\)\(r\d+ \^ ", body)


def test_block_positions_need_offsets_that_are_multiples_of_the_block():
    i, j, jj = (E.Var(dt.int32, name) for name in ("i", "j", "jj"))
    extents = (32, 4)
    positions, offsets = block_positions([i, j], extents, (i, jj * 4 + j))
    assert positions == [0, 1] and offsets[0] is None and E.same_expr(offsets[1], jj * 4)
    found = block_positions([i, j], extents, (i, j + jj * 8))
    assert found is not None and found[0] == [0, 1]
    assert block_positions([i, j], extents, (i, jj * 2 + j)) is None  # blocks overlap
    assert block_positions([i, j], extents, (i, i * 4 + j)) is None  # the offset moves with the nest
    assert block_positions([i, j], extents, (i, jj + 4 + j)) is None  # jj + 4 need not be a multiple of 4


def test_a_block_layout_exists_only_where_lanes_stay_within_a_block():
    tf32_a = TileLayout((32, 256), mma_operand_a_tf32(32, 256, 2, 2))
    block = block_of(tf32_a, (32, 4))
    assert block is not None and block.linear.is_surjective()
    assert register_map(block, [0, 1], tf32_a) is not None
    assert block_of(blocked_layout((32, 64), 128, WARPS), (32, 4)) is None  # lanes span the columns


def test_column_blocks_run_on_opencl(opencl):
    x = np.random.default_rng(13).standard_normal((32, 64)).astype(np.float32)
    s = np.full((32, 4), np.nan, np.float32)
    run(column_block_reads(), opencl, x, s)
    np.testing.assert_allclose(s, column_block_reference(x), rtol=1e-6)
