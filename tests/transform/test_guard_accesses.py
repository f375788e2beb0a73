"""guard-accesses: T.Parallel tile code that runs past a tensor's edge reads zeros and skips its stores,
on every target, and pays nothing where the analyzer proves the access inside."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.transform.helpers import assert_nvcc_compiles, run
from tilecraft.ir import structural_equal
from tilecraft.testing.conformance.regressions import (
    ragged_gemm_inputs,
    ragged_gemm_reference,
    ragged_gemm_store,
)
from tilecraft.testing.filecheck import filecheck
from tilecraft.transform.guard_accesses import guard_func


def assert_guarded_as(before, expected) -> None:
    """`guard-accesses` turns `before` into `expected` (compared structurally; names aside)."""
    after = dataclasses.replace(guard_func(before), name=expected.name)
    assert structural_equal(after, expected), after.script()


# ---------------------------------------------------------------- the rule, before / expected


def test_a_tile_past_the_edge_gets_a_store_guard_and_its_loads_no_second_one():
    """Only the bounds that can break are kept (no `>= 0` on sums of non-negative indices); the load in
    the stored value is known in bounds under the store's guard."""

    @T.prim_func
    def before(A: T.Tensor((100, 96), "float32"), C: T.Tensor((100, 96), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            for i, j in T.Parallel(64, 64):
                C[bx * 64 + i, by * 64 + j] = A[bx * 64 + i, by * 64 + j] * 2.0

    @T.prim_func
    def expected(A: T.Tensor((100, 96), "float32"), C: T.Tensor((100, 96), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            for i, j in T.Parallel(64, 64):
                if bx * 64 + i < 100 and by * 64 + j < 96:
                    C[bx * 64 + i, by * 64 + j] = A[bx * 64 + i, by * 64 + j] * 2.0

    assert_guarded_as(before, expected)


def test_a_load_past_the_edge_reads_zero():
    @T.prim_func
    def before(A: T.Tensor((100,), "float32"), s: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(128):
                s[i] = A[i] + 1.0

    @T.prim_func
    def expected(A: T.Tensor((100,), "float32"), s: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(128):
                s[i] = T.if_then_else(i < 100, A[i], 0.0) + 1.0

    assert_guarded_as(before, expected)


def test_accesses_proven_inside_are_left_alone():
    """Whole tiles (sizes a multiple of the tile), the user's own `if`, on-chip buffers and indices that
    do not use the nest's variables: nothing to guard."""

    @T.prim_func
    def inside(
        A: T.Tensor((128, 128), "float32"),
        B: T.Tensor((200, 96), "float32"),
        C: T.Tensor((200, 96), "float32"),
        n: T.int32,
    ):
        with T.Kernel(2, 4, threads=128) as (bx, by):
            tile = T.alloc_shared((64, 64), "float32")
            for i, j in T.Parallel(64, 64):
                tile[i, j] = A[bx * 64 + i, by * 32 + j % 32]
            for i, j in T.Parallel(64, 64):
                r, c = by * 64 + i, bx * 64 + j
                if r < 200 and c < 96:
                    C[r, c] = B[r, c] + tile[i, j] + A[n, 0]

    assert_guarded_as(inside, inside)


def test_indices_computed_from_data_keep_both_bounds():
    """An offset read from a buffer may be anything: `0 <= index` and `index < dim` both stay."""

    @T.prim_func
    def before(C: T.Tensor((100,), "float32"), offsets: T.Tensor((4,), "int32")):
        with T.Kernel(4, threads=64) as bx:
            start = offsets[bx]
            for i in T.Parallel(64):
                C[start + i] = 1.0

    @T.prim_func
    def expected(C: T.Tensor((100,), "float32"), offsets: T.Tensor((4,), "int32")):
        with T.Kernel(4, threads=64) as bx:
            start = offsets[bx]
            for i in T.Parallel(64):
                if start + i >= 0 and start + i < 100:
                    C[start + i] = 1.0

    assert_guarded_as(before, expected)


def test_a_scalar_atomic_past_the_edge_is_skipped():
    @T.prim_func
    def before(C: T.Tensor((100,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            for i in T.Parallel(64):
                T.atomic_add(C[bx * 64 + i], 1.0)

    @T.prim_func
    def expected(C: T.Tensor((100,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < 100:
                    T.atomic_add(C[bx * 64 + i], 1.0)

    assert_guarded_as(before, expected)


# ---------------------------------------------------------------- every target


def _context(target, request):
    return (
        request.getfixturevalue("opencl") if target == "opencl" else tilecraft.create_backend_context(target)
    )


@pytest.mark.parametrize("target", ["c", "opencl"])
def test_stores_past_the_edge_are_skipped_and_loads_read_zero(target, request):
    a, b, _ = ragged_gemm_inputs(np.random.default_rng(5))
    # The result is the head of a larger array: a store past its end would land in the sentinels.
    memory = np.full(100 * 96 + 4096, 7.0, np.float32)
    c = memory[: 100 * 96].reshape(100, 96)
    run(ragged_gemm_store(), _context(target, request), a, b, c)
    np.testing.assert_allclose(c, ragged_gemm_reference(a, b), rtol=1e-5, atol=1e-4)
    assert (memory[100 * 96 :] == 7.0).all()


def test_generated_cuda_guards_the_ragged_store_and_compiles(nvcc, tmp_path):
    source = assert_nvcc_compiles(ragged_gemm_store(), tmp_path)
    # the store of each accumulator register is the only statement under its row and column guard
    checks = r"""
        CHECK: {{if \(.* < 100\) && \(.* < 96\)\)\) \{$}}
        CHECK-NEXT: C[
        CHECK-NEXT: }
    """
    filecheck(source[source.index('extern "C" __global__') :], checks, name="ragged_gemm_store.cu")


def test_every_pipeline_guards_accesses_before_tile_ops_are_lowered():
    from tilecraft.cpu.pipeline import PIPELINE as CPU
    from tilecraft.cuda.pipeline import PIPELINE as CUDA
    from tilecraft.opencl.pipeline import PIPELINE as OPENCL

    for pipeline, lowering in ((CPU, "lower-tile-ops"), (CUDA, "infer-layouts"), (OPENCL, "infer-layouts")):
        names = pipeline.pass_names
        assert "guard-accesses" in names, pipeline.name
        assert names.index("guard-accesses") < names.index(lowering), pipeline.name
