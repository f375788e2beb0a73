"""`T.SharedBuffer`, `T.FragmentBuffer`, `T.LocalBuffer`: TileLang's annotations of macro parameters that
receive on-chip buffers (minference's vertical-slash attention writes `K_shared: T.SharedBuffer([stages,
block_N, dim], dtype)`). As in TileLang they describe the argument and the macro binds what the call
passes; on a kernel's own parameter they are a located error."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ParseError
from tilecraft.language.types import TensorType

N, BLOCK = 200, 64


@T.macro
def load_tile(
    A: T.Tensor((N,), T.float32),
    tile: T.SharedBuffer([BLOCK], T.float32),
    start,
):
    for i in T.Parallel(BLOCK):
        tile[i] = T.if_then_else(start + i < N, A[start + i], 0.0)


@T.macro
def scale_into(tile: T.SharedBuffer[[BLOCK], T.float32], acc: T.FragmentBuffer((BLOCK,), T.float32), s):
    for i in T.Parallel(BLOCK):
        acc[i] = tile[i] * s


@T.prim_func
def scaled(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
    with T.Kernel(T.ceildiv(N, BLOCK), threads=64) as bx:
        tile = T.alloc_shared((BLOCK,), T.float32)
        acc = T.alloc_fragment((BLOCK,), T.float32)
        load_tile(A, tile, bx * BLOCK)
        scale_into(tile, acc, 3.0)
        for i in T.Parallel(BLOCK):
            if bx * BLOCK + i < N:
                B[bx * BLOCK + i] = acc[i]


def test_annotations_describe_on_chip_buffers():
    shared = T.SharedBuffer([2, 64, 32], T.float16)
    assert isinstance(shared, TensorType) and shared.scope == "shared.dyn"
    assert T.FragmentBuffer[[64], T.float32].scope == "local.fragment"
    assert T.LocalBuffer((4,), T.int32).scope == "local"
    assert [int(d.value) for d in shared.shape] == [2, 64, 32]


def test_macros_with_on_chip_buffer_parameters_run():
    kernel = tilecraft.compile(scaled, target="c")
    a = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    b = np.full(N, np.nan, np.float32)
    kernel(a, b)
    np.testing.assert_allclose(b, a.astype(np.float64) * 3.0, rtol=1e-6)


def test_a_kernel_parameter_annotated_as_shared_is_located():
    with pytest.raises(ParseError) as info:

        @T.prim_func
        def bad(A: T.SharedBuffer((16,), T.float32)):
            with T.Kernel(1, threads=32):
                A[0] = 1.0

    err = info.value
    assert "parameter 'A' is annotated T.SharedBuffer" in err.message
    assert "T.Tensor(shape, dtype)" in err.hint
    assert "def bad(A: T.SharedBuffer((16,), T.float32)):" in str(err)


def test_an_eager_reannotation_as_fragment_is_located():
    @tilecraft.jit
    def bad(A):
        A: T.FragmentBuffer((16,), T.float32)
        with T.Kernel(1, threads=32):
            A[0] = 1.0

    with pytest.raises(ParseError, match="parameter 'A' is annotated T.FragmentBuffer"):
        bad.get_tir()
