"""Fragment reads of elements another thread holds are legal on SIMT targets: layout inference keeps a
row vector read across a tile in registers where it can, and lower-to-threads broadcasts the rest
through shared memory. Writes of another thread's element stay an error."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.transform.helpers import OPENCL, assert_nvcc_compiles, opencl_source, run
from tilecraft.errors import LoweringError
from tilecraft.layout.fragment import mma_accumulator
from tilecraft.layout.inference import extend
from tilecraft.layout.tile import TileLayout, blocked_layout, project, register_map


def decode_scores(heads: int = 64, seqlen: int = 100, dim: int = 32, block_n: int = 32):
    """TileLang's flash-decoding example (varlen logits), reduced: a gemm, the running row maximum and
    row sum, then a loop over (heads, kv blocks) that reads the row vectors `m[h]` and `total[h]` and writes
    shared memory: no fragment is indexed by both of its variables."""
    cols = math.ceil(seqlen / block_n)
    scale = (1.0 / dim) ** 0.5 * 1.44269504

    @T.prim_func
    def decode_scores(
        Q: T.Tensor((heads, dim), "float16"),
        K: T.Tensor((seqlen, dim), "float16"),
        S: T.Tensor((heads, cols), "float32"),
        L: T.Tensor((heads,), "float32"),
    ):
        with T.Kernel(1, threads=128):
            q_s = T.alloc_shared((heads, dim), "float16")
            k_s = T.alloc_shared((block_n, dim), "float16")
            acc = T.alloc_fragment((heads, block_n), "float32")
            m = T.alloc_fragment((heads,), "float32")
            m_prev = T.alloc_fragment((heads,), "float32")
            scale_prev = T.alloc_fragment((heads,), "float32")
            row_sum = T.alloc_fragment((heads,), "float32")
            total = T.alloc_fragment((heads,), "float32")
            s_all = T.alloc_shared((heads, cols), "float32")
            T.copy(Q, q_s)
            T.fill(m, -T.infinity("float32"))
            T.fill(total, 0.0)
            for k in T.Pipelined(cols, num_stages=1):
                T.copy(K[k * block_n, 0], k_s)
                T.clear(acc)
                T.gemm(q_s, k_s, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(heads, block_n):
                    acc[i, j] = T.if_then_else(k * block_n + j < seqlen, acc[i, j], -T.infinity("float32"))
                T.copy(m, m_prev)
                T.reduce_max(acc, m, dim=1, clear=False)
                T.copy(m, s_all[:, k])
                for i in T.Parallel(heads):
                    scale_prev[i] = T.exp2((m_prev[i] - m[i]) * scale)
                for i, j in T.Parallel(heads, block_n):
                    acc[i, j] = T.exp2((acc[i, j] - m[i]) * scale)
                T.reduce_sum(acc, row_sum, dim=1)
                for i in T.Parallel(heads):
                    total[i] = total[i] * scale_prev[i] + row_sum[i]
            for h, c in T.Parallel(heads, cols):
                s_all[h, c] = T.exp2((s_all[h, c] - m[h]) * scale) / total[h]
            T.copy(s_all, S)
            T.copy(total, L)

    return decode_scores


def decode_reference(q, k, block_n: int = 32):
    s = q.astype(np.float64) @ k.astype(np.float64).T / math.sqrt(q.shape[1])
    m = s.max(1)
    total = np.exp(s - m[:, None]).sum(1)
    cols = math.ceil(k.shape[0] / block_n)
    running = np.maximum.accumulate(
        np.stack([s[:, c * block_n : (c + 1) * block_n].max(1) for c in range(cols)], 1), 1
    )
    return np.exp(running - m[:, None]) / total[:, None], total


def remote_reads(m: int = 32, n: int = 64):
    """Reads no layout can make local: a row maximum of one tile read across a tile laid out otherwise,
    a fixed column, a mirrored row, a shifted column, and reads outside any loop (a store's value, an
    `if` condition, a loop bound, a serial loop's body)."""

    @T.prim_func
    def remote_reads(
        X: T.Tensor((m, n), "float32"),
        W: T.Tensor((n, m), "float32"),
        Y: T.Tensor((m, n), "float32"),
        Z: T.Tensor((m, n), "float32"),
        R: T.Tensor((4,), "float32"),
    ):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((m, n), "float32")
            w = T.alloc_fragment((m, n), "float32")
            row_max = T.alloc_fragment((m,), "float32")
            y = T.alloc_fragment((m, n), "float32")
            T.copy(X, x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(m, n):
                w[i, j] = W[j, i]
            for i, j in T.Parallel(m, n):
                y[i, j] = w[i, j] - row_max[i] + x[i, 0] + x[m - 1 - i, j]
            T.copy(y, Y)
            for i, j in T.Parallel(m, n):
                Z[i, j] = x[i, (j + 1) % n]
            R[0] = row_max[3]
            if row_max[5] > 0.0:
                R[1] = x[7, 9]
            else:
                R[1] = -x[7, 9]
            for k in T.serial(T.cast(row_max[0] > -100.0, "int32") * 2):
                R[2 + k] = row_max[k]

    return remote_reads


def remote_reference(x, w):
    mx = x.max(1)
    y = w.T - mx[:, None] + x[:, :1] + x[::-1, :]
    r = [mx[3], x[7, 9] if mx[5] > 0 else -x[7, 9], mx[0], mx[1]]
    return y, np.roll(x, -1, axis=1), np.array(r, np.float32)


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
    tile = blocked_layout((16, 64), 128)
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
