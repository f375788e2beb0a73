"""T.float8_e4m3fnuz and T.float8_e5m2fnuz (bias 8 / 16, no infinity, no negative zero, 0x80 the NaN):
storage in global and shared buffers, conversions from and to float32 bit for bit what ml_dtypes does
(round to nearest even, overflow, infinities and NaN to NaN, negative values that round to zero to +0),
on the CPU target; the CUDA source compiles with nvcc; torch tensors of the type pass through; targets
without float8 refuse them at lowering; a gemm of them is refused (no matrix unit reads them)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import SemanticError

FNUZ = ("float8_e4m3fnuz", "float8_e5m2fnuz")


def round_trip(n: int, dtype: str):
    """B = A converted to `dtype` through a shared buffer; C = 2 * B read back as float32."""

    @T.prim_func
    def kernel(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), dtype), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            s = T.alloc_buffer((128,), dtype=dtype, scope="shared")
            for i in T.Parallel(128):
                s[i] = A[bx * 128 + i]
            for i in T.Parallel(128):
                B[bx * 128 + i] = s[i]
                C[bx * 128 + i] = T.cast(s[i], "float32") * 2.0

    return kernel


def every_float32_kind(n: int, seed: int) -> np.ndarray:
    """Random bit patterns around the formats' ranges (normals, subnormals, ties, overflow) and the
    special values, both signs."""
    rng = np.random.default_rng(seed)
    near = rng.integers(0x33000000, 0x48000000, n, dtype=np.uint32) | (rng.integers(0, 2, n, dtype=np.uint32) << 31)
    a = near.view(np.float32).copy()
    a[:8] = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e-30]
    a[8:16] = [240.0, 247.0, 248.0, -256.0, 57344.0, 61440.0, 2.0**-11, -(2.0**-18)]
    return a


@pytest.mark.parametrize("dtype", FNUZ)
def test_conversions_are_bit_exact_with_ml_dtypes(dtype):
    n = 128 * 40 - 37  # ragged: the last block is partial
    a = every_float32_kind(n, seed=len(dtype))
    b = np.full(n, 0x55, np.uint8).view(getattr(ml_dtypes, dtype))  # poison
    c = np.full(n, 12345.0, np.float32)
    tilecraft.compile(round_trip(n, dtype), target="c")(a, b, c)
    want = a.astype(getattr(ml_dtypes, dtype))
    np.testing.assert_array_equal(b.view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(c, want.astype(np.float64).astype(np.float32) * 2)  # NaN where NaN


@pytest.mark.parametrize("dtype", FNUZ)
def test_every_code_reads_as_ml_dtypes_value(dtype):
    @T.prim_func
    def widen(B: T.Tensor((256,), dtype), C: T.Tensor((256,), "float64")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(256):
                C[i] = T.cast(B[i], "float64")

    codes = np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, dtype))
    c = np.full(256, 7.0)
    tilecraft.compile(widen, target="c")(codes, c)
    np.testing.assert_array_equal(c, codes.astype(np.float64))
    assert np.isnan(c[0x80]) and np.isnan(c).sum() == 1


def test_constants_round_once_to_the_type():
    @T.prim_func
    def consts(B: T.Tensor((4,), "float8_e4m3fnuz")):
        with T.Kernel(1, threads=32):
            B[0] = T.float8_e4m3fnuz(0.3)
            B[1] = T.float8_e4m3fnuz(-1000.0)
            B[2] = T.float8_e4m3fnuz(-0.0001)
            B[3] = T.float8_e4m3fnuz(239.0)

    b = np.zeros(4, ml_dtypes.float8_e4m3fnuz)
    tilecraft.compile(consts, target="c")(b)
    want = np.array([0.3, -1000.0, -0.0001, 239.0]).astype(np.float32).astype(ml_dtypes.float8_e4m3fnuz)
    np.testing.assert_array_equal(b.view(np.uint8), want.view(np.uint8))


def test_dtypes_are_named_as_tilelang_names_them():
    assert T.float8_e4m3fnuz.name == "float8_e4m3fnuz" and T.float8_e5m2fnuz.name == "float8_e5m2fnuz"
    assert tilecraft.ir.dtype.as_dtype("float8_e5m2fnuz") is T.float8_e5m2fnuz
    assert T.float8_e4m3fnuz.as_numpy() == np.dtype(ml_dtypes.float8_e4m3fnuz)


def test_torch_tensors_of_the_type_pass_through():
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "float8_e4m3fnuz"):
        pytest.skip("this torch has no float8_e4m3fnuz")
    n = 300
    a = torch.from_numpy(every_float32_kind(n, seed=5))
    b = torch.zeros(n, dtype=torch.float8_e5m2fnuz)
    c = torch.full((n,), 12345.0)
    tilecraft.compile(round_trip(n, "float8_e5m2fnuz"), target="c")(a, b, c)
    want = a.to(torch.float8_e5m2fnuz)
    assert torch.equal(b.view(torch.uint8), want.view(torch.uint8))
    assert T.float8_e4m3fnuz.as_torch() is torch.float8_e4m3fnuz


@pytest.mark.parametrize("dtype", FNUZ)
def test_cuda_source_compiles_with_nvcc(dtype, tmp_path):
    from tests.transform.helpers import assert_nvcc_compiles

    source = assert_nvcc_compiles(round_trip(1000, dtype), tmp_path)
    stem = dtype.removeprefix("float8_")
    assert f"tc_f32_to_{stem}(" in source and f"tc_{stem}_to_f32(" in source


def test_only_kernels_that_use_them_carry_the_conversions():
    from tests.transform.helpers import c_source

    @T.prim_func
    def plain(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(8):
                A[i] = A[i] * 2.0

    assert "tc_f32_to_fnuz" not in c_source(plain)
    assert "tc_f32_to_fnuz" in c_source(round_trip(256, "float8_e4m3fnuz"))


def test_webgpu_refuses_them_at_lowering():
    from tests.transform.helpers import WEBGPU

    with pytest.raises(Exception, match="float8") as info:
        tilecraft.lower(round_trip(256, "float8_e4m3fnuz"), target=WEBGPU, execution_backend="wgpu")
    assert "test_fnuz_float8.py" in str(info.value)


def test_a_gemm_of_them_is_refused():
    @T.prim_func
    def gemm(A: T.Tensor((16, 32), "float8_e4m3fnuz"), B: T.Tensor((32, 16), "float8_e4m3fn"),
             C: T.Tensor((16, 16), "float32")):  # fmt: skip
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((16, 32), "float8_e4m3fnuz")
            b = T.alloc_shared((32, 16), "float8_e4m3fn")
            c = T.alloc_fragment((16, 16), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.copy(c, C)

    with pytest.raises(SemanticError, match="T.gemm does not accept"):
        tilecraft.lower(gemm, target="c")
