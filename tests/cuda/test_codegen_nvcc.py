"""The generated CUDA of every conformance kernel compiles with nvcc for sm_80 and sm_90a (no GPU needed)."""

from __future__ import annotations

import pytest

import tilecraft
from tilecraft.errors import LoweringError, ToolchainError
from tilecraft.testing.conformance.cases import CASES

ARCHS = ("sm_80", "sm_90a")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_generated_cuda_compiles(nvcc, case, arch, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    try:
        artifact = tilecraft.lower(case.build(), target=f"cuda -arch={arch}", execution_backend="nvrtc")
    except LoweringError as err:
        pytest.skip(f"not supported on CUDA: {err.message}")
    source = artifact.source("cuda-source")
    assert 'extern "C" __global__' in source
    try:
        cubin = compile_cubin(source, arch, keep_dir=tmp_path)
    except ToolchainError as err:
        pytest.fail(f"nvcc rejected the generated source of {case.name} for {arch}:\n{err}")
    assert cubin[:4] == b"\x7fELF"


def test_print_of_a_value_and_a_region_compiles(nvcc, tmp_path):
    import tilecraft.language as T
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    @T.prim_func
    def printing(A: T.Tensor((64, 64), "float16"), N: T.Tensor((4,), "int64")):
        with T.Kernel(2, threads=128) as bx:
            tile = T.alloc_shared((8, 8), "float16")
            T.copy(A[bx * 8, 0], tile)
            T.print(N[1], msg="n")
            T.print(tile, msg="tile")

    source = tilecraft.lower(printing, target="cuda -arch=sm_90a", execution_backend="nvrtc").source(
        "cuda-source"
    )
    assert "printf(" in source
    assert compile_cubin(source, "sm_90a", keep_dir=tmp_path)[:4] == b"\x7fELF"


def test_device_assert_traps_and_compiles(nvcc, tmp_path):
    """T.device_assert: a thread whose check fails prints the message and its line, then traps."""
    from tests.language.test_device_assert import doubled_counts
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    source = tilecraft.lower(doubled_counts, target="cuda -arch=sm_80", execution_backend="nvrtc").source(
        "cuda-source"
    )
    assert "__trap()" in source and "a negative count at " in source
    assert compile_cubin(source, "sm_80", keep_dir=tmp_path)[:4] == b"\x7fELF"
