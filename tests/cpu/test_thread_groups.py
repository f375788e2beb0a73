"""`if T.get_thread_binding() < c: A else: B` (thread groups, deepseek_mhc/example_mhc_pre) runs A then B on
the CPU, where a block is one thread; per-thread code inside a group runs for the group's threads."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.testing.filecheck import filecheck


def groups(n: int, split: int):
    @T.prim_func
    def main(
        A: T.Tensor((n, 64), "float32"), B: T.Tensor((n, 64), "float32"), C: T.Tensor((n, 64), "float32")
    ):
        with T.Kernel(n, threads=96) as bx:
            row = T.alloc_shared((64,), "float32")
            T.copy(A[bx, :], row)
            if T.get_thread_binding() < split:
                for j in T.Parallel(64):
                    B[bx, j] = row[j] * 2.0
            else:
                for j in T.Parallel(64):
                    C[bx, j] = T.exp(row[j])

    return main


@pytest.mark.parametrize("split", [32, 96, 0])
def test_both_thread_groups_run(split):
    a = np.random.default_rng(2).standard_normal((5, 64)).astype(np.float32)
    b, c = np.full((5, 64), 3.0, np.float32), np.full((5, 64), 3.0, np.float32)
    tilecraft.compile(groups(5, split), target="c")(a, b, c)
    ref_b = (
        a.astype(np.float64) * 2 if split > 0 else np.full((5, 64), 3.0)
    )  # no thread takes a branch: skipped
    ref_c = np.exp(a.astype(np.float64)) if split < 96 else np.full((5, 64), 3.0)
    assert np.abs(b - ref_b).max() / np.abs(ref_b).max() < 1e-6
    assert np.abs(c - ref_c).max() / np.abs(ref_c).max() < 1e-6


def test_the_groups_run_one_after_the_other_as_plain_loops():
    """The block's one thread fills the shared row, runs group A's loop, then group B's: no branch on a
    thread index is left in the C."""
    source = tilecraft.lower(groups(5, 32), target="c").source("c-source")
    checks = """
        CHECK: static void main_kernel0(
        CHECK-NOT: if (
        CHECK: row[(int64_t)i0] = A[
        CHECK-NOT: if (
        CHECK: B[(int64_t)bx * 64 + (int64_t)j] = (row[(int64_t)j] * 2.0f);
        CHECK-NOT: if (
        CHECK: C[(int64_t)bx * 64 + (int64_t)j_1] = tc_expf(row[(int64_t)j_1]);
        CHECK-NOT: if (
        CHECK: tc_sites[]
    """
    filecheck(source, checks, name="main.c")


def test_per_thread_code_inside_a_group_runs_for_the_group_s_threads():
    """A side of a thread-group branch runs its tile-level code once and its per-thread code for the
    threads that take the side (work-item loops, cpu/transform/work_items.py)."""

    @T.prim_func
    def mixed(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32"), C: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            if tx < 64:
                for j in T.Parallel(64):
                    B[j] = A[j] * 2.0
                C[tx] = A[tx] + 1.0
            else:
                C[tx] = T.cast(tx, "float32")

    a = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    b, c = np.full(64, np.nan, np.float32), np.full(128, np.nan, np.float32)
    tilecraft.compile(mixed, target="c")(a, b, c)
    np.testing.assert_allclose(b, a * 2, rtol=1e-6)
    np.testing.assert_allclose(c[:64], a + 1, rtol=1e-6)
    np.testing.assert_array_equal(c[64:], np.arange(64, 128, dtype=np.float32))
