"""A T.copy of one row of a 2-D fragment into a 1-D fragment (TileLang's flash_decoding combine,
example_mha_inference.py:139) lowers on the SIMT targets: layout inference does not force the 2-D
layout onto the 1-D fragment; the copy follows the destination. With 4 splits every thread holds its
column's splits (the reduction over them keeps that dim in registers) and reads its own register at the
loop index; with 16 the source is broadcast through shared memory. Numbers on every target:
tests/conformance, cases copy_row_of_a_fragment_by_loop_index and ..._16_splits."""

from __future__ import annotations

from tests.transform.helpers import assert_nvcc_compiles, opencl_source
from tilecraft.testing.conformance import fragment_rows


def test_row_copy_compiles_for_cuda(tmp_path):
    source = assert_nvcc_compiles(fragment_rows.row_of_a_fragment(), tmp_path)
    kernel = source[source.index('extern "C" __global__') :]
    assert "lse_shared" not in kernel and "row[0] = lse[(int32_t)k];" in kernel  # the thread's own register
    source = assert_nvcc_compiles(fragment_rows.row_of_a_fragment(16), tmp_path)
    assert "lse_shared" in source  # the rows other threads hold, broadcast


def test_row_copy_lowers_for_opencl():
    assert "__local" in opencl_source(fragment_rows.row_of_a_fragment(16))
