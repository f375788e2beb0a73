"""`as_array_arg`: what it reads from each kind of array, and the arrays it refuses (by parameter name)."""

from __future__ import annotations

import numpy as np
import pytest

from tilecraft.errors import ArgumentError
from tilecraft.ir import dtype as dt
from tilecraft.runtime.arrays import as_array_arg, from_array_interface


class Interface:
    def __init__(self, array: np.ndarray, read_only: bool = False, typestr: str | None = None) -> None:
        info = dict(array.__array_interface__)
        info["data"] = (array.ctypes.data, read_only)
        if typestr is not None:
            info["typestr"] = typestr
        self.array = array
        self.__array_interface__ = info


def test_writability_is_read_from_every_kind_of_host_array(tmp_path):
    x = np.zeros(4, np.float32)
    assert as_array_arg(x, "x").writable
    x.flags.writeable = False
    assert not as_array_arg(x, "x").writable
    assert not as_array_arg(np.frombuffer(b"\0" * 16, np.float32), "x").writable
    np.zeros(4, np.float32).tofile(tmp_path / "m")
    assert not as_array_arg(np.memmap(tmp_path / "m", np.float32, mode="r"), "x").writable
    assert as_array_arg(np.memmap(tmp_path / "m", np.float32, mode="r+"), "x").writable
    assert not as_array_arg(Interface(np.zeros(4, np.float32), read_only=True), "x").writable
    assert as_array_arg(Interface(np.zeros(4, np.float32)), "x").writable


def test_dlpack_keeps_the_read_only_flag():
    class Capsule:  # a DLPack producer that is not a numpy array
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    frozen = np.zeros(4, np.float32)
    frozen.flags.writeable = False
    assert not as_array_arg(Capsule(frozen), "x").writable
    assert as_array_arg(Capsule(np.zeros(4, np.float32)), "x").writable


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint32", "int64", "float16"])
def test_byte_swapped_arrays_are_refused_by_name(dtype):
    swapped = np.zeros(4, np.dtype(dtype).newbyteorder("S"))
    for value in (swapped, Interface(swapped)):
        with pytest.raises(ArgumentError) as info:
            as_array_arg(value, "weights")
        message = str(info.value)
        assert "parameter 'weights'" in message and "non-native" in message
        assert "x.astype(x.dtype.newbyteorder('='))" in message
    assert as_array_arg(swapped.astype(swapped.dtype.newbyteorder("=")), "weights").dtype == dt.as_dtype(
        dtype
    )


def test_one_byte_dtypes_have_no_byte_order():
    assert as_array_arg(np.zeros(4, ">i1"), "x").dtype == dt.int8


def test_a_reader_refusing_a_byte_swapped_interface_names_the_parameter():
    """Execution backends read their device's arrays through from_array_interface, without the name."""

    def reader(x):
        return from_array_interface(x, x.__array_interface__, 1, 0)

    typestr = np.dtype(np.float32).newbyteorder("S").str
    with pytest.raises(
        ArgumentError, match=rf"parameter 'A': its dtype '{typestr}' stores bytes in non-native"
    ):
        as_array_arg(Interface(np.zeros(4, np.float32), typestr=typestr), "A", (reader,))


def test_an_unsupported_dtype_names_the_parameter():
    with pytest.raises(ArgumentError, match=r"parameter 'A': arrays of dtype complex64 are not supported"):
        as_array_arg(np.zeros(4, np.complex64), "A")
