"""`tilecraft.par_compile(funcs)` and `JITFunction.par_compile(configs)`: kernels compiled in threads, in
the configs' order, each right when called; a failing config raises, or with ignore_error is None and a
warning."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T


@tilecraft.jit(out_idx=[1], target="c")
def scaled(n: int, factor: float, block: int = 16):
    @T.prim_func
    def kernel(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    B[bx * block + i] = A[bx * block + i] * factor

    return kernel


def test_a_jit_functions_configs_compile_in_order():
    configs = [{"n": 37, "factor": 2.0}, (45, 3.0), {"n": 9, "factor": -1.0, "block": 8}]
    kernels = scaled.par_compile(configs, num_workers=2)
    rng = np.random.default_rng(2)
    for kernel, (n, factor) in zip(kernels, [(37, 2.0), (45, 3.0), (9, -1.0)], strict=True):
        a = rng.standard_normal(n).astype(np.float32)
        np.testing.assert_allclose(kernel(a), a.astype(np.float64) * factor, rtol=1e-6)


def test_prim_funcs_compile_together_and_a_failure_is_none_with_ignore_error():
    good = scaled.get_tir(n=20, factor=4.0)
    bad = "not a kernel"  # what tilecraft.compile refuses
    with pytest.warns(RuntimeWarning, match="configuration 1 failed to compile"):
        first, failed = tilecraft.par_compile([good, bad], out_idx=[1], target="c", ignore_error=True)
    assert failed is None
    a = np.arange(20, dtype=np.float32)
    np.testing.assert_allclose(first(a), a * 4.0)
    with pytest.raises(tilecraft.errors.TilecraftError):
        tilecraft.par_compile([good, bad], out_idx=[1], target="c")
