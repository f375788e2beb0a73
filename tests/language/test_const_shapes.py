"""On-chip buffers sized by expressions of `T.const` symbols, directly or through names bound to such
expressions (`block_q = 64 // heads`, as TileLang's fp8 lightning indexer sizes its tiles): static once
the call specializes the symbols. A size that depends on a run-time value stays a located error."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ParseError, SemanticError


@tilecraft.jit
def head_sums(X, rows_per_block=None):
    heads, dim = T.const("heads, dim")
    rows = T.dynamic("rows")
    if rows_per_block is None:
        rows_per_block = 64 // heads  # a let-bound expression of a compile-time symbol
    X: T.Tensor((rows, heads, dim), T.float32)
    Y = T.empty((rows, heads), T.float32)
    with T.Kernel(T.ceildiv(rows, rows_per_block), threads=128) as bx:
        tile = T.alloc_shared([rows_per_block * heads, dim], T.float32)
        acc = T.alloc_fragment([rows_per_block, heads], T.float32)
        for r, h, k in T.Parallel(rows_per_block, heads, dim):
            tile[r * heads + h, k] = X[bx * rows_per_block + r, h, k]
        T.clear(acc)
        for r, h in T.Parallel(rows_per_block, heads):
            for k in T.serial(dim):
                acc[r, h] += tile[r * heads + h, k]
        T.copy(acc, Y[bx * rows_per_block, 0])
    return Y


@pytest.mark.parametrize("rows, heads, dim", [(13, 8, 16), (5, 4, 24), (3, 64, 8)])
def test_tiles_sized_by_let_bound_const_expressions_run(rows, heads, dim):
    x = np.random.default_rng(rows * heads).standard_normal((rows, heads, dim)).astype(np.float32)
    y = head_sums(x)
    np.testing.assert_allclose(y, x.astype(np.float64).sum(-1), rtol=1e-5, atol=1e-5)


def test_the_specialized_shape_is_a_number():
    func = head_sums.get_tir(heads=8, dim=16)
    from tilecraft.ir.stmt import Allocate
    from tilecraft.ir.visitor import walk

    shapes = {n.buffer.name: n.buffer.shape for n in walk(func.body) if isinstance(n, Allocate)}
    assert [int(d.value) for d in shapes["tile"]] == [64, 16]
    assert [int(d.value) for d in shapes["acc"]] == [8, 8]


def test_a_size_that_specializes_to_zero_is_located():
    x = np.ones((3, 128, 8), np.float32)  # 64 // 128 = 0 rows per block
    with pytest.raises(SemanticError, match="dim 0 of tile is 0; it must be at least 1"):
        head_sums(x)


def test_a_let_bound_size_of_a_dynamic_dim_names_it():
    @tilecraft.jit
    def per_row(X):
        rows = T.dynamic("rows")
        half = rows // 2
        X: T.Tensor((rows,), T.float32)
        with T.Kernel(1, threads=32):
            tile = T.alloc_shared([half], T.float32)  # <- error
            T.copy(X[0:half], tile)

    with pytest.raises(ParseError) as info:
        per_row.get_tir()
    message = str(info.value)
    assert "T.alloc_shared needs a static positive shape, got half: rows is known only at run time" in message
    assert "tile = T.alloc_shared([half], T.float32)" in message
