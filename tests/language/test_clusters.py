"""`T.Kernel(..., cluster_dims=...)` and `T.ClusterKernel`: the launch annotation and its checks."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tilecraft.errors import KernelError
from tilecraft.ir import stmt as S


def _launch(grid, cluster_dims, spelling="Kernel") -> S.KernelLaunch:
    def launch():
        if spelling == "ClusterKernel":
            return T.ClusterKernel(*grid, cluster_dims=cluster_dims, threads=32)
        return T.Kernel(*grid, threads=32, cluster_dims=cluster_dims)

    if len(grid) == 1:

        @T.prim_func
        def f(A: T.Tensor((64, 64), "float32")):
            with launch() as bx:
                A[bx, 0] = 1.0

        return f.body

    @T.prim_func
    def g(A: T.Tensor((64, 64), "float32")):
        with launch() as (bx, by):
            A[bx, by] = 1.0

    return g.body


@pytest.mark.parametrize(("given", "dims"), [(2, (2, 1, 1)), ((1, 2), (1, 2, 1)), ([2, 2, 1], (2, 2, 1)),
                                             ((4, 1, 1), (4, 1, 1))])  # fmt: skip
def test_cluster_dims_are_recorded_as_three_ints(given, dims):
    assert S.annotation(_launch((8, 4), given).annotations, S.CLUSTER_DIMS) == dims


def test_a_cluster_of_one_block_is_no_cluster():
    assert S.annotation(_launch((8, 4), (1, 1, 1)).annotations, S.CLUSTER_DIMS) is None
    assert S.annotation(_launch((8, 4), None).annotations, S.CLUSTER_DIMS) is None


def test_cluster_kernel_is_the_same_launch():
    assert S.annotation(_launch((8, 4), (2, 1, 1), "ClusterKernel").annotations, S.CLUSTER_DIMS) == (2, 1, 1)


@pytest.mark.parametrize(("grid", "given", "match"), [
    ((8, 4), 0, "positive int or up to three"),
    ((8, 4), (2, 1, 1, 1), "positive int or up to three"),
    ((8, 4), 2.0, "positive int or up to three"),
    ((8, 4), True, "positive int or up to three"),
    ((8, 8), (4, 4), "holds 16 blocks; a cluster holds at most 8"),
    ((8,), (1, 2), "clusters grid dim y, which the grid"),
    ((9, 4), 2, "grid dim x is 9, not a multiple of cluster_dims x = 2"),
])  # fmt: skip
def test_bad_cluster_dims_are_located_errors(grid, given, match):
    with pytest.raises(KernelError, match=match) as info:
        _launch(grid, given)
    assert "test_clusters.py" in str(info.value)
