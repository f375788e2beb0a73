"""The opencl launcher copies back exactly the buffers the kernel writes, and refuses read-only ones.

`Kernel` refuses a read-only array for a written parameter before any launcher runs (see
test_argument_attacks.py); these tests call the launcher directly, as a caller that skips `Kernel`
would, and check its own guard.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ArgumentError
from tilecraft.execution.opencl.memory import _regions, host_region
from tilecraft.runtime.arrays import as_array_arg


def frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def test_a_written_region_must_be_writable():
    ro = as_array_arg(frozen(np.zeros(8, np.float32)), "Y")
    with pytest.raises(ArgumentError, match=r"parameter 'Y' is read-only memory, but the kernel writes it"):
        host_region(ro, "Y", written=True)
    assert not host_region(ro, "Y", written=False).written


def test_one_array_for_a_read_and_a_written_parameter_is_copied_back():
    x = np.zeros(8, np.float32)
    arg = as_array_arg(x, "X")
    regions, keys = _regions([arg, arg], [(0, "X", False), (1, "Y", True)])
    assert keys[0] == keys[1] and regions[keys[0]].written
    regions, _ = _regions([arg], [(0, "X", False)])
    assert not next(iter(regions.values())).written


def test_the_launcher_refuses_a_read_only_output():
    from tilecraft.execution.opencl.spec import OPENCL

    status = OPENCL.check()
    if not status.ok:
        pytest.skip(f"no OpenCL device: {status.reason}")

    @T.prim_func
    def double(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(128):
                Y[i] = X[i] * 2.0

    kernel = tilecraft.compile(double, target="opencl")
    launch = kernel.context.execution_backend().launcher(kernel.loaded)
    x = frozen(np.arange(128, dtype=np.float32))  # a read-only input is fine
    y = np.zeros(128, np.float32)
    launch([as_array_arg(x, "X"), as_array_arg(y, "Y")], [])
    np.testing.assert_array_equal(y, x * 2)
    with pytest.raises(ArgumentError, match=r"parameter 'Y' is read-only memory"):
        launch([as_array_arg(x, "X"), as_array_arg(frozen(np.zeros(128, np.float32)), "Y")], [])
