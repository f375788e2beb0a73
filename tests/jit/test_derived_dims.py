"""Dims computed from other dims (`nchunks = T.ceildiv(seqlen, chunk)`) are bound and checked at the call.

TileLang's mamba examples declare `dt: T.Tensor((batch, nheads, nchunks, chunk_size))` after
`nchunks = T.ceildiv(seqlen, chunk_size)`. The shape means the expression: the call binds `seqlen` and
`chunk_size` from the arrays where they stand alone and checks every derived dim, and a profiler can make
inputs from the compile-time values alone.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ArgumentError


@tilecraft.jit(target="c")
def chunk_sums(x, s, chunk=4):
    n = T.const("n")
    nchunks = T.ceildiv(n, chunk)
    x: T.Tensor((n,), "float32")
    s: T.Tensor((nchunks,), "float32")
    with T.Kernel(nchunks) as bx:
        acc = T.alloc_var("float32")
        acc = 0.0
        for i in T.serial(chunk):
            if bx * chunk + i < n:
                acc += x[bx * chunk + i]
        s[bx] = acc


@tilecraft.jit(target="c")
def chunk_sums_dynamic(x, s):
    n = T.dynamic("n")
    nchunks = T.ceildiv(n, 4)
    x: T.Tensor((n,), "float32")
    s: T.Tensor((nchunks,), "float32")
    with T.Kernel(nchunks) as bx:
        acc = T.alloc_var("float32")
        acc = 0.0
        for i in T.serial(4):
            if bx * 4 + i < n:
                acc += x[bx * 4 + i]
        s[bx] = acc


def _reference(x: np.ndarray, chunk: int) -> np.ndarray:
    return np.add.reduceat(x.astype(np.float64), np.arange(0, x.size, chunk))


@pytest.mark.parametrize("kernel", [chunk_sums, chunk_sums_dynamic], ids=["const", "dynamic"])
@pytest.mark.parametrize("n", [10, 17, 4])
def test_a_derived_dim_takes_its_value_from_the_dims_it_is_made_of(kernel, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    s = np.full(-(-n // 4), np.nan, np.float32)
    kernel(x, s)
    np.testing.assert_allclose(s, _reference(x, 4), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", [chunk_sums, chunk_sums_dynamic], ids=["const", "dynamic"])
def test_an_array_that_disagrees_with_a_derived_dim_is_refused(kernel):
    x = np.random.default_rng(1).standard_normal(10).astype(np.float32)
    s = np.full(4, np.nan, np.float32)
    with pytest.raises(ArgumentError, match=r"parameter 's': shape\[0\] must be (.* = )?3, got 4"):
        kernel(x, s)
    assert np.isnan(s).all()


@tilecraft.jit(target="c")
def weighted_chunk_sums(x, w, chunk=4):
    n = T.const("n")
    nchunks = T.ceildiv(n, chunk)
    x: T.Tensor((n,), "float32")
    w: T.Tensor((nchunks,), "float32")
    s = T.empty((nchunks,), "float32")
    with T.Kernel(nchunks) as bx:
        acc = T.alloc_var("float32")
        acc = 0.0
        for i in T.serial(chunk):
            if bx * chunk + i < n:
                acc += x[bx * chunk + i]
        s[bx] = acc * w[bx]
    return s


def test_a_profiler_makes_inputs_from_the_compile_time_values():
    """`kernel.compile(n=..)` then the profiler's own inputs: no dim is left to guess."""
    kernel = weighted_chunk_sums.compile(n=10, chunk=4)
    # the inputs are torch tensors when torch is imported in this process, numpy arrays otherwise
    kernel.get_profiler().assert_allclose(
        lambda x, w: (_reference(np.asarray(x), 4) * np.asarray(w)).astype(np.float32)
    )
