"""`T.import_source` / `T.call_extern` / `T.access_ptr` in CUDA: the imported text comes once, before the
kernels; the call is the C call with the arrays' addresses; nvcc compiles it for sm_80 and sm_90a
(an inline-PTX lop3 decoder as TileLang's dequantize examples import). No GPU needed."""

from __future__ import annotations

import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ToolchainError
from tilecraft.testing.filecheck import filecheck

ARCHS = ("sm_80", "sm_90a")

# Eight unsigned 4-bit values (one 32-bit word) to eight float16 through lop3 and a half2 subtraction.
LOP3_DECODER = r"""
template <typename T1, typename T2>
__device__ void decode_u4_to_f16(T1 *packed, T2 *out, const int n = 8) {
    uint *h = reinterpret_cast<uint *>(out);
    uint const q = *reinterpret_cast<uint *>(packed);
    static constexpr uint lut = (0xf0 & 0xcc) | 0xaa;
#pragma unroll
    for (int i = 0; i < n / 2; i++) {
        asm volatile("lop3.b32 %0, %1, %2, %3, %4;\n" : "=r"(h[i]) : "r"(q >> (4 * i)), "n"(0x000f000f), "n"(0x64006400), "n"(lut));
        asm volatile("sub.f16x2 %0, %1, %2;\n" : "=r"(h[i]) : "r"(h[i]), "r"(0x64006400));
    }
}
__device__ int add_one(int x) { return x + 1; }
"""


def decode_kernel():
    @T.prim_func
    def decode(Q: T.Tensor((128, 4), "int8"), Out: T.Tensor((128, 8), "float16"), N: T.Tensor((128,), "int32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            q = T.alloc_local((4,), "int8")
            h = T.alloc_local((16,), "float16")
            v = T.alloc_var("int32")
            T.import_source(LOP3_DECODER)
            for i in T.vectorized(4):
                q[i] = Q[tx, i]
            T.call_extern("decode_u4_to_f16", T.access_ptr(q, "r"), T.access_ptr(h[8], "w"), dtype="handle")
            v = T.call_extern("int32", "add_one", tx)
            T.call_extern("handle", "decode_u4_to_f16", q.access_ptr("r"), h.access_ptr("w", offset=0), 8)
            for i in T.serial(8):
                Out[tx, i] = h[i] + h[8 + i]
            N[tx] = v

    return decode


def source(arch: str) -> str:
    return tilecraft.lower(decode_kernel(), target=f"cuda -arch={arch}", execution_backend="nvrtc").source("cuda-source")


def test_imported_source_comes_once_before_the_kernel_and_calls_take_the_arrays():
    text = source("sm_90a")
    assert text.count("__device__ void decode_u4_to_f16") == 1
    filecheck(text, [
        "CHECK: // T.import_source",
        "CHECK-NEXT: typedef unsigned int uint;",
        "CHECK: __device__ void decode_u4_to_f16(",
        "CHECK: __device__ int add_one(int x)",
        "CHECK: // end of T.import_source",
        'CHECK: extern "C" __global__',
        "CHECK: int8_t q[4]",
        "CHECK: uint16_t h[16]",
        "CHECK: (void)(decode_u4_to_f16((q), (h + (int32_t)8)));",
        "CHECK: v = add_one(tx);",
        "CHECK: (void)(decode_u4_to_f16((q), (h), 8));",
    ], name="kernel")  # fmt: skip


@pytest.mark.parametrize("arch", ARCHS)
def test_imported_inline_ptx_compiles_with_nvcc(nvcc, arch, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    try:
        cubin = compile_cubin(source(arch), arch, keep_dir=tmp_path)
    except ToolchainError as err:
        pytest.fail(f"nvcc rejected the generated source for {arch}:\n{err}")
    assert cubin[:4] == b"\x7fELF"


def test_a_scalar_pointer_is_the_address_of_the_variable():
    @T.prim_func
    def k(A: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            v = T.alloc_var("int32")
            v = tx
            T.call_extern("handle", "bump", T.access_ptr(v, "rw"))
            A[tx] = v

    text = tilecraft.lower(k, target="cuda -arch=sm_80", execution_backend="nvrtc").source("cuda-source")
    assert "// T.import_source" not in text  # nothing imported: no prelude
    filecheck(text, ["CHECK: (void)(bump((&v)));"], name="kernel")
