"""Keep-dim reductions of fragments on the SIMT targets: the result's layout is the source's projected
with the reduced dim kept as extent 1, and the lowering reduces into its registers. Numbers on every
target: tests/conformance, cases reduce_keep_dim_*."""

from __future__ import annotations

import pytest

from tests.transform.helpers import assert_nvcc_compiles, opencl_source
from tilecraft.layout.fragment import blocked
from tilecraft.layout.tile import TileLayout, drop_unit_dim, keep_unit_dim, project
from tilecraft.testing.conformance import keep_dim

BUILDS = ["rows_and_columns", "whole_tile_accumulated"]


@pytest.mark.parametrize("build", BUILDS)
def test_keep_dim_reductions_compile_for_cuda(build, tmp_path):
    """TileLang's chunk_o_bwd reduces a (block_DV * block_DK,) fragment into a (1,) one with dim=-1."""
    assert_nvcc_compiles(getattr(keep_dim, build)(), tmp_path)


@pytest.mark.parametrize("build", BUILDS)
def test_keep_dim_reductions_lower_for_opencl(build):
    assert "__kernel" in opencl_source(getattr(keep_dim, build)())


def test_kept_unit_dim_round_trips():
    """Keeping the reduced dim inserts an extent-1 dim no thread or register walks along."""
    tile = TileLayout((32, 64), blocked((32, 64), 128, width=32))
    rows = project(tile, 1)
    kept = keep_unit_dim(rows, 1)
    assert kept.shape == (32, 1) and kept.linear.out_dims == (("dim0", 32), ("dim1", 1))
    assert kept.num_registers == rows.num_registers
    for thread in (0, 5, 77, 127):
        got = kept.linear.apply(register=0, lane=thread % 32, warp=thread // 32)
        want = rows.linear.apply(register=0, lane=thread % 32, warp=thread // 32)
        assert (got["dim0"], got["dim1"]) == (want["dim0"], 0)
    assert drop_unit_dim(kept, 1).same_as(rows)
    assert keep_unit_dim(project(tile, 0), 0).shape == (1, 64)
