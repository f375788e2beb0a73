"""`T.alloc_global`: a global scratch buffer each call allocates, shared by the function's kernels."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ParseError
from tilecraft.ir.function import WORKSPACE_ATTR


def split_sum(n: int, splits: int, block: int = 32):
    """Row sums of A (rows x n) in two kernels: partial sums per split into a workspace, then their sum."""
    rows = T.dynamic("rows")
    chunk = (n + splits - 1) // splits

    @T.prim_func
    def row_sum(A: T.Tensor((rows, n), T.float32), Out: T.Tensor((rows,), T.float32)):
        partial = T.alloc_global((rows, splits), T.float32)
        with T.Kernel(rows, splits, threads=block) as (r, s):
            acc = T.alloc_var(T.float32, 0.0)
            for k in T.serial(chunk):
                if s * chunk + k < n:
                    acc += A[r, s * chunk + k]
            partial[r, s] = acc
        with T.Kernel(rows, threads=block) as r:
            total = T.alloc_var(T.float32, 0.0)
            for s in T.serial(splits):
                total += partial[r, s]
            Out[r] = total

    return row_sum


def test_workspace_is_a_hidden_last_parameter():
    func = split_sum(45, 3)
    assert [p.name for p in func.params] == ["A", "Out", "partial"]
    assert func.attr(WORKSPACE_ATTR) == (2,)


@pytest.mark.parametrize("rows, n, splits", [(7, 45, 3), (13, 100, 4)])
def test_kernels_pass_data_through_the_workspace_on_the_cpu(rows, n, splits):
    kernel = tilecraft.compile(split_sum(n, splits), out_idx=[-1], target="c")
    assert [p.name for p in kernel.params] == ["A", "Out"]
    a = np.random.default_rng(rows).standard_normal((rows, n)).astype(np.float32)
    out = kernel(a)
    np.testing.assert_allclose(out, a.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)
    a2 = np.random.default_rng(rows + 1).standard_normal((rows + 2, n)).astype(np.float32)
    np.testing.assert_allclose(kernel(a2), a2.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_all_parameters_passed_explicitly_exclude_the_workspace():
    kernel = tilecraft.compile(split_sum(33, 2), target="c")
    a = np.random.default_rng(5).standard_normal((5, 33)).astype(np.float32)
    out = np.zeros(5, np.float32)
    assert kernel(a, out) is None
    np.testing.assert_allclose(out, a.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_cuda_source_takes_the_workspace_as_a_kernel_parameter():
    artifact = tilecraft.lower(split_sum(45, 3), target="cuda -arch=sm_90a", execution_backend="nvrtc")
    assert artifact.params[-1].workspace and artifact.params[-1].name == "partial"
    assert not artifact.params[0].workspace
    source = artifact.source("cuda-source")
    assert source.count("partial") >= 2


def test_alloc_global_inside_a_kernel_is_a_located_error():
    with pytest.raises(ParseError, match=r"T.alloc_global is only valid outside `with T.Kernel") as info:

        @T.prim_func
        def bad(A: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=32):
                w = T.alloc_global((4,), T.float32)
                w[0] = A[0]

    assert "test_alloc_global.py" in str(info.value)
