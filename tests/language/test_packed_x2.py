"""TileLang's packed two-lane intrinsics (T.add2, T.sub2, T.mul2, T.fma2, T.max2, T.min2, T.abs2) on
float32x2, float16x2 and bfloat16x2 values loaded at a T.Ramp index: each lane is the scalar operation,
rounded once to the lane's dtype (fma2 too: the exact x * y + z rounded once), checked bit for bit
against exact references on every target that runs here; CUDA's source compiles with nvcc."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.conformance.targets import declared_cases, resolve
from tests.transform.helpers import WEBGPU, assert_nvcc_compiles
from tilecraft.errors import LoweringError, ParseError, SemanticError

RUNNABLE = [c for c in declared_cases() if c.kind in ("c", "opencl", "cuda")]
DTYPES = ("float32", "float16", "bfloat16")
PAIRS = 13  # threads, each one pair: a ragged count
BINARY = {
    "add2": (T.add2, lambda a, b: a + b),
    "sub2": (T.sub2, lambda a, b: a - b),
    "mul2": (T.mul2, lambda a, b: a * b),
    "max2": (T.max2, lambda a, b: max(a, b)),
    "min2": (T.min2, lambda a, b: min(a, b)),
}


def _binary(op, dtype):
    @T.prim_func
    def binary(
        A: T.Tensor((PAIRS * 2,), dtype), B: T.Tensor((PAIRS * 2,), dtype), C: T.Tensor((PAIRS * 2,), dtype)
    ):
        with T.Kernel(1, threads=PAIRS):
            tid = T.get_thread_binding()
            idx = T.Ramp(tid * 2, 1, 2)
            C[idx] = op(A[idx], B[idx])

    return binary


def _fma(dtype, n=PAIRS * 2):
    @T.prim_func
    def fma(
        A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype), D: T.Tensor((n,), dtype)
    ):
        with T.Kernel(T.ceildiv(n // 2, 4), threads=4) as bx:
            pair = bx * 4 + T.get_thread_binding()
            if pair < n // 2:
                idx = T.Ramp(pair * 2, 1, 2)
                D[idx] = T.fma2(A[idx], B[idx], C[idx])

    return fma


def _abs(dtype):
    @T.prim_func
    def absolute(A: T.Tensor((PAIRS * 2,), dtype), C: T.Tensor((PAIRS * 2,), dtype)):
        with T.Kernel(1, threads=PAIRS):
            idx = T.Ramp(T.get_thread_binding() * 2, 1, 2)
            C[idx] = T.abs2(A[idx])

    return absolute


def _np(dtype: str):
    return np.dtype(getattr(ml_dtypes, dtype) if dtype == "bfloat16" else dtype)


def _round_once(exact: Fraction, dtype: str):
    """`exact` rounded to nearest (ties to even) in `dtype`: the neighbours of the double nearest to it
    compared exactly (a double rounded again to a narrow type may be rounded twice)."""
    kind = _np(dtype)
    near = np.array(float(exact)).astype(kind)
    word = np.uint16 if kind.itemsize == 2 else np.uint32
    bits = int(near.view(word))
    candidates = [b for b in (bits - 1, bits, bits + 1) if 0 <= b <= np.iinfo(word).max]
    values = [(np.array(b, word).view(kind), b) for b in candidates]
    finite = [(v, b) for v, b in values if np.isfinite(v)]
    return min(finite, key=lambda vb: (abs(Fraction(float(vb[0])) - exact), vb[1] & 1))[0]


def _run(kernel_of, case, *arrays):
    ctx = resolve(case)
    backend = ctx.execution_backend()
    placed = [backend.to_device(a) for a in arrays]
    tilecraft.compile(kernel_of, ctx=ctx)(*placed)
    return [np.asarray(backend.to_host(p)) for p in placed]


def _inputs(dtype, n, count, seed):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(n) * 4).astype(_np(dtype)) for _ in range(count)]


@pytest.mark.parametrize("case", RUNNABLE, ids=[c.id for c in RUNNABLE])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_lanes_are_the_scalar_operation_rounded_once(case, dtype, name):
    op, reference = BINARY[name]
    a, b = _inputs(dtype, PAIRS * 2, 2, seed=hash((dtype, name)) & 0xFFFF)
    out = np.full(PAIRS * 2, np.nan, _np(dtype))
    got = _run(_binary(op, dtype), case, a, b, out)[2]
    want = [_round_once(Fraction(reference(float(x), float(y))), dtype) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got.astype(np.float64), np.array(want, np.float64))


@pytest.mark.parametrize("case", RUNNABLE, ids=[c.id for c in RUNNABLE])
@pytest.mark.parametrize("dtype", DTYPES)
def test_fma2_rounds_the_exact_result_once(case, dtype):
    a, b, c = _inputs(dtype, PAIRS * 2, 3, seed=7)
    # Cases that a product rounded first, or a sum rounded to float32 first, gets wrong: 3 * 87 = 261 lies
    # halfway between two bfloat16 values, and 2**-100 (2**-24 in float16) decides the rounding.
    hard = {"bfloat16": [(3.0, 87.0, 2.0**-100), (3.0, 87.0, -(2.0**-100))],
            "float16": [(3.0, 683.0 / 1024, 2.0**-24), (3.0, 683.0 / 1024, -(2.0**-24))],
            "float32": [(1.0 + 2.0**-12, 1.0 + 2.0**-12, -1.0)]}[dtype]  # fmt: skip
    for k, (x, y, z) in enumerate(hard):
        a[k], b[k], c[k] = x, y, z
    out = np.full(PAIRS * 2, np.nan, _np(dtype))
    got = _run(_fma(dtype), case, a, b, c, out)[3]
    want = [_round_once(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), dtype)
            for x, y, z in zip(a, b, c)]  # fmt: skip
    np.testing.assert_array_equal(got.astype(np.float64), np.array(want, np.float64))
    if dtype == "bfloat16":
        assert got[0] == 262 and got[1] == 260


@pytest.mark.parametrize("case", RUNNABLE, ids=[c.id for c in RUNNABLE])
@pytest.mark.parametrize("dtype", DTYPES)
def test_abs2(case, dtype):
    (a,) = _inputs(dtype, PAIRS * 2, 1, seed=3)
    out = np.full(PAIRS * 2, np.nan, _np(dtype))
    got = _run(_abs(dtype), case, a, out)[1]
    np.testing.assert_array_equal(got, np.abs(a))


def test_named_vectors_scalars_and_in_place_stores_read_every_lane_first():
    """`v = A[idx]` names two lanes; a scalar meets a vector in every lane; a store that overlaps its own
    operand reads both lanes before it writes either, as one vector store."""

    @T.prim_func
    def shifted(A: T.Tensor((9,), "float32"), B: T.Tensor((8,), "float32"), s: T.float32):
        with T.Kernel(1, threads=1):
            idx = T.Ramp(0, 1, 2)
            v = A[idx]
            w = T.mul2(v, v)
            B[T.Ramp(2, 3, 2)] = T.add2(w, T.Broadcast(s, 2)) + 1.0
            A[T.Ramp(1, 1, 2)] = A[idx]  # A[1], A[2] = A[0], A[1]

    a = np.random.default_rng(1).standard_normal(9).astype(np.float32)
    b = np.full(8, np.nan, np.float32)
    original = a.copy()
    tilecraft.compile(shifted, target="c")(a, b, np.float32(0.5))
    want = (original[:2].astype(np.float64) ** 2 + 0.5 + 1.0).astype(np.float32)
    np.testing.assert_array_equal(b[[2, 5]], want)
    np.testing.assert_array_equal(a, np.concatenate([original[:1], original[:2], original[3:]]))


def test_mixed_dtypes_and_scalars_are_refused_as_tilelang_refuses_them():
    x = T.Ramp(0, 1, 2)  # int32x2
    with pytest.raises(ValueError, match="expected dtype in"):
        T.add2(x, x)
    with pytest.raises(ValueError, match="same dtype"):

        @T.prim_func
        def mixed(A: T.Tensor((4,), "float16"), B: T.Tensor((4,), "bfloat16")):
            with T.Kernel(1, threads=1):
                idx = T.Ramp(0, 1, 2)
                A[idx] = T.fma2(A[idx], B[idx], A[idx])


def test_a_vector_used_as_a_scalar_is_refused_at_its_line():
    with pytest.raises(ParseError, match="vector index"):

        @T.prim_func
        def one_element(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                B[0] = A[T.Ramp(0, 1, 2)]

    @T.prim_func
    def condition(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            B[0] = T.if_then_else(A[T.Ramp(0, 1, 2)] > 0, 1.0, 2.0)

    with pytest.raises(SemanticError, match="boolx2 vector value is used where only scalars") as err:
        tilecraft.lower(condition, target="c")
    assert "test_packed_x2.py" in str(err.value)

    @T.prim_func
    def vector_buffer(A: T.Tensor((4,), "float32x2")):
        with T.Kernel(1, threads=1):
            A[0] = A[1]

    with pytest.raises(SemanticError, match="buffers of vector dtypes are not supported"):
        tilecraft.lower(vector_buffer, target="c")


def test_cuda_source_compiles(tmp_path):
    source = assert_nvcc_compiles(_fma("bfloat16"), tmp_path)
    assert "tc_fma_odd(" in source
    assert "fmaf(" in assert_nvcc_compiles(_fma("float32"), tmp_path)
    assert_nvcc_compiles(_binary(T.max2, "float16"), tmp_path)


def test_targets_without_a_single_rounding_fma_refuse_fma2_at_its_line():
    with pytest.raises(LoweringError, match="WGSL's fma may round") as err:
        tilecraft.lower(_fma("float32"), target=WEBGPU)
    assert "T.fma2(A[idx], B[idx], C[idx])" in str(err.value)
    with pytest.raises(LoweringError, match="Metal lacks"):
        tilecraft.lower(_fma("float16"), target="metal -family=apple8")
    assert "fma(" in tilecraft.lower(_fma("float32"), target="metal -family=apple8").source("metal-source")
