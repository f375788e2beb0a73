"""4-bit and microscaling kernels lower for CUDA and their source compiles with nvcc for sm_80 and sm_90a
(no GPU needed); the numbers are checked by tests/conformance/test_subbyte.py where a GPU is."""

from __future__ import annotations

import pytest

import tilecraft
from tests.conformance import test_subbyte as SB
from tilecraft.errors import ToolchainError

ARCHS = ("sm_80", "sm_90a")
KERNELS = {
    **{f"cast_{fmt}": (lambda fmt=fmt: SB._cast_kernel(999, fmt)) for fmt in SB.FORMATS},
    **{f"tiles_{fmt}": (lambda fmt=fmt: SB._tiles_kernel(21, 67, 3, 5, fmt)) for fmt in SB.PACKED},
}


def cuda_source(build, arch: str) -> str:
    artifact = tilecraft.lower(build(), target=f"cuda -arch={arch}", execution_backend="nvrtc")
    return artifact.source("cuda-source")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", KERNELS)
def test_subbyte_cuda_compiles(nvcc, name, arch, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    source = cuda_source(KERNELS[name], arch)
    try:
        cubin = compile_cubin(source, arch, keep_dir=tmp_path)
    except ToolchainError as err:
        pytest.fail(f"nvcc rejected the generated source of {name} for {arch}:\n{err}")
    assert cubin[:4] == b"\x7fELF"


def test_packed_tiles_store_whole_bytes_and_lone_nibbles_atomically():
    source = cuda_source(KERNELS["tiles_float4_e2m1fn"], "sm_90a")
    body = source[source.index('extern "C" __global__') :]
    # CHECK: packed parameters are bytes; a whole byte takes one plain store of a nibble pair; a byte the
    # tile covers half of is set through the compare-and-swap helper (tc_store_nibble: atomicCAS)
    assert "uint8_t* __restrict__ Y_arg" in body
    assert "] = tc_nibble_pair(" in body and "tc_store_nibble(Y, " in body
    assert "atomicCAS(word, assumed, upd)" in source
    assert "#include <cuda_fp4.h>" not in source  # NVRTC compiles it without include paths
