"""Shared memory holds every element width exactly: 1-, 2-, 4- and 8-byte elements (WebGPU packs the narrow
ones into u32 words and splits the 8-byte ones over two), read back at other threads' positions."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft.language as T

M, N = 5, 72  # not a multiple of the 128 threads
DTYPES = ("int8", "float16", "int32", "float32", "float64", "int64", "uint64")


def _values(dtype: str, rng: np.random.Generator) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal((M, N)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, (M, N), dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_shared_tile_reversed_in_place_keeps_every_bit(backend_ctx, dtype):
    from tests.conformance.test_conformance import compile_or_skip

    @T.prim_func
    def reverse(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=128) as _:
            s = T.alloc_shared((M, N), dtype)
            T.copy(X, s)
            for i, j in T.Parallel(M, N):
                Y[i, j] = s[M - 1 - i, N - 1 - j]

    x = _values(dtype, np.random.default_rng(len(dtype)))
    kernel = compile_or_skip(reverse, backend_ctx)
    backend = backend_ctx.execution_backend()
    xd, yd = backend.to_device(x), backend.to_device(np.full((M, N), 7, dtype))
    kernel(xd, yd)
    np.testing.assert_array_equal(backend.to_host(yd), x[::-1, ::-1])
