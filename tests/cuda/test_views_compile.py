"""The generated CUDA of this round's TileLang features compiles with nvcc for sm_80 and sm_90a: views
of fragments (a reshape sharing the registers, reductions over its groups), of shared tiles and
tensors (another dtype read through its base's bits), T.annotate_safe_value's guarded nests, and
float8 extrema. Their numbers are checked on the CPU target and in the HIP emulator (tests/language,
tests/hip)."""

from __future__ import annotations

import pytest

import tilecraft
from tests.language import test_safe_value as safe
from tests.language import test_storage_extrema as extrema
from tests.language import test_tile_views as views

KERNELS = {
    "fragment_reshape": lambda: views.fragment_reshape_copy(32, 32, "float16", 128),
    "write_through_view": lambda: views.write_through_fragment_view(8, 32, 128),
    "reduce_groups_absmax": lambda: views.reduce_groups(2, 3, 128, "absmax"),
    "reduce_groups_sum": lambda: views.reduce_groups(2, 6, 32, "sum"),
    "reduce_rows_of_flat": lambda: views.reduce_rows_of_flat(1024, 32, 32),
    "shared_reshape": lambda: views.shared_reshape(16, 64),
    "shared_bf16_as_f32": lambda: views.shared_reinterpret(64, 128, "bfloat16", "float32"),
    "tensor_f32_as_f16": lambda: views.tensor_view(32, 32, "float32", "float16"),
    "local_view": lambda: views.local_view(7),
    "safe_value_shared": lambda: safe.shifted_tiles(1024, 1000, 128, 10, "shared", "float16"),
    "safe_value_fragment": lambda: safe.shifted_tiles(1024, 1000, 64, 2.5, "fragment"),
    "float8_clamp": lambda: extrema.elementwise(1024, 128, "float8_e4m3fn", "clamp"),
    "float8_e5m2_max": lambda: extrema.elementwise(1000, 128, "float8_e5m2", "max"),
}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_nvcc_compiles(nvcc, arch, name, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    artifact = tilecraft.lower(KERNELS[name](), target=f"cuda -arch={arch}", execution_backend="nvrtc")
    assert compile_cubin(artifact.source("cuda-source"), arch, keep_dir=tmp_path)[:4] == b"\x7fELF"
