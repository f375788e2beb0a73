"""NumPy arrays of ml_dtypes' types reach torch (and come back) through an integer view of their bits:
torch.from_numpy takes only NumPy's own dtypes. Every such type, e8m0 scales included, keeps its bits."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tilecraft.ir.dtype import as_dtype, torch_bit_view
from tilecraft.profiler.supply import to_numpy, torch_from_numpy

ONE_BYTE = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "int4")


@pytest.mark.parametrize("name", ("bfloat16", *ONE_BYTE))
def test_every_ml_dtypes_type_has_a_bit_view(name):
    assert torch_bit_view(as_dtype(name)) == ("int16" if name == "bfloat16" else "uint8")


@pytest.mark.parametrize("name", ("float32", "int8", "uint8", "float16", "bool"))
def test_numpy_s_own_dtypes_need_none(name):
    assert torch_bit_view(as_dtype(name)) is None


@pytest.mark.parametrize("name", ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"))
def test_torch_round_trip_keeps_the_bits(name):
    torch = pytest.importorskip("torch")
    if not hasattr(torch, name):
        pytest.skip(f"this torch has no {name}")
    width = np.uint16 if name == "bfloat16" else np.uint8
    bits = np.random.default_rng(7).integers(0, np.iinfo(width).max, 257, dtype=width)
    array = bits.view(getattr(ml_dtypes, name))
    tensor = torch_from_numpy(array)
    assert tensor.dtype == getattr(torch, name)
    back = to_numpy(tensor, to_host=None)
    assert back.dtype == array.dtype
    assert np.array_equal(back.view(width), bits)
