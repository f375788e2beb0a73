"""The profiler on every available (target, execution backend): inputs placed where the kernel runs, the
check against a reference, and timing with the backend's device timer (parametrized from the registry;
CUDA runs on a GPU machine, with torch tensors timed by CUDA events)."""

from __future__ import annotations

import importlib.util

import pytest

import tilecraft
import tilecraft.language as T
from tests.conformance.targets import declared_cases, resolve
from tilecraft.profiler import TensorSupplyType

N = 1024
LIBRARIES = ["numpy"] + (["torch"] if importlib.util.find_spec("torch") else [])


def axpy():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                C[bx * 128 + i] = A[bx * 128 + i] * 3 + B[bx * 128 + i]

    return main


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("case", declared_cases(), ids=lambda c: c.id)
def test_profiler_on_every_target(case, library):
    ctx = resolve(case)
    kernel = tilecraft.compile(axpy(), out_idx=[-1], ctx=ctx)
    profiler = kernel.get_profiler(TensorSupplyType.Randn, library=library)
    profiler.assert_allclose(lambda a, b: a * 3 + b, atol=1e-5, rtol=1e-5)
    assert profiler.do_bench(warmup=5, rep=20) > 0.0
    assert profiler.do_bench(n_warmup=2, n_repeat=5, quantiles=[0.5, 0.9])[0] > 0.0
