"""Kernels whose parameters, buffers, loop variables and dynamic dims are named after C macros, C and
C++ library names and HIP's built-ins (tests/conformance/test_reserved_names.py) compile for AMD GPUs."""

from __future__ import annotations

import tilecraft
from tests.conformance.test_reserved_names import NAMES, build
from tilecraft import settings


def test_reserved_names_compile_with_clang(clang, tmp_path):
    from tilecraft.hip.toolchain import compile_code_object

    with settings.override(TILECRAFT_DISABLE_CACHE=True):  # the kernels differ only in their names
        sources = [tilecraft.lower(build(index), target="hip -arch=gfx942", execution_backend="hip",
                                   ).source("hip-source") for index in range(len(NAMES))]  # fmt: skip
    assert "v_INFINITY" in sources[0]
    assert compile_code_object("\n".join(sources), "gfx942", keep_dir=tmp_path)
