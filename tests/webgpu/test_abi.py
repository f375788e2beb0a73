"""The ABI between wgsl-source and the wgpu launcher: uniform layout, bindings, widening, grid folding."""

from __future__ import annotations

import pytest

from tilecraft.execution.wgpu.abi import binding_bases, device_dtype, fold_grid, uniform_layout


def test_uniform_fields_are_aligned_to_their_size_and_the_block_to_16_bytes():
    fields, size = uniform_layout(["float32", "int64", "bool"])
    assert [(f.name, f.wgsl_type, f.offset) for f in fields] == [
        ("gx", "u32", 0), ("gy", "u32", 4), ("gz", "u32", 8), ("p0", "f32", 12), ("p1", "i64", 16),
        ("p2", "u32", 24),
    ]  # fmt: skip
    assert size == 32


def test_each_kernel_binds_its_uniform_block_then_its_buffers():
    assert binding_bases([2, 0, 3]) == [0, 3, 4]


def test_narrow_dtypes_are_widened_and_float16_only_without_shader_f16():
    assert device_dtype("bfloat16", True) == "float32"
    assert device_dtype("int16", True) == "int32" and device_dtype("uint8", True) == "uint32"
    assert device_dtype("float16", True) == "float16" and device_dtype("float16", False) == "float32"
    assert device_dtype("float32", False) == "float32"


def test_grids_past_the_per_dim_limit_are_folded_to_cover_every_block():
    assert fold_grid((10, 3), 65535) == (10, 3, 1)
    x, y, z = fold_grid((70000, 2), 65535)
    assert x <= 65535 and y <= 65535 and x * y * z >= 140000
    with pytest.raises(ValueError, match="more than"):
        fold_grid((2**20, 2**20, 2**10), 1024)
