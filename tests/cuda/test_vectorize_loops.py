"""vectorize-loops: which `T.vectorized` copies become one vector access in the generated CUDA.

The results are checked on a GPU by the conformance case per_thread_vectorized_runs_gemv; these tests pin
down the accesses and the cases that must stay element by element."""

from __future__ import annotations

import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.testing.conformance import per_thread as PR


def _kernel(func) -> str:
    artifact = tilecraft.lower(func, target="cuda -arch=sm_90a", execution_backend="nvrtc")
    source = artifact.source("cuda-source")
    return source[source.index('extern "C" __global__') :]


def _copy(run: int, row: int, offset: int, dtype: str = "float16", step: int | None = None):
    """Each of 32 threads copies `run` elements of row `bx` from column `tx * step + offset` into a
    per-thread array and back out to the same place of another tensor."""
    step = run if step is None else step

    @T.prim_func
    def copy(A: T.Tensor((8, row), dtype), B: T.Tensor((8, row), dtype)):
        with T.Kernel(8, threads=32) as bx:
            tx = T.get_thread_binding(0)
            regs = T.alloc_local((run,), dtype)
            if tx * step + offset + run <= row:
                for v in T.vectorized(run):
                    regs[v] = A[bx, tx * step + offset + v]
                for v in T.vectorized(run):
                    B[bx, tx * step + offset + v] = regs[v]

    return copy


def test_the_gemv_runs_are_16_byte_loads_and_stores():
    source = _kernel(PR.vectorized_gemv())
    assert source.count("*(const uint4*)(") == 3, source
    assert not any(f"{name}[" in source for name in "ABD"), source  # no element access is left


@pytest.mark.parametrize(("run", "dtype", "vector"), [(8, "float16", "uint4"), (4, "float16", "uint2"),
                                                      (2, "float16", "uint32_t"), (4, "int8", "uint32_t"),
                                                      (4, "float32", "uint4")])  # fmt: skip
def test_the_vector_is_as_wide_as_the_run(run, dtype, vector):
    source = _kernel(_copy(run, 256, 0, dtype))
    assert f"*(const {vector}*)(A + " in source and f"*({vector}*)(B + " in source, source


@pytest.mark.parametrize(
    ("run", "row", "offset", "step", "why"),
    [
        (8, 256, 1, None, "the run starts off a multiple of its length"),
        (8, 260, 0, None, "a row of 260 elements puts row 1's runs off 16 bytes"),
        (8, 256, 0, 12, "a thread's start tx * 12 is not a multiple of 8"),
        (3, 256, 0, None, "6 bytes is no vector width"),
    ],
)
def test_unprovable_runs_stay_element_copies(run, row, offset, step, why):
    source = _kernel(_copy(run, row, offset, step=step))
    assert "*(const uint" not in source, why
    assert "A[" in source and "B[" in source, why


def _two_stores(dependent: bool):
    """One T.vectorized loop with two stores: two loads into two arrays (TileLang's split-K GEMV), or a
    load into an array and that array's store out (the second store reads what the first writes)."""

    @T.prim_func
    def two(A: T.Tensor((8, 256), "float16"), B: T.Tensor((8, 256), "float16"), C: T.Tensor((8, 256), "float16")):
        with T.Kernel(8, threads=32) as bx:
            tx = T.get_thread_binding(0)
            a = T.alloc_local((8,), "float16")
            b = T.alloc_local((8,), "float16")
            for v in T.vectorized(8):
                a[v] = A[bx, tx * 8 + v]
                if dependent:
                    C[bx, tx * 8 + v] = a[v]
                else:
                    b[v] = B[bx, tx * 8 + v]
            for v in T.serial(8):
                C[bx, tx * 8 + v] = a[v] + b[v]

    return two


def test_a_loop_of_two_independent_runs_is_two_vector_loads():
    source = _kernel(_two_stores(dependent=False))
    assert "*(uint4*)(a + 0) = *(const uint4*)(A + " in source, source
    assert "*(uint4*)(b + 0) = *(const uint4*)(B + " in source, source


def test_a_loop_whose_second_store_reads_the_first_stays_element_copies():
    source = _kernel(_two_stores(dependent=True))
    assert "*(const uint4*)(A + " not in source and "a[(int32_t)v] = A[" in source, source
