"""T.fill / T.clear of one element lower for CUDA and compile with nvcc (the GPU run: conformance-free,
tests/language/test_fill_element.py's kernel on target cuda)."""

from __future__ import annotations

import tilecraft
from tests.language.test_fill_element import fill_elements


def test_fill_of_one_element_compiles(nvcc, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    source = tilecraft.lower(fill_elements(5), target="cuda -arch=sm_90a", execution_backend="nvrtc").source(
        "cuda-source"
    )
    assert compile_cubin(source, "sm_90a", keep_dir=tmp_path)[:4] == b"\x7fELF"
