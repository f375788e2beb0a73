"""Dtypes are strings, as TileLang's are, and keep tilecraft's typed checks."""

# No `from __future__ import annotations`: the kernels below need their annotations evaluated where they
# are written, as most user code has them.

import copy
import json
import pickle

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.ir.dtype import ALL_DTYPES, DataType, as_dtype


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_a_dtype_is_its_name(dtype):
    assert isinstance(dtype, str)
    assert dtype == dtype.name and dtype.name == dtype
    assert hash(dtype) == hash(dtype.name)
    assert type(str(dtype)) is str and str(dtype) == dtype.name
    assert f"{dtype}" == dtype.name and f"{dtype:>20}" == f"{dtype.name:>20}"
    assert json.loads(json.dumps({"dtype": dtype})) == {"dtype": dtype.name}


def test_strings_and_dtypes_are_interchangeable_keys():
    by_dtype = {T.float16: "half", T.int8: "byte"}
    assert by_dtype["float16"] == "half"
    by_name = {"bfloat16": 2}
    assert by_name[T.bfloat16] == 2
    assert T.float32 in ("float16", "float32") and T.float32 in {"float32"}
    assert T.float16 != "float32" and T.float16 != T.bfloat16


def test_str_operations_see_the_name():
    dt = T.float8_e4m3fn
    assert "float8" in dt and dt.startswith("float") and dt[:6] == "float8"
    assert "".join(dt) == "float8_e4m3fn" and dt.split("_") == ["float8", "e4m3fn"]
    assert dt.replace("float8", "f8") == "f8_e4m3fn"


def test_typed_checks_are_kept():
    assert T.float16.bits == 16 and T.float16.is_float and not T.float16.is_integer
    assert T.uint8.is_uint and T.bool.is_bool and T.bfloat16.kind == "bfloat"
    vector = T.float32.with_lanes(4)
    assert vector == "float32x4" and vector.lanes == 4 and vector.bytes == 16
    assert vector.element() is T.float32 and as_dtype("float32x4") == vector
    with pytest.raises(AttributeError, match="immutable"):
        T.float16.bits = 8


def test_t_dtype_constructs_from_what_as_dtype_accepts():
    assert T.dtype is DataType
    assert T.dtype("float16") is T.float16
    assert T.dtype("half") is T.float16
    assert T.dtype(T.int32) is T.int32
    assert T.dtype(np.float32) is T.float32 and T.dtype(np.dtype("int8")) is T.int8
    assert T.dtype("float16x2").lanes == 2
    with pytest.raises(ValueError, match="unknown dtype 'floaty'.*valid dtypes: bool"):
        T.dtype("floaty")


def test_numpy_takes_a_dtype_as_its_name():
    assert np.zeros(2, dtype=T.float32).dtype == np.float32
    assert T.bfloat16.as_numpy().name == "bfloat16"


def test_pickle_and_copy_keep_the_dtype():
    for dtype in (T.float16, T.int32.with_lanes(4)):
        again = pickle.loads(pickle.dumps(dtype))
        assert again == dtype and type(again) is DataType and again.lanes == dtype.lanes
        assert copy.copy(dtype) is dtype and copy.deepcopy(dtype) is dtype


def test_torch_takes_a_dtype_as_its_name():
    torch = pytest.importorskip("torch")
    assert getattr(torch, T.bfloat16) is torch.bfloat16
    assert T.float16.as_torch() is torch.float16
    assert T.dtype(torch.float16) is T.float16 and T.dtype(torch.int64) is T.int64
    with pytest.raises(TypeError, match="no torch equivalent"):
        T.float32.with_lanes(4).as_torch()


@tilecraft.jit(out_idx=[1], target="c")
def converted(n, dtype: T.dtype = T.float16, accum_dtype: T.dtype = "float32"):
    assert isinstance(dtype, str) and dtype in ("float16", "bfloat16", "float32")

    @T.prim_func
    def convert(A: T.Tensor((n,), dtype), B: T.Tensor((n,), accum_dtype)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(n):
                B[i] = T.Cast(accum_dtype, A[i]) * 2.0

    return convert


def test_a_kernel_factory_annotated_with_t_dtype():
    a = np.random.default_rng(0).standard_normal(64).astype(np.float16)
    np.testing.assert_allclose(converted(64)(a), a.astype(np.float32) * 2, rtol=1e-6)
    np.testing.assert_allclose(converted(64, T.dtype("float32"))(a.astype(np.float32)), a * 2.0, rtol=1e-3)


@tilecraft.jit(target="c")
def scaled(A, B, factor, dtype: T.dtype = T.float32):
    n = T.const("n")
    A: T.Tensor((n,), dtype)
    B: T.Tensor((n,), dtype)
    with T.Kernel(1, threads=32):
        for i in T.Parallel(n):
            B[i] = A[i] * factor


def test_an_eager_kernel_with_a_dtype_parameter():
    a = np.arange(8, dtype=np.float32)
    b = np.empty_like(a)
    scaled(a, b, 3.0)
    np.testing.assert_array_equal(b, a * 3)


def make_scalar_kernel():
    scalar_type = T.float32  # a name only the annotation sees: the kernel's code cannot look it up

    @T.prim_func
    def add_scalar(A: T.Tensor((16,), "float32"), x: scalar_type):
        with T.Kernel(1, threads=16):
            for i in T.Parallel(16):
                A[i] = A[i] + x

    return add_scalar


def test_a_scalar_parameter_annotated_with_a_dtype_value():
    kernel = tilecraft.compile(make_scalar_kernel(), target="c")
    a = np.ones(16, np.float32)
    kernel(a, 2.5)
    np.testing.assert_array_equal(a, np.full(16, 3.5, np.float32))


@pytest.mark.parametrize(
    "name", ["float32x2", "float16x4", "bfloat16x2", "int8x4", "uint32x64", "float8_e4m3fnx8"]
)
def test_vector_dtype_names_are_tilelangs(name):
    """TileLang's tests name vector dtypes at import (`T.float32x2` in a parametrize list)."""
    dtype = getattr(T, name)
    assert dtype == name and isinstance(dtype, T.dtype)
    base, lanes = name.rsplit("x", 1)
    assert dtype.lanes == int(lanes) and dtype.with_lanes(1) == base


@tilecraft.jit(out_idx=[1], target="c")
def lane_scaled(n, vector: T.dtype):
    scalar = vector.with_lanes(1)  # a kernel factory choosing its element type from a vector dtype

    @T.prim_func
    def scale(A: T.Tensor((n,), scalar), B: T.Tensor((n,), scalar)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(n):
                B[i] = A[i] * vector.lanes + 1.0

    return scale


@pytest.mark.parametrize("vector", [T.float32x2, T.float64x4], ids=str)
def test_a_kernel_typed_from_a_vector_dtype(vector):
    a = np.random.default_rng(1).uniform(-3, 3, 64).astype(vector.with_lanes(1).name)
    expected = a.astype(np.float64) * vector.lanes + 1.0
    np.testing.assert_allclose(lane_scaled(64, vector)(a), expected, rtol=1e-6)
