"""T.device_assert: a check made where the kernel runs. On the CPU a false one raises KernelCheckError
with its message and line once the kernel returns; targets whose code generators have no way to stop a
kernel refuse it at lowering, at its line (CUDA's trap is compiled in tests/cuda/test_codegen_nvcc.py)."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import LoweringError
from tilecraft.execution.cc.backend import KernelCheckError


@T.prim_func
def doubled_counts(A: T.Tensor((64,), "int32"), B: T.Tensor((64,), "int32")):
    with T.Kernel(2, threads=32) as bx:
        for i in T.Parallel(32):
            T.device_assert(A[bx * 32 + i] >= 0, "a negative count")
            B[bx * 32 + i] = A[bx * 32 + i] * 2


def test_a_true_check_lets_the_kernel_run_and_a_false_one_raises_with_its_line():
    kernel = tilecraft.compile(doubled_counts, target="c")
    a = np.random.default_rng(0).integers(0, 100, 64, dtype=np.int32)
    b = np.full(64, -7, np.int32)
    kernel(a, b)
    assert np.array_equal(b, 2 * a)
    a[40] = -1
    with pytest.raises(KernelCheckError, match=r"a negative count at .*test_device_assert.py:\d+:\d+"):
        kernel(a, b)


def test_targets_without_a_check_refuse_it_at_its_line():
    with pytest.raises(LoweringError, match="T.device_assert is not supported on the OpenCL target") as err:
        tilecraft.lower(doubled_counts, target="opencl")
    assert 'T.device_assert(A[bx * 32 + i] >= 0, "a negative count")' in str(err.value)  # the source line
