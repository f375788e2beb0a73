"""Kernels whose parameters, buffers, loop variables and dynamic dims are named after C macros, C and
C++ library names and CUDA's built-ins (tests/conformance/test_reserved_names.py) compile with nvcc,
which includes cuda_runtime.h in every translation unit (no GPU needed)."""

from __future__ import annotations

import pytest

import tilecraft
from tests.conformance.test_reserved_names import NAMES, build
from tilecraft import settings


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_reserved_names_compile_with_nvcc(nvcc, arch, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    with settings.override(TILECRAFT_DISABLE_CACHE=True):  # the kernels differ only in their names
        sources = [tilecraft.lower(build(index), target=f"cuda -arch={arch}", execution_backend="nvrtc")
                   .source("cuda-source") for index in range(len(NAMES))]  # fmt: skip
    assert "v_INFINITY" in sources[0] and "v_threadIdx" in "".join(sources)
    # One translation unit: the device header's include guard keeps its later copies out.
    assert compile_cubin("\n".join(sources), arch, keep_dir=tmp_path)[:4] == b"\x7fELF"
