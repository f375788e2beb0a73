"""Kernels pickle (for multiprocessing and Ray): by value, as their artifact and options, rebuilt or
found in the cache where they are unpickled; `@tilecraft.jit` functions by reference (issue 31, item 11)."""

from __future__ import annotations

import multiprocessing
import pickle

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft import settings
from tilecraft.errors import TilecraftError, UnpicklingKernelError
from tilecraft.execution.cc import toolchain

pytestmark = pytest.mark.skipif(toolchain.find_compiler_path() is None, reason="no C compiler installed")

N = 1000  # ragged for the block of 64


@tilecraft.jit(out_idx=[-1], target="c")
def axpy(n, block=64):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), Z: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=1) as bx:
            for i in T.Parallel(block):
                Z[bx * block + i] = 3.0 * X[bx * block + i] + Y[bx * block + i]

    return main


def inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)


def check(z: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    np.testing.assert_allclose(z, 3.0 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)


def run_kernel(job):
    """Runs in a spawned worker: the kernel arrives pickled, with its inputs; given outputs are poisoned."""
    kernel, x, y = job
    z = np.full(N, np.nan, np.float32)
    kernel(x, y, z)
    return z, kernel(x, y)  # the output passed, and the one `out_idx` allocates


def run_factory(job):
    """Runs in a spawned worker: the @tilecraft.jit function arrives by reference and compiles there."""
    factory, x, y = job
    return factory(N)(x, y)


def test_a_kernel_pickles_and_runs_in_this_process():
    kernel = axpy(N)
    again = pickle.loads(pickle.dumps(kernel))
    assert again is not kernel and again.out_idx == kernel.out_idx == (2,)
    assert again.built.key == kernel.built.key  # found in the cache, not built again
    x, y = inputs(1)
    z, allocated = run_kernel((again, x, y))
    check(z, x, y)
    check(allocated, x, y)


def test_an_unpickled_kernel_is_built_from_its_artifact_where_the_cache_is_empty(tmp_path):
    data = pickle.dumps(axpy(N))
    with settings.override(TILECRAFT_CACHE_DIR=tmp_path / "empty"):
        kernel = pickle.loads(data)
    assert any((tmp_path / "empty").rglob("kernel.so")), "it was built into the receiving cache"
    x, y = inputs(2)
    check(kernel(x, y), x, y)


def test_a_kernel_that_cannot_be_built_where_it_is_unpickled_names_the_alternative(tmp_path):
    data = pickle.dumps(axpy(N))
    broken = settings.override(TILECRAFT_CACHE_DIR=tmp_path / "empty", TILECRAFT_CC="no-such-compiler-xyz")
    with broken, pytest.raises(UnpicklingKernelError) as info:
        pickle.loads(data)
    text = str(info.value)
    assert "unpickling kernel main" in text and "no-such-compiler-xyz" in text
    assert "kernel.export(path)" in text and "tilecraft.load(path)" in text


def test_a_pickle_of_another_format_is_refused_with_what_to_do():
    function, (state,) = axpy(N).__reduce__()
    with pytest.raises(TilecraftError, match="has format 0; this tilecraft reads format 1"):
        function({**state, "format": 0})
    with pytest.raises(TilecraftError, match="holds an artifact this tilecraft cannot read"):
        function({**state, "artifact": {}})


def test_kernels_and_jit_functions_go_through_a_spawned_pool():
    kernel = axpy(N)
    jobs = [(kernel, *inputs(seed)) for seed in (3, 4, 5)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(run_kernel, jobs)
        built_there = pool.map(run_factory, [(axpy, *inputs(6))])
    for (_, x, y), (z, allocated) in zip(jobs, results):
        check(z, x, y)
        check(allocated, x, y)
    check(built_there[0], *inputs(6))


def test_a_jit_function_defined_inside_a_function_cannot_be_pickled_by_reference():
    @tilecraft.jit(target="c")
    def local(n):
        return None

    with pytest.raises((pickle.PicklingError, AttributeError), match="local"):
        pickle.dumps(local)
