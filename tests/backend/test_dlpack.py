"""DLPack: any `__dlpack__` producer is read in place (pointer, shape, strides, dtype, device,
read-only flag), refused by name when it cannot be read, and a kernel's outputs come back as the
caller's array type."""

from __future__ import annotations

import ctypes
import types

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ArgumentError
from tilecraft.ir import dtype as dt
from tilecraft.runtime import dlpack
from tilecraft.runtime.arrays import as_array_arg


class OnlyDLPack:
    """A producer that is nothing but DLPack (as a JAX or CuPy array is, to a reader without them)."""

    def __init__(self, array, legacy: bool = False) -> None:
        self.array = array
        self.legacy = legacy

    def __dlpack__(self, **kwargs):
        if self.legacy and kwargs:
            raise TypeError("__dlpack__() got an unexpected keyword argument")
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


@pytest.mark.parametrize("legacy", [False, True], ids=["versioned", "legacy"])
def test_a_capsule_is_read_in_place(legacy):
    base = np.arange(60, dtype=np.float32).reshape(5, 12)
    view = base[1:4, ::3]
    arg = as_array_arg(OnlyDLPack(view, legacy), "x")
    assert arg.ptr == view.__array_interface__["data"][0]
    assert arg.shape == (3, 4) and arg.strides == (12, 3)
    assert arg.dtype == dt.float32 and (arg.device_type, arg.device_id) == (1, 0)
    assert arg.library == "dlpack"


@pytest.mark.parametrize("name", ["int8", "uint16", "int32", "uint64", "float16", "float64", "bool"])
def test_dtypes_come_from_the_capsule(name):
    assert as_array_arg(OnlyDLPack(np.zeros(3, name)), "x").dtype == dt.as_dtype(name)


def test_torch_tensors_through_dlpack_keep_their_layout():
    torch = pytest.importorskip("torch")
    t = torch.randn(4, 6).t()
    arg = as_array_arg(OnlyDLPack(t), "x")
    assert arg.ptr == t.data_ptr() and arg.shape == (6, 4) and arg.strides == (1, 6)
    assert as_array_arg(OnlyDLPack(torch.zeros(2, dtype=torch.bfloat16)), "x").dtype == dt.bfloat16


def test_the_read_only_flag_comes_from_a_versioned_capsule():
    frozen = np.zeros(4, np.float32)
    frozen.flags.writeable = False
    assert not as_array_arg(OnlyDLPack(frozen), "x").writable
    assert as_array_arg(OnlyDLPack(np.zeros(4, np.float32)), "x").writable


def test_an_unreadable_capsule_is_refused_by_name():
    class Bad:
        def __dlpack__(self, **kwargs):
            return "not a capsule"

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(ArgumentError, match=r"parameter 'w': .*not an unconsumed DLPack capsule"):
        as_array_arg(Bad(), "w")


class DeviceCapsule:
    """A legacy capsule of GPU memory (device type 2), made by hand: what a CUDA array exports."""

    def __init__(self, address: int, shape: tuple[int, ...]) -> None:
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.managed = dlpack._Legacy()
        t = self.managed.dl_tensor
        t.data, t.ndim, t.shape, t.strides, t.byte_offset = address, len(shape), self.shape, None, 0
        t.device.device_type, t.device.device_id = 2, 1
        t.dtype.code, t.dtype.bits, t.dtype.lanes = 2, 32, 1

    def __dlpack__(self, **kwargs):
        if kwargs:
            raise TypeError("legacy producer")
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.managed), b"dltensor", None)

    def __dlpack_device__(self):
        return (2, 1)


def test_a_device_capsule_is_read_and_the_host_backend_refuses_it(axpy):
    arg = as_array_arg(DeviceCapsule(0x7F0000001000, (4, 5)), "x")
    assert (arg.device_type, arg.device_id, arg.ptr) == (2, 1, 0x7F0000001000)
    assert arg.shape == (4, 5) and arg.strides == (5, 1) and arg.dtype == dt.float32
    x = np.zeros(20, np.float32)
    with pytest.raises(ArgumentError, match=r"parameter 'X' is on DLPack device 2:1, but this kernel runs on "
                                            r"the host"):  # fmt: skip
        axpy(DeviceCapsule(0x7F0000001000, (20,)), x, 1.0)


# ---------------------------------------------------------------------- kernels


def _axpy():
    n = T.dynamic("n")

    @T.prim_func
    def axpy(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), alpha: T.float32,
             Z: T.Tensor((n,), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(n, 32), threads=1) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < n:
                    Z[bx * 32 + i] = X[bx * 32 + i] * alpha + Y[bx * 32 + i]

    return axpy


@pytest.fixture(scope="module")
def axpy():
    return tilecraft.compile(_axpy(), out_idx=[-1], target="c")


class Wrapped(OnlyDLPack):
    """A DLPack producer with an array-API namespace whose from_dlpack makes its own type."""

    def __array_namespace__(self):
        return types.SimpleNamespace(from_dlpack=lambda a: Wrapped(np.from_dlpack(a)))


def test_dlpack_inputs_run_and_outputs_come_back_as_the_callers_type(axpy):
    x, y = np.random.randn(77).astype(np.float32), np.random.randn(77).astype(np.float32)
    z = axpy(Wrapped(x), Wrapped(y), 2.5)
    assert type(z) is Wrapped
    np.testing.assert_allclose(z.array, x.astype(np.float64) * 2.5 + y, rtol=1e-6)


def test_a_dlpack_output_is_written_in_place(axpy):
    x, y = np.random.randn(50).astype(np.float32), np.random.randn(50).astype(np.float32)
    z = np.full(50, np.nan, np.float32)
    assert axpy(OnlyDLPack(x), OnlyDLPack(y), -1.0, OnlyDLPack(z)) is None
    np.testing.assert_allclose(z, -x.astype(np.float64) + y, rtol=1e-6)


def test_outputs_of_a_library_without_from_dlpack_stay_numpy(axpy):
    x = np.random.randn(9).astype(np.float32)
    z = axpy(OnlyDLPack(x), OnlyDLPack(x), 1.0)
    assert type(z) is np.ndarray
    np.testing.assert_allclose(z, 2.0 * x, rtol=1e-6)


def test_a_read_only_dlpack_output_is_refused(axpy):
    x = np.random.randn(9).astype(np.float32)
    frozen = np.zeros(9, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ArgumentError, match="parameter 'Z' is read-only memory"):
        axpy(OnlyDLPack(x), x, 1.0, OnlyDLPack(frozen))


def test_the_callers_type_helper_keeps_arrays_of_the_same_type():
    a = np.zeros(3)
    assert dlpack.as_callers_array(a, np.ones(2)) is a
