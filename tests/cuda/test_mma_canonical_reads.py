"""An mma.sync gemm reading a shared tile in wgmma's canonical layout (TileLang's GQA backward reads
K_shared through wgmma and through mma.sync): the device header's `tc_operand_at` must give the offsets
the compiler's SharedLayout "wgmma" gives (what TMA and the copies write), and select-gemm-instructions
keeps such a kernel on the sm_90a path."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import tilecraft
from tilecraft.cuda.shared_layout import wgmma_operand
from tilecraft.testing.conformance import register_operands as R

INCLUDE = Path(tilecraft.__file__).parent / "cuda" / "include"
TILES = [(128, 192, 64), (32, 128, 64), (64, 64, 32), (16, 96, 16)]  # rows, row length, atom


def _host_program(tiles) -> str:
    lines = ['#include "tc_cuda.h"', "#include <cstdio>", "int main() {"]
    for rows, width, atom in tiles:
        lines.append(f"  for (int r = 0; r < {rows}; ++r) for (int c = 0; c < {width}; ++c)")
        lines.append(f'    std::printf("%d\\n", tc_operand_at<{width}, {rows}, {atom}>(r, c));')
    return "\n".join([*lines, "  return 0;", "}"]) + "\n"


def test_tc_operand_at_is_the_canonical_layout(nvcc, tmp_path):
    source = tmp_path / "offsets.cu"
    source.write_text(_host_program(TILES))
    binary = tmp_path / "offsets"
    subprocess.run([nvcc, "-std=c++17", "-arch=sm_90a", f"-I{INCLUDE}", str(source), "-o", str(binary)],
                   check=True, capture_output=True)  # fmt: skip
    printed = [int(x) for x in subprocess.run([str(binary)], check=True, capture_output=True,
                                              text=True).stdout.split()]  # fmt: skip
    expected = []
    for rows, width, atom in TILES:
        layout = wgmma_operand(rows, width, atom)
        expected += [layout.offset(r * width + c) for r in range(rows) for c in range(width)]
    assert printed == expected


def test_a_tile_read_by_wgmma_and_mma_keeps_the_sm90a_path():
    artifact = tilecraft.lower(R.head_192_gemms(True), target="cuda -arch=sm_90a", execution_backend="nvrtc")
    calls = re.findall(r"tc::gemm\w*<[^>]*>", artifact.source("cuda-source"))
    assert calls[0].startswith("tc::gemm_wgmma<") and calls[1].startswith("tc::gemm_wgmma_rs<")
    # dQ = P^T @ K: 32 rows (mma.sync), K read in the canonical layout of the first gemm's A (64-element atoms)
    assert calls[2] == "tc::gemm_ss<32, 192, 128, 1, 8, true, false, false, 0, 64>"


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_head_192_kernels_compile(nvcc, arch, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    for with_dq in (False, True):
        artifact = tilecraft.lower(R.head_192_gemms(with_dq), target=f"cuda -arch={arch}", execution_backend="nvrtc")
        assert compile_cubin(artifact.source("cuda-source"), arch, keep_dir=tmp_path)[:4] == b"\x7fELF"
