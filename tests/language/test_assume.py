"""T.assume(cond): on the CPU target a false assumption fails the call (KernelCheckError, a RuntimeError)
with "Assume: <cond as written>" and the kernel line, a true one changes nothing; CUDA checks it (a trap)
and tells nvcc (`__builtin_assume`); targets without run-time checks accept it and do not rely on it."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ParseError
from tilecraft.execution.cc.backend import KernelCheckError


def divisible():
    N = T.dynamic("N")

    @T.prim_func
    def kernel(A: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            T.assume(N % 4 == 0)
            tx = T.get_thread_binding()
            if tx < N:
                A[tx] = A[tx] + 1.0

    return kernel


def window():
    """Per-iteration assumptions on a window [lo, hi] of A, as TileLang's tests write them."""
    N = T.dynamic("N")

    @T.prim_func
    def kernel(A: T.Tensor((N,), "float32"), lo: T.int32, hi: T.int32):
        with T.Kernel(1, threads=32):
            x = T.alloc_var(T.int32)
            for i in T.serial(hi - lo + 1):
                x = lo + i
                T.assume(x >= 0 and x < N)
                A[x] = -A[x]

    return kernel


def test_a_true_assumption_changes_nothing():
    a = np.random.default_rng(1).standard_normal(12).astype(np.float32)
    want = a + 1
    tilecraft.compile(divisible(), target="c")(a)
    np.testing.assert_array_equal(a, want)


def test_a_false_assumption_fails_the_call_with_its_text_and_line():
    kernel = tilecraft.compile(divisible(), target="c")
    a = np.zeros(6, np.float32)
    with pytest.raises(RuntimeError, match=r"Assume: N % 4 == 0 at .*test_assume.py:\d+") as info:
        kernel(a)
    assert isinstance(info.value, KernelCheckError)


def test_assumptions_inside_loops_are_checked_per_iteration():
    kernel = tilecraft.compile(window(), target="c")
    a = np.random.default_rng(2).standard_normal(10).astype(np.float32)
    want = a.copy()
    want[3:8] *= -1
    kernel(a, 3, 7)
    np.testing.assert_array_equal(a, want)
    before = a.copy()
    with pytest.raises(KernelCheckError, match="Assume: x >= 0 and x < N"):
        kernel(a, 8, 10)  # x = 10 is past the end: the block stops there, before the store
    np.testing.assert_array_equal(a[8:], -before[8:])
    np.testing.assert_array_equal(a[:8], before[:8])


def test_cuda_checks_then_tells_nvcc(tmp_path):
    from tests.transform.helpers import assert_nvcc_compiles

    source = assert_nvcc_compiles(divisible(), tmp_path)
    assert "Assume: N %% 4 == 0" in source and "__trap()" in source  # printf's %% for %
    check, hint = source.index("Assume: N %% 4 == 0"), source.index("__builtin_assume(")
    assert check < hint  # told only after the check


@pytest.mark.parametrize("target", ["opencl", "webgpu"])
def test_targets_without_run_time_checks_accept_it(target):
    from tests.transform.helpers import OPENCL, WEBGPU

    spelled, fmt, backend = {"opencl": (OPENCL, "opencl-source", "opencl"),
                             "webgpu": (WEBGPU, "wgsl-source", "wgpu")}[target]  # fmt: skip
    source = tilecraft.lower(divisible(), target=spelled, execution_backend=backend).source(fmt)
    assert "Assume" not in source and "assume" not in source


def test_a_vector_condition_is_refused():
    def make():
        @T.prim_func
        def kernel(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                T.assume(A[T.Ramp(0, 1, 2)] > 0)  # <- error

        return kernel

    with pytest.raises(ParseError, match="T.assume needs a scalar condition"):
        make()
