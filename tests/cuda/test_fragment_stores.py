"""Fragment -> global copies store runs of consecutive elements in one access where alignment allows.

The results are checked on a GPU by the conformance cases gemm_* (f32 C), gemm_bf16_out_ragged,
gemm_f16_out_odd_n and int16_through_a_fragment; these tests pin down which stores the generated CUDA
uses."""

from __future__ import annotations

import tilecraft
from tilecraft.testing.conformance import kernels as K
from tilecraft.testing.conformance.cases import gemm_16bit_out


def _source(func) -> str:
    artifact = tilecraft.lower(func, target="cuda -arch=sm_90a", execution_backend="nvrtc")
    return artifact.source("cuda-source")


def test_a_16_bit_accumulator_copy_stores_column_pairs_as_32_bits():
    source = _source(gemm_16bit_out(100, 136, 64, "bfloat16"))
    assert "*(uint32_t*)(C + " in source
    # the run past the edge of a ragged tile falls back to guarded single stores
    assert "} else {" in source.split("*(uint32_t*)(C + ")[1]


def test_a_float32_accumulator_copy_stores_pairs_as_64_bits():
    source = _source(K.gemm(128, 128, 64, 64, 64, 32))
    assert "*(uint2*)(C + " in source


def test_an_odd_row_length_keeps_element_stores():
    # Rows of 77 elements: a pair may start at an odd address, so no 32-bit access is allowed.
    source = _source(gemm_16bit_out(96, 77, 64, "float16"))
    assert "*(uint32_t*)(C + " not in source
    assert "C[(int64_t)" in source


def test_16_bit_integers_are_packed_without_sign_extension():
    from tilecraft.testing.conformance.cases import int16_fragment

    source = _source(int16_fragment())
    assert "*(uint4*)(Y + " in source  # 8 int16 per thread: one 16-byte store
    assert "(uint32_t)(uint16_t)(" in source
