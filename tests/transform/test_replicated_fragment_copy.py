"""A T.copy between fragments fills every copy of a replicated destination: the copy runs over the
destination's layout and reads the source where it lies (through shared memory when another thread
holds it). It once ran over the source's layout, leaving the replicas' registers unwritten (the A
operand of a gemm whose warps split the columns: tests/transform/test_register_operand_a.py)."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.transform.helpers import OPENCL, assert_nvcc_compiles


def _into_replicated(n: int = 64):
    @T.prim_func
    def into_replicated(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n):
            f = T.alloc_fragment((n,), "float32")
            g = T.alloc_fragment((n,), "float32")
            # f: element i in thread i; g: element i in threads i % 32 and i % 32 + 32, register i // 32
            T.annotate_layout(
                {
                    f: T.Fragment((n,), forward_thread_fn=lambda i: i, forward_index_fn=lambda i: 0),
                    g: T.Fragment(
                        (n,),
                        forward_thread_fn=lambda i, rep: i % 32 + 32 * rep,
                        forward_index_fn=lambda i: i // 32,
                        replicate=2,
                    ),
                }  # fmt: skip
            )
            T.copy(A, f)
            for i in T.Parallel(n):
                f[i] = f[i] * 2.0
            T.copy(f, g)
            T.copy(g, B)

    return into_replicated


@pytest.mark.parametrize("target", ["c", OPENCL])
def test_every_replica_of_the_destination_is_written(target):
    from tilecraft.backend import create_backend_context

    ctx = create_backend_context(target)
    backend = ctx.execution_backend()
    a = np.random.default_rng(11).standard_normal(64).astype(np.float32)
    da, db = backend.to_device(a), backend.to_device(np.full(64, np.nan, np.float32))
    tilecraft.compile(_into_replicated(), ctx=ctx)(da, db)
    np.testing.assert_allclose(backend.to_host(db), 2 * a.astype(np.float64), rtol=1e-6)


def test_the_replicated_copy_compiles_for_cuda(tmp_path):
    assert_nvcc_compiles(_into_replicated(), tmp_path)
