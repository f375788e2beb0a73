"""Every conformance kernel, generated as HIP and compiled by clang for gfx90a and gfx942 (no AMD GPU,
no ROCm): it compiles, or is declared unsupported by the manifest with the reason; what clang made of
it is read back from the code object: the target and wavefront size in its metadata notes, and the
v_mfma instructions of every gemm the MFMA path takes in its disassembly."""

from __future__ import annotations

import functools
import re

import pytest

import tilecraft.language as T
from tests.hip.helpers import MFMA, disassembly, lowered, notes
from tilecraft.errors import LoweringError
from tilecraft.testing.conformance.cases import CASES
from tilecraft.testing.conformance.runner import Unsupported, declared
from tilecraft.testing.filecheck import filecheck

ARCHS = ("gfx90a", "gfx942")
CASE = {c.name: c for c in CASES}
# The conformance gemms MFMA takes: float16/bfloat16 operands, float32 accumulator fragment, whole 2-D
# tiles. The others (float32 gemms, batched 3-D tiles, the tf32 one) run as FMA loops.
MFMA_CASES = (
    "gemm_f16_nn", "gemm_f16_nt", "gemm_f16_tn", "gemm_f16_tt", "gemm_bf16_nn", "gemm_f16_ragged_nt",
    "gemm_bf16_out_ragged", "split_k_gemm_atomic", "flash_attention_full", "flash_attention_causal",
    "gemm_register_a_from_global", "gemm_register_a_from_accumulator", "convolution_im2col_and_views",
    "flash_attention_bhsd_causal_one_warpgroup",
)  # fmt: skip
FMA_CASES = ("gemm_f32_nn", "batched_gemm", "gemm_tf32_register_a_accumulating")


@functools.cache
def compiled(name: str, arch: str):
    """The artifact of conformance case `name` for `arch` (code object included), or the Unsupported
    exception its declared limit gives."""
    from tilecraft.backend import create_backend_context

    ctx = create_backend_context(f"hip -arch={arch}", execution_backend="hip", require_available=False)
    try:
        return lowered(CASE[name].build(), arch)
    except LoweringError as err:
        found = declared(err, ctx)
        if isinstance(found, Unsupported):
            return found
        raise found from err


WANTED_MFMA = {"gfx90a": {"f16": "v_mfma_f32_16x16x16f16", "bf16": "v_mfma_f32_16x16x16bf16_1k"},
               "gfx942": {"f16": "v_mfma_f32_16x16x16_f16", "bf16": "v_mfma_f32_16x16x16_bf16"}}  # fmt: skip


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", list(CASE))
def test_every_conformance_kernel_compiles_or_is_declared_unsupported(clang, objdump, readelf, name, arch):
    """Each kernel compiles once (the slow part: clang -O3) and is checked in full: its code object is an
    AMDGPU ELF for `arch` whose kernels all report wavefront 64, and a gemm MFMA takes has v_mfma in its
    disassembly (one MFMA cannot take has none)."""
    artifact = compiled(name, arch)
    if isinstance(artifact, Unsupported):
        pytest.skip(str(artifact))
    assert 'extern "C" __attribute__((global))' in artifact.source("hip-source")
    binary = artifact.binary("hsaco")
    assert binary[:4] == b"\x7fELF"
    text = notes(readelf, binary)
    assert f"amdhsa.target:   amdgcn-amd-amdhsa--{arch}" in text
    sizes = re.findall(r"\.wavefront_size:\s+(\d+)", text)
    assert sizes and set(sizes) == {"64"}, f"{name}: wavefront sizes {sizes}"
    if name in MFMA_CASES or name in FMA_CASES:
        found = set(MFMA.findall(disassembly(objdump, binary, arch)))
        if name in FMA_CASES:
            assert not found, f"{name} on {arch} runs as FMA loops, but has {sorted(found)}"
        else:
            wanted = WANTED_MFMA[arch]["bf16" if "bf16" in name else "f16"]
            assert wanted in found, f"{name} on {arch}: {sorted(found) or 'no MFMA'}"


def test_the_lists_name_conformance_cases():
    assert set(MFMA_CASES) | set(FMA_CASES) <= set(CASE)


