"""widen-index-arithmetic, Before/Expected: int64 where an index may leave int32, int32 elsewhere."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test

BIG = 2**31 + 8
TARGETS = ("c", SM80, OPENCL)


@pass_test("widen-index-arithmetic", *TARGETS)
def test_an_index_past_int32_is_computed_in_int64(target):
    """bx * 1024 + i reaches 2**31 + 7: the sum is computed in int64, not cast after wrapping."""

    @T.prim_func
    def before(A: T.Tensor((BIG,), "int8")):
        with T.Kernel(T.ceildiv(BIG, 1024)) as bx:
            for i in T.Parallel(1024):
                if bx * 1024 + i < BIG:
                    A[bx * 1024 + i] = 1

    @T.prim_func
    def expected(A: T.Tensor((BIG,), "int8")):
        with T.Kernel(T.ceildiv(BIG, 1024)) as bx:
            for i in T.Parallel(1024):
                if T.cast(bx, "int64") * 1024 + T.cast(i, "int64") < BIG:
                    A[T.cast(bx, "int64") * 1024 + T.cast(i, "int64")] = 1

    assert_pass(target, "widen-index-arithmetic", before, expected)


@pass_test("widen-index-arithmetic", *TARGETS)
def test_indices_that_fit_stay_int32(target):
    """Every index of a 100,000-element tensor fits int32: nothing is widened."""

    @T.prim_func
    def before(A: T.Tensor((100_000,), "int8")):
        with T.Kernel(T.ceildiv(100_000, 1024)) as bx:
            for i in T.Parallel(1024):
                if bx * 1024 + i < 100_000:
                    A[bx * 1024 + i] = 1

    assert_pass(target, "widen-index-arithmetic", before, UNCHANGED)
