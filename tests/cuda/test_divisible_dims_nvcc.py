"""The GEMM specialized on its dynamic dims being multiples of 16 (tests/jit/test_divisible_dims.py) takes
TMA and warp specialization on sm_90a; its CUDA compiles with nvcc (no GPU needed)."""

from __future__ import annotations

from tests.jit.test_divisible_dims import _cuda_source, dynamic_gemm
from tilecraft.jit.api import DIM_MULTIPLE


def test_the_specialized_kernel_compiles_with_nvcc(nvcc, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    func, dims = dynamic_gemm()
    source = _cuda_source(func.with_attr("tilecraft.divisible_dims", tuple((d, DIM_MULTIPLE) for d in dims)))
    assert compile_cubin(source, "sm_90a", keep_dir=tmp_path)[:4] == b"\x7fELF"
