"""cluster-launches (CUDA), Before/Expected: a kernel's cluster shape stays on sm_90a and is dropped on an
older arch, which has no thread-block clusters (the results do not depend on it)."""

from __future__ import annotations

import tilecraft.language as T
from tests.cuda.passes.kernels import SM90A
from tests.transform.helpers import SM80
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


@T.prim_func
def clustered(A: T.Tensor((256,), "float32")):
    with T.Kernel(4, threads=64, cluster_dims=2) as bx:
        tx = T.get_thread_binding(0)
        A[bx * 64 + tx] = 1.0


@T.prim_func
def unclustered(A: T.Tensor((256,), "float32")):
    with T.Kernel(4, threads=64) as bx:
        tx = T.get_thread_binding(0)
        A[bx * 64 + tx] = 1.0


@pass_test("cluster-launches", SM90A)
def test_sm90a_keeps_the_cluster_shape(target):
    """On sm_90a the launch keeps cluster_dims for codegen's __cluster_dims__."""
    assert_pass(target, "cluster-launches", clustered, UNCHANGED)


@pass_test("cluster-launches", SM80)
def test_an_older_arch_launches_the_grid_without_clusters(target):
    """Before sm_90 the cluster annotation is dropped and nothing else changes."""
    assert_pass(target, "cluster-launches", clustered, unclustered)
