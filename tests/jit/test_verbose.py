"""`@tilecraft.jit(verbose=True)` prints what TILECRAFT_VERBOSE=1 prints, for that function's compiles only."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft import settings


def scale_factory(n: int):
    @T.prim_func
    def scale(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 64), threads=64) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < n:
                    B[bx * 64 + i] = A[bx * 64 + i] * 3.0

    return scale


@pytest.fixture
def no_cache():
    # A cached artifact is not lowered again, and only lowering prints.
    with settings.override(TILECRAFT_DISABLE_CACHE=True, TILECRAFT_VERBOSE=False):
        yield


@pytest.mark.parametrize("verbose", [True, False])
def test_verbose_prints_the_lowering_of_its_kernels(no_cache, capsys, verbose):
    jitted = tilecraft.jit(target="c", verbose=verbose)(scale_factory)
    kernel = jitted(133)
    printed = capsys.readouterr().out
    assert ("[tilecraft] lowered scale for c" in printed) is verbose
    a = np.random.default_rng(5).standard_normal(133).astype(np.float32)
    b = np.full(133, np.nan, dtype=np.float32)
    kernel(a, b)
    np.testing.assert_allclose(b, a.astype(np.float64) * 3.0, rtol=1e-6)


def test_verbose_does_not_outlast_the_compile(no_cache, capsys):
    tilecraft.jit(target="c", verbose=True)(scale_factory)(70)
    assert "[tilecraft] lowered scale" in capsys.readouterr().out
    assert settings.get("TILECRAFT_VERBOSE") is False
    tilecraft.jit(target="c")(scale_factory)(71)
    assert "[tilecraft] lowered" not in capsys.readouterr().out
