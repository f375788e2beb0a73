"""`while` loops: an IR condition makes a While loop every target runs; a Python condition unrolls while
parsing; the simplifier and the barrier pass see the loop for what it is."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.transform.helpers import assert_nvcc_compiles, opencl_source, run
from tilecraft.ir import stmt as S
from tilecraft.ir import walk
from tilecraft.testing.conformance.regressions import collatz, collatz_steps, walk_tiles
from tilecraft.transform.simplify import simplify_func


def test_a_run_time_condition_makes_a_while_loop():
    loops = [n for n in walk(collatz().body) if isinstance(n, S.While)]
    assert len(loops) == 1
    assert "x != 1" in collatz().script()


def test_a_python_condition_unrolls_while_parsing():
    @T.prim_func
    def halving(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=32):
            width = 32
            while width > 1:
                for i in T.Parallel(width // 2):
                    A[i] = A[i] + A[i + width // 2]
                width //= 2
            while width > 100:
                A[0] = 0.0

    assert not any(isinstance(n, S.While) for n in walk(halving.body))
    extents = [n.extent.value for n in walk(halving.body) if isinstance(n, S.For)]
    assert extents == [16, 8, 4, 2, 1]


def test_a_while_whose_condition_simplifies_to_false_is_removed():
    @T.prim_func
    def never(A: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=32) as bx:
            while A[0] < 1.0 and bx > 5:
                A[0] = A[0] + 1.0

    assert any(isinstance(n, S.While) for n in walk(never.body))
    assert not any(isinstance(n, S.While) for n in walk(simplify_func(never).body))


@pytest.mark.parametrize("target", ["c", "opencl"])
def test_data_dependent_trip_counts_run(target, request):
    ctx = request.getfixturevalue("opencl") if target == "opencl" else tilecraft.create_backend_context("c")
    a = np.arange(1, 65, dtype=np.int32)
    steps = np.full(64, -1, np.int32)
    run(collatz(), ctx, a, steps)
    np.testing.assert_array_equal(steps, [collatz_steps(int(x)) for x in a])


@pytest.mark.parametrize("target", ["c", "opencl"])
def test_a_while_over_tiles_through_shared_memory_runs(target, request):
    ctx = request.getfixturevalue("opencl") if target == "opencl" else tilecraft.create_backend_context("c")
    a = np.random.default_rng(0).standard_normal(6 * 64).astype(np.float32)
    b = np.full_like(a, np.nan)
    run(walk_tiles(), ctx, a, b, np.array([1, 4], np.int32))
    expected = np.full_like(a, np.nan)
    for t in (1, 2, 3):
        expected[t * 64 : (t + 1) * 64] = a[t * 64 : (t + 1) * 64][::-1] * 2
    np.testing.assert_array_equal(b, expected)


def _while_body(source: str) -> list[str]:
    lines = source[source.index("__kernel") :].splitlines()
    start = next(k for k, line in enumerate(lines) if line.lstrip().startswith("while ("))
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start + 1 :]:
        if len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return body


def test_barriers_inside_a_while_separate_each_tile_s_writes_and_reads():
    body = _while_body(opencl_source(walk_tiles()))
    # after the copy into the tile (others read it), and before the next copy (others still read it)
    assert sum("barrier(" in line for line in body) == 2, "\n".join(body)


def test_a_condition_that_reads_shared_memory_the_body_writes_gets_a_barrier_at_the_end():
    @T.prim_func
    def countdown(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            left = T.alloc_shared((1,), "int32")
            T.fill(left, 3)
            while left[0] > 0:
                for i in T.Parallel(64):
                    A[i] = A[i] + 1.0
                T.fill(left, left[0] - 1)

    body = _while_body(opencl_source(countdown))
    assert "barrier(" in body[-1], "\n".join(body)


@pytest.mark.parametrize("build", [collatz, walk_tiles])
def test_generated_cuda_with_while_loops_compiles(build, nvcc, tmp_path):
    source = assert_nvcc_compiles(build(), tmp_path)
    assert "while (" in source