def test_reductions_exchange_lanes_with_ds_bpermute(clang, objdump):
    code = disassembly(objdump, compiled("softmax_f16", "gfx942").binary("hsaco"), "gfx942")
    assert "ds_bpermute_b32" in code


def test_the_mfma_gemm_reads_its_tiles_after_a_barrier(clang):
    source = compiled("gemm_f16_nn", "gfx942").source("hip-source")
    kernel = source[source.index('extern "C"') :]
    filecheck(kernel, ["CHECK: tc_syncthreads();", "CHECK: tc::mfma_gemm<"], name="gemm_f16_nn")


def test_kernels_include_no_header(clang):
    assert "#include" not in compiled("layer_norm", "gfx942").source("hip-source")


# ---------------------------------------------------------------- float8 MFMA (gfx942) and the FMA path


def fp8_gemm(a_dtype: str, b_dtype: str, m: int = 64, n: int = 64, k: int = 64):
    @T.prim_func
    def gemm8(A: T.Tensor((m, k), a_dtype), B: T.Tensor((k, n), b_dtype), C: T.Tensor((m, n), "float32")):
        with T.Kernel(1, threads=256):
            As = T.alloc_shared((m, k), a_dtype)
            Bs = T.alloc_shared((k, n), b_dtype)
            Cf = T.alloc_fragment((m, n), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cf, clear_accum=True)
            T.copy(Cf, C)

    return gemm8


FP8_FORMS = {("float8_e4m3fn", "float8_e4m3fn"): "fp8_fp8", ("float8_e4m3fn", "float8_e5m2"): "fp8_bf8",
             ("float8_e5m2", "float8_e4m3fn"): "bf8_fp8", ("float8_e5m2", "float8_e5m2"): "bf8_bf8"}  # fmt: skip


@pytest.mark.parametrize("dtypes", list(FP8_FORMS), ids=list(FP8_FORMS.values()))
def test_float8_gemms_take_the_fp8_mfma_on_gfx942(clang, objdump, dtypes):
    artifact = lowered(fp8_gemm(*dtypes), "gfx942")
    assert "tc::mfma_gemm_fp8<" in artifact.source("hip-source")
    found = set(MFMA.findall(disassembly(objdump, artifact.binary("hsaco"), "gfx942")))
    assert found == {f"v_mfma_f32_16x16x32_{FP8_FORMS[dtypes]}"}


def test_float8_gemms_run_as_fma_loops_on_gfx90a(clang, objdump):
    """gfx90a has no fp8 MFMA (clang rejects the builtin there): the FMA path, with software conversions."""
    artifact = lowered(fp8_gemm("float8_e4m3fn", "float8_e4m3fn"), "gfx90a")
    assert "mfma" not in artifact.source("hip-source").split('extern "C"', 1)[1]
    assert not MFMA.findall(disassembly(objdump, artifact.binary("hsaco"), "gfx90a"))


def test_a_work_group_smaller_than_a_wavefront_runs_as_a_partial_one(clang, readelf):
    """threads=32 on wave64: lowered with groups of 32 (lane = tid % 32), compiled for wavefront 64."""
    artifact = compiled("views_alias_their_base", "gfx942")
    kernel = artifact.source("hip-source").split('extern "C"', 1)[1]
    assert "amdgpu_flat_work_group_size(32, 32)" in kernel and "% 64" not in kernel
    assert ".wavefront_size: 64" in notes(readelf, artifact.binary("hsaco"))


def test_rdna3_is_lowered_and_compiled_for_wavefronts_of_32(clang, objdump, readelf):
    """gfx1100 (RDNA3) runs wave32: lanes are tid % 32, the code object says 32, reductions still use
    ds_bpermute."""
    artifact = lowered(CASE["softmax_f16"].build(), "gfx1100")
    assert "% 32" in artifact.source("hip-source")
    sizes = set(re.findall(r"\.wavefront_size:\s+(\d+)", notes(readelf, artifact.binary("hsaco"))))
    assert sizes == {"32"}
    assert "ds_bpermute_b32" in disassembly(objdump, artifact.binary("hsaco"), "gfx1100")
