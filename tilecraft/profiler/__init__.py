"""Timing and checking kernels (TileLang's `tilelang.profiler`).

profiler = kernel.get_profiler(tensor_supply_type=tilecraft.TensorSupplyType.Normal)
profiler.assert_allclose(reference_program, atol=1e-2, rtol=1e-2)
latency_ms = profiler.do_bench()

from tilecraft.profiler import do_bench
latency_ms = do_bench(lambda: kernel(a, b))
"""

from __future__ import annotations

from tilecraft.profiler.bench import BenchTimeout, device_timer, do_bench
from tilecraft.profiler.profiler import Profiler
from tilecraft.profiler.supply import TensorSupplyType


def get_tensor_supply(supply_type: TensorSupplyType = TensorSupplyType.Integer, library: str | None = None):
    """TileLang's `get_tensor_supply`: a function `param -> array` filling a kernel parameter (a ParamInfo
    with a static shape) on the host as `supply_type` says."""
    import numpy as np

    from tilecraft.profiler.supply import (
        as_supply_type,
        check_library,
        concrete_shape,
        supply_numpy,
        torch_from_numpy,
    )

    kind = as_supply_type(supply_type)
    chosen = check_library(library)
    rng = np.random.default_rng()

    def supply(param):
        array = supply_numpy(param.dtype, concrete_shape(param.name, param.shape, {}, ()), kind, rng)
        return torch_from_numpy(array) if chosen == "torch" else array

    return supply


__all__ = ["BenchTimeout", "Profiler", "TensorSupplyType", "device_timer", "do_bench", "get_tensor_supply"]
