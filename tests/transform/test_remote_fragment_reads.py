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
from tilecraft.cuda.intrinsics.mma_layouts import mma_accumulator
from tilecraft.cuda.intrinsics.simt import WARPS
from tilecraft.errors import LoweringError
from tilecraft.layout.inference import extend
from tilecraft.layout.tile import TileLayout, blocked_layout, project, register_map
from tilecraft.testing.conformance.regressions import (
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
