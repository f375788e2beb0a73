"""TF32 gemms on CUDA: which gemms take mma.sync m16n8k8 .tf32, the calls they lower to, and their source
compiled by nvcc for sm_80 and sm_90a (PTX checked for the instruction and the rounding). The numbers
are checked on a GPU by the conformance cases gemm_tf32_* (benchmarks/gpu_check_tf32.sh); the
templates against the PTX ISA's fragment tables by tests/cuda/test_tf32_mma_emulated.py."""

from __future__ import annotations

import dataclasses
import subprocess

import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.backend import Target
from tilecraft.cuda.op.gemm_plan import is_tf32, plan_gemm
from tilecraft.ir import stmt as S
from tilecraft.ir.visitor import walk
from tilecraft.testing.conformance import register_operands as R
from tilecraft.testing.conformance import tf32 as TF

ARCHS = ("sm_80", "sm_90a")
KERNELS = {
    "register_a_accumulating": R.tf32_fragment_a_accumulating,
    "nt_ragged": lambda: TF.gemm_tf32(200, 136, 96, False, True),
    "nn": lambda: TF.gemm_tf32(128, 128, 64, False, False),
    "tn_ragged": lambda: TF.gemm_tf32(130, 64, 96, True, False),
    "tt": lambda: TF.gemm_tf32(64, 192, 128, True, True),
    "mixed_float32_a": lambda: TF.gemm_tf32(96, 64, 160, False, True, a_dtype=T.float32),
}


def cuda_source(build, arch: str) -> str:
    return tilecraft.lower(build(), target=f"cuda -arch={arch}", execution_backend="nvrtc").source(
        "cuda-source"
    )


def kernel_body(source: str) -> str:
    return source[source.index('extern "C" __global__') :]


def _gemm(func) -> S.Gemm:
    return next(n for n in walk(func.body) if isinstance(n, S.Gemm))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", KERNELS)
def test_tf32_gemms_compile_to_tf32_mma(nvcc, name, arch, tmp_path):
    """The source compiles; its PTX has the m16n8k8 .tf32 mma and the operands' cvt.rna rounding."""
    source = tmp_path / "kernel.cu"
    source.write_text(cuda_source(KERNELS[name], arch))
    ptx = tmp_path / "kernel.ptx"
    result = subprocess.run([str(nvcc), f"-arch={arch}", "-std=c++17", "-ptx", "-o", str(ptx), str(source)],
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = ptx.read_text()
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in text
    assert "cvt.rna.tf32.f32" in text


@pytest.mark.parametrize(
    "name, call",
    [
        ("register_a_accumulating", "tc::gemm_rs_tf32<32, 32, 32, 2, 2, true>(x, fn_s + "),
        ("nt_ragged", "tc::gemm_ss_tf32<64, 64, 32, 2, 2, false, true>("),
        ("nn", "tc::gemm_ss_tf32<64, 64, 32, 2, 2, false, false>("),
        ("tn_ragged", "tc::gemm_ss_tf32<64, 64, 32, 2, 2, true, false>("),
        ("tt", "tc::gemm_ss_tf32<64, 64, 32, 2, 2, true, true>("),
        ("mixed_float32_a", "tc::gemm_ss_tf32<64, 64, 32, 2, 2, false, true>("),
    ],
)
def test_tf32_gemm_calls(name, call):
    """A register A takes gemm_rs_tf32, shared operands gemm_ss_tf32 with their transposes, also on sm_90a
    (wgmma takes 16-bit and float8 operands only here); no FMA loop is left."""
    body = kernel_body(cuda_source(KERNELS[name], "sm_90a"))
    assert call in body
    assert "_staged" not in body and "wgmma" not in body


def test_the_mhc_loop_is_pipelined():
    """example_mhc_pre allocates its tiles inside T.Pipelined: they are staged (two stages, the next
    tile issued before this one's gemm), not loaded synchronously."""
    body = kernel_body(cuda_source(KERNELS["register_a_accumulating"], "sm_80"))
    prologue, loop = body.split("for (int32_t pz = 0; pz < 3; ++pz) {")
    assert prologue.count("tc_cp_async16(") == 2 and "tc_cp_async_wait" not in prologue
    steps = ["tc_cp_async_wait<0>();", "__syncthreads();", "if (((pz + 1) < 3)) {", "tc_cp_async16(x_s + ((((pz + 1) % 2)",
             "tc_cp_async_commit();", "gemm_rs_tf32<32, 32, 32, 2, 2, true>(x, fn_s + (((pz % 2) * 1024) + 0), out);"]  # fmt: skip
    positions = [loop.index(step) for step in steps]
    assert positions == sorted(positions)


@pytest.mark.parametrize(
    "a, b, tf32",
    [
        (T.tfloat32, T.tfloat32, True),
        (T.float32, T.tfloat32, True),
        (T.tfloat32, T.float32, True),
        (T.float32, T.float32, False),
    ],
)
def test_one_tfloat32_operand_asks_for_tf32(a, b, tf32):
    """TF32 when A or B is declared T.tfloat32 (as TileLang's operand dtype); float32 x float32 stays on the
    exact FMA loop."""
    gemm = _gemm(TF.gemm_tf32(64, 64, 32, False, True, a_dtype=a, b_dtype=b))
    plan = plan_gemm(gemm, 128, Target.parse("cuda -arch=sm_80"))
    assert is_tf32(gemm) == tf32
    assert plan.variant == ("ss" if tf32 else "fma")


def test_a_transposed_register_a_stays_on_fma():
    """m16n8k8 reads a register A untransposed; a transposed one keeps the FMA loop (not an error)."""
    gemm = _gemm(R.tf32_fragment_a_accumulating())  # A is a (32, 32) fragment: square, so it transposes
    transposed = dataclasses.replace(gemm, transpose_a=True)
    assert plan_gemm(transposed, 128, Target.parse("cuda -arch=sm_80")).variant == "fma"
    assert plan_gemm(gemm, 128, Target.parse("cuda -arch=sm_80")).variant == "rs"


def test_the_tile_copied_into_the_tf32_operand_is_read_without_bank_conflicts():
    """mhc's bfloat16 x tile is read into x_frag_16 in the m16n8k8 .tf32 A layout (8 rows x 4 columns per
    warp access): row-major, its 512-byte rows put those 8 rows on the same 2 banks; as the source of a
    copy into a gemm's register operand it takes swizzle16, and each access touches 8 bank groups."""
    from collections import defaultdict

    from tilecraft.ir import expr as E
    from tilecraft.ir.eval import evaluate
    from tilecraft.ir.visitor import free_vars
    from tilecraft.testing.passes import run_pass

    func = run_pass(
        "cuda -arch=sm_80", "apply-shared-layouts", R.tf32_gemm_with_row_sums(), prefix=True
    ).functions[0]
    loads = [n for n in walk(func.body) if isinstance(n, E.BufferLoad) and n.buffer.name == "x_smem_16"]
    assert loads
    worst = 1
    for load in loads:
        (index,) = load.indices
        variables = {v.name: v for v in free_vars(index)}
        register = next(v for name, v in variables.items() if name.startswith("r"))
        for reg in range(16):
            banks = defaultdict(set)
            for lane in range(32):
                env = {v: 0 for v in variables.values()}
                env.update({variables["tx"]: lane, register: reg})
                word = evaluate(index, env) // 2  # two bfloat16 elements a 4-byte word
                banks[word % 32].add(word)
            worst = max(worst, max(len(words) for words in banks.values()))
    assert worst == 1
