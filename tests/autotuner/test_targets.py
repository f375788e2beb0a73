"""The autotuner works on every target: one small tuning per available (target, execution backend).

Parametrized from the registry (tests/conformance/targets.py): the C target always runs here, OpenCL
where PoCL or another platform is installed, CUDA on a GPU machine; unavailable ones skip with the reason.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft.language as T
from tests.conformance.targets import declared_cases, resolve
from tilecraft.autotuner import AutoTuner, TunedKernel
from tilecraft.autotuner.result import OK

N = 512


def factory(block=64):
    @T.prim_func
    def axpy(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * 3 + B[bx * block + i]

    return axpy


@pytest.mark.parametrize("case", declared_cases(), ids=lambda c: c.id)
def test_tuning_on_every_target(case):
    ctx = resolve(case)
    result = (
        AutoTuner.from_kernel(factory, [dict(block=32), dict(block=128)])
        .set_compile_args(out_idx=[-1], target=ctx.target, execution_backend=ctx.execution.name)
        .set_profile_args(ref_prog=lambda a, b: a * 3 + b)
        .run(warmup=1, rep=3, workers=1, retune=True)
    )
    assert [c.status for c in result.candidates] == [OK, OK]
    kernel = result.kernel
    assert isinstance(kernel, TunedKernel) and kernel.context.target == ctx.target
    a = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    b = np.random.default_rng(4).standard_normal(N).astype(np.float32)
    out = kernel.to_host(kernel(kernel.to_device(a), kernel.to_device(b)))
    np.testing.assert_allclose(out, a * 3 + b, rtol=1e-5, atol=1e-6)  # fused multiply-add rounds once
