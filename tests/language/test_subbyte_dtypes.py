"""The 4-bit and microscaling dtypes in the language: TileLang's names and torch's, numpy and torch
interop, the rules (storage formats: arithmetic needs a cast; no views of packed tensors), T.reinterpret
between the 4-bit types and e8m0's bytes, and the refusal of the backends that do not lower them."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.conformance.targets import declared_cases, resolve
from tests.language.helpers import assert_roundtrip
from tilecraft.errors import LoweringError, SemanticError
from tilecraft.ir import expr as E
from tilecraft.language import dtypes as tl_dtypes

NAMES = ("int4", "uint4", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e8m0fnu")
RUNNABLE = [c for c in declared_cases() if c.kind in ("c", "opencl", "cuda")]


@pytest.mark.parametrize("name", NAMES)
def test_names_and_numpy_types(name):
    dtype = getattr(T, name)
    assert dtype == name and T.dtype(name) is dtype
    assert dtype.as_numpy() == np.dtype(getattr(ml_dtypes, name))
    assert T.dtype(np.dtype(getattr(ml_dtypes, name))) is dtype
    assert dtype.bytes == 1 and dtype.is_packed == (name in ("int4", "uint4", "float4_e2m1fn"))


def test_packed_pairs_are_torchs_float4_e2m1fn_x2():
    torch = pytest.importorskip("torch")
    pair = T.float4_e2m1fnx2
    assert pair == "float4_e2m1fnx2" and pair.lanes == 2 and pair.bytes == 1
    assert T.dtype("float4_e2m1fn_x2") == pair and T.dtype(torch.float4_e2m1fn_x2) == pair
    assert pair.as_torch() is torch.float4_e2m1fn_x2 and T.float4_e2m1fn.as_torch() is torch.float4_e2m1fn_x2
    assert T.int4.as_torch() is torch.int8 and T.uint4.as_torch() is torch.uint8
    assert tl_dtypes._TORCH_DTYPE_TO_STR[torch.float4_e2m1fn_x2] == "float4_e2m1fnx2"
    assert pair.as_numpy() == np.uint8


def _arithmetic():
    @T.prim_func
    def arithmetic(A: T.Tensor((8,), "float4_e2m1fn"), B: T.Tensor((8,), "float4_e2m1fn")):
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                B[i] = A[i] + A[i]

    return arithmetic


def test_arithmetic_on_a_storage_format_needs_a_cast():
    with pytest.raises(SemanticError, match=r"arithmetic on float4_e2m1fn is not supported") as err:
        tilecraft.lower(_arithmetic(), target="c")
    assert "test_subbyte_dtypes.py" in str(err.value) and "T.cast(x, 'float32')" in str(err.value)


def test_views_of_packed_tensors_are_refused():
    @T.prim_func
    def view(A: T.Tensor((8, 8), "int4"), B: T.Tensor((64,), "float32")):
        flat = T.Tensor((64,), "int4", A.data)
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                B[i] = T.cast(flat[i], "float32")

    with pytest.raises(SemanticError, match=r"views of packed int4 tensors are not supported"):
        tilecraft.lower(view, target="c")


def test_buffers_of_packed_pairs_are_refused():
    @T.prim_func
    def pairs(A: T.Tensor((8, 4), "float4_e2m1fnx2"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                B[i] = 1.0

    with pytest.raises(SemanticError, match=r"buffer A is float4_e2m1fnx2: buffers of packed pairs") as err:
        tilecraft.lower(pairs, target="c")
    assert "T.Tensor((..., N), 'float4_e2m1fn')" in str(err.value)


def _codes(fmt_in: str, fmt_out: str):
    """Y = the 16 codes of `fmt_in` (given as uint4 nibbles) reinterpreted as `fmt_out`, as float32."""

    @T.prim_func
    def codes(C: T.Tensor((16,), "uint4"), Y: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(16):
                Y[i] = T.cast(T.reinterpret(T.reinterpret(C[i], fmt_in), fmt_out), "float32")

    return codes


@pytest.mark.parametrize("case", RUNNABLE, ids=[c.id for c in RUNNABLE])
@pytest.mark.parametrize("fmt_in,fmt_out", [("float4_e2m1fn", "int4"), ("int4", "float4_e2m1fn"),
                                             ("uint4", "float4_e2m1fn"), ("float4_e2m1fn", "uint4")])  # fmt: skip
def test_reinterpret_between_4_bit_types(case, fmt_in, fmt_out):
    ctx = resolve(case)
    codes = np.arange(16, dtype=np.uint8)
    packed = codes[0::2] | (codes[1::2] << 4)
    y = np.full(16, np.nan, np.float32)
    backend = ctx.execution_backend()
    placed = [backend.to_device(packed), backend.to_device(y)]
    tilecraft.compile(_codes(fmt_in, fmt_out), ctx=ctx)(*placed)
    want = codes.view(getattr(ml_dtypes, fmt_out)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(backend.to_host(placed[1])), want)


def test_reinterpret_constants_fold():
    assert E.const_value(T.reinterpret(T.float4_e2m1fn(-6.0), "int4")) == -1
    assert E.const_value(T.reinterpret(T.int4(7), "float4_e2m1fn")) == 6.0
    assert E.const_value(T.reinterpret(T.uint8(130), "float8_e8m0fnu")) == 8.0
    assert E.const_value(T.reinterpret(T.float8_e8m0fnu(0.25), "uint8")) == 125


def test_a_pair_of_values_prints_and_parses_back():
    @T.prim_func
    def pair(A: T.Tensor((8,), "float4_e2m1fn"), B: T.Tensor((8,), "float4_e2m1fn")):
        with T.Kernel(1, threads=4):
            for i in T.Parallel(4):
                B[2 * i] = T.call_intrin("float4_e2m1fnx2", "vector", A[2 * i + 1], A[2 * i])

    assert "'vector'" in assert_roundtrip(pair)


def _quantize():
    @T.prim_func
    def quantize(X: T.Tensor((64,), "float32"), Q: T.Tensor((64,), "float4_e2m1fn")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                Q[i] = X[i]

    return quantize


@pytest.mark.parametrize("target", ["webgpu", "metal -family=apple8", "hip -arch=gfx942"])
def test_other_backends_refuse_at_lowering_with_the_line(target):
    with pytest.raises(LoweringError) as err:
        tilecraft.lower(_quantize(), target=target)
    text = str(err.value)
    assert err.value.unsupported == "dtype:4-bit-and-microscaling"
    assert "float4_e2m1fn" in text and "test_subbyte_dtypes.py" in text and "(cpu, cuda, opencl)" in text
