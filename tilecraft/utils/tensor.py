"""TileLang's `tilelang.utils.tensor`: the profiler's input supply and the comparison helper, under the
path TileLang programs import them from (`from tilelang.utils.tensor import get_tensor_supply`)."""

from __future__ import annotations

from tilecraft.compat.testing import torch_assert_close
from tilecraft.profiler import TensorSupplyType, get_tensor_supply

__all__ = ["TensorSupplyType", "get_tensor_supply", "torch_assert_close"]
