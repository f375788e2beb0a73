"""Fragment <-> global copies move runs of consecutive elements in one access where alignment allows.

The results are checked on a GPU by the conformance cases gemm_* (f32 C), gemm_bf16_out_ragged,
gemm_f16_out_odd_n, int16_through_a_fragment, fp8_token_cast_ragged and int8_fragment_runs; these tests
pin down which loads and stores the generated CUDA uses."""

from __future__ import annotations

import re
import subprocess

import tilecraft
from tilecraft.testing.conformance import kernels as K
from tilecraft.testing.conformance.cases import fp8_token_cast, gemm_16bit_out, int8_fragment_runs
from tilecraft.testing.filecheck import filecheck


def _source(func) -> str:
    artifact = tilecraft.lower(func, target="cuda -arch=sm_90a", execution_backend="nvrtc")
    return artifact.source("cuda-source")


def _kernel(source: str) -> str:
    return source[source.index('extern "C" __global__') :]


def test_a_16_bit_accumulator_copy_stores_column_pairs_as_32_bits():
    source = _source(gemm_16bit_out(100, 136, 64, "bfloat16"))
    # rows of 136 elements: a pair lies wholly inside or wholly past the ragged tile's edge, so the
    # edge guard skips whole pairs and no element store is left
    filecheck(_kernel(source), ["CHECK: for (int32_t v2 = 0;", "CHECK-NEXT: if (", "CHECK-NEXT: *(uint32_t*)(C + ",
                                "CHECK-NOT: C["])  # fmt: skip


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


# ---------------------------------------------------------------- 8-bit runs and loads into fragments


def test_a_float8_fragment_is_stored_in_8_byte_runs_and_a_float32_tile_loaded_in_16_bytes():
    """TileLang's per_token_cast_to_fp8 (ragged here): the row maxima's source gives each thread a run of 8
    consecutive columns (16 threads a row: 4 shuffle levels), so the float32 tile is loaded with two
    16-byte read-only loads per run, and the float8 result stored 8 bytes at a time, packed through
    uint8_t; runs past the edge read zeros and store nothing."""
    kernel = _kernel(_source(fp8_token_cast()))
    checks = """
        CHECK: for (int32_t v1 = 0; v1 < 2; ++v1) {
        CHECK-NEXT: if (
        CHECK: const uint4 tc_v = __ldg((const uint4*)(X + (
        CHECK-NEXT: x[(v1 * 4)] = __int_as_float((int)(tc_v.x));
        CHECK-NEXT: x[((v1 * 4) + 1)] = __int_as_float((int)(tc_v.y));
        CHECK: x[((v1 * 4) + 3)] = __int_as_float((int)(tc_v.w));
        CHECK: } else {
        CHECK-NEXT: x[(int32_t)(v1 * 4)] = (float)0;
        CHECK: __shfl_xor_sync(0xffffffffu, red0, 8)
        CHECK-NOT: __shfl_xor_sync(0xffffffffu, red0, 16)
        CHECK: tc_f32_to_e4m3(
        CHECK: for (int32_t v5 = 0; v5 < 1; ++v5) {
        CHECK-NEXT: if (
        CHECK-NEXT: *(uint2*)(Y + {{.*}} = make_uint2(((uint32_t)(uint8_t)(q[0]) | {{.*}}(q[(int32_t)7]) << 24)));
        CHECK-NOT: Y[
    """
    filecheck(kernel, [line.strip() for line in checks.strip().splitlines()])
    assert "X[" not in kernel  # no element load is left


def test_8_bit_runs_narrow_to_what_the_row_length_aligns():
    """int8 rows of 88 bytes: the layout's 16-byte runs are 8-byte aligned only, so the tile moves in
    8-byte accesses, loaded as is into the int8 fragment and converted element by element into the
    float32 one; stores of int8 pack bytes without sign extension."""
    kernel = _kernel(_source(int8_fragment_runs()))
    assert kernel.count("const uint2 tc_v = __ldg((const uint2*)(X + ") == 2
    assert "f[(v1 * 8)] = ((int8_t)((uint8_t)(tc_v.x)));" in kernel
    assert "= ((int8_t)((uint8_t)((tc_v.y >> 24))));" in kernel
    assert "= ((float)((((int8_t)((uint8_t)((tc_v.x >> 8)))))));" in kernel
    assert "*(uint2*)(Y + " in kernel and "(uint32_t)(uint8_t)(f[" in kernel
    assert "*(uint4*)(Z + " in kernel  # float32 runs of 4 from the 16-register layout
    assert "X[" not in kernel.split("} else {")[0]


def test_a_row_length_that_aligns_no_4_byte_run_stores_byte_pairs():
    """float8 rows of 202 bytes: a 4-byte run may start at an address that is only 2-byte aligned, so
    the bytes go out in pairs (one 16-bit store each), none alone."""
    kernel = _kernel(_source(fp8_token_cast(m=50, n=202)))
    assert "*(uint32_t*)(Y + " not in kernel and "*(uint16_t*)(Y + " in kernel
    assert "Y[(int64_t)" not in kernel
    assert "const uint2 tc_v = __ldg((const uint2*)(X + " in kernel  # float32 pairs are 8-byte aligned


def test_the_runs_compile_to_vector_instructions(nvcc, tmp_path):
    """ptxas sees two v4 read-only loads per float32 run of 8 and one 64-bit store per float8 run."""
    path = tmp_path / "cast.cu"
    path.write_text(_source(fp8_token_cast()))
    done = subprocess.run([nvcc, "-arch=sm_90a", "-ptx", "-O3", "-o", str(tmp_path / "cast.ptx"), str(path)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    ptx = (tmp_path / "cast.ptx").read_text()
    body = ptx[ptx.rindex(".entry") :]
    accesses = re.findall(r"\b((?:ld|st)\.global[\w.]*)", body)
    assert accesses.count("ld.global.nc.v4.u32") == 2, accesses
    assert accesses.count("st.global.v2.u32") == 1 and "st.global.u8" not in accesses, accesses


def test_a_load_into_a_fragment_of_another_dtype_converts_each_element_once():
    """float32 -> float16 registers and float16 -> float32 registers: one vector load per run, then the
    cast's conversion of each element (rounded once to float16, widened exactly)."""
    import tilecraft.language as T

    @T.prim_func
    def convert(A: T.Tensor((64, 128), "float32"), B: T.Tensor((64, 128), "float16"),
                C: T.Tensor((64, 128), "float32"), D: T.Tensor((64, 128), "float16")):  # fmt: skip
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((64, 128), "float16")
            g = T.alloc_fragment((64, 128), "float32")
            T.copy(A, f)
            T.copy(B, g)
            T.copy(f, D)
            T.copy(g, C)

    kernel = _kernel(_source(convert))
    assert "const uint4 tc_v = __ldg((const uint4*)(A + " in kernel
    assert "f[(v1 * 4)] = tc_f2h((float)((__int_as_float((int)(tc_v.x)))));" in kernel
    assert "const uint2 tc_v = __ldg((const uint2*)(B + " in kernel
    assert "g[((v2 * 4) + 1)] = ((float)((tc_h2f((uint16_t)((tc_v.x >> 16))))));" in kernel
    assert "A[" not in kernel and "B[" not in kernel
