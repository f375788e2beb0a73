"""check-block-model (CPU), Before/Expected: a kernel that reads no thread index passes through; one that
does is refused at the line that reads it."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


@pass_test("check-block-model", "c")
def test_tile_level_code_passes_unchanged(target):
    """T.Parallel code reads no thread index: the check leaves it as it is."""

    @T.prim_func
    def before(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                A[i] = A[i] * 2.0

    assert_pass(target, "check-block-model", before, UNCHANGED)


@pass_test("check-block-model", "c")
def test_a_thread_index_read_is_refused_at_its_line(target):
    """A read of T.get_thread_binding outside a thread-group branch stops lowering at that statement."""

    @T.prim_func
    def before(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            A[tx] = 1.0  # <- error

    with pytest.raises(LoweringError, match="reads a thread index") as info:
        assert_pass(target, "check-block-model", before, UNCHANGED)
    assert "A[tx] = 1.0  # <- error" in str(info.value)
