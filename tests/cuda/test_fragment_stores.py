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


def test_a_store_of_a_cast_to_the_buffers_16_bit_type_converts_once():
    """f32 -> f16 at a store was cvt.rn.f16, cvt.f32.f16, cvt.rn.f16 (the cast's round trip, then the
    store's conversion): the cast is dropped there, the rounding is the same (tests/conformance runs
    the numbers on every target)."""
    import tilecraft
    import tilecraft.language as T

    @T.prim_func
    def narrow(
        A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float16"), C: T.Tensor((256,), "bfloat16")
    ):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(256):
                B[i] = T.cast(A[i] * 3.0, "float16")
                C[i] = T.cast(A[i], "bfloat16")

    for target in ("cuda -arch=sm_90a", "c"):
        art = tilecraft.lower(narrow, target=target, execution_backend="nvrtc" if "cuda" in target else "cc")
        source = next(iter(art.device_sources.values()))
        kernel = source[source.rindex("narrow") :]  # the kernel, past the header's helpers
        assert "tc_round_f16" not in kernel and "tc_round_bf16" not in kernel, kernel
        assert "tc_f2h(" in kernel and "tc_f2bf(" in kernel


def test_a_buffer_written_only_by_vector_stores_is_not_declared_const():
    """A fragment copied out in whole 8-byte runs writes its destination only through vector stores; the
    parameter was declared `const T* __restrict__`, which lets the compiler assume it is never written."""
    import tilecraft.language as T

    @T.prim_func
    def out(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "bfloat16")):
        with T.Kernel(1, threads=64):
            f = T.alloc_fragment((256,), "float32")
            T.copy(A, f)
            T.copy(f, B)

    kernel = _source(out).split('extern "C"')[-1]
    assert "*(uint2*)(B + " in kernel and "B[" not in kernel
    assert "const float* __restrict__ A_arg, uint16_t* __restrict__ B_arg" in kernel
