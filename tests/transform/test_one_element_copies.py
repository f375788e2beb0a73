"""A T.copy between a one-element fragment and a one-element region of global memory (fuzz-found:
SIMT lowering said 'extents differ', since neither side has a non-unit dim to loop over)."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.transform.helpers import OPENCL, assert_nvcc_compiles


def _one_element():
    @T.prim_func
    def one_element(
        A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32"), C: T.Tensor((8, 1), "float32")
    ):
        with T.Kernel(8, threads=32) as bx:
            f = T.alloc_fragment((1,), "float32")
            g = T.alloc_fragment((1,), "float32")
            T.copy(A[bx : bx + 1], f)
            f[0] = f[0] * 2.0
            T.copy(f, B[bx : bx + 1])
            T.copy(f, g)
            T.copy(g, C[bx, 0:1])

    return one_element


@pytest.mark.parametrize("target", ["c", OPENCL])
def test_one_element_copies_run(target):
    from tilecraft.backend import create_backend_context

    ctx = create_backend_context(target)
    backend = ctx.execution_backend()
    a = np.random.default_rng(2).standard_normal(8).astype(np.float32)
    arrays = [a, np.full(8, np.nan, np.float32), np.full((8, 1), np.nan, np.float32)]
    device = [backend.to_device(x) for x in arrays]
    tilecraft.compile(_one_element(), ctx=ctx)(*device)
    np.testing.assert_allclose(backend.to_host(device[1]), 2 * a.astype(np.float64), rtol=1e-6)
    np.testing.assert_allclose(backend.to_host(device[2])[:, 0], 2 * a.astype(np.float64), rtol=1e-6)


def test_one_element_copies_compile_for_cuda(tmp_path):
    assert_nvcc_compiles(_one_element(), tmp_path)
