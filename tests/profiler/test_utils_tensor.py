"""`tilecraft.utils.tensor` holds the names TileLang programs import from `tilelang.utils.tensor`."""

from __future__ import annotations

import numpy as np

from tests.profiler.kernels import scaled_add
from tilecraft import profiler, testing
from tilecraft.utils import tensor


def test_the_names_are_the_profilers_and_the_testing_helpers():
    assert tensor.TensorSupplyType is profiler.TensorSupplyType
    assert tensor.get_tensor_supply is profiler.get_tensor_supply
    assert tensor.torch_assert_close is testing.torch_assert_close


def test_get_tensor_supply_fills_a_kernels_parameter():
    supply = tensor.get_tensor_supply(tensor.TensorSupplyType.One, library="numpy")
    np.testing.assert_array_equal(supply(scaled_add(128).params[1]), np.ones(128, np.float32))
