"""check-loop-iterations (WebGPU): a kernel whose invocations stay within the driver's loop passes
(llvmpipe: 65535 over all loops) passes through unchanged; one past them is refused at its outermost
loop with the most passes; a target with -max_loop_iterations=0 has no limit. And the count itself:
n * (body + 1) + 1 per loop, both sides of a conditional, trip counts bounded from the grid and the
enclosing loops, unknown ones counted as their fewest passes."""

from __future__ import annotations

import re

import pytest

import tilecraft.language as T
from tests.transform.helpers import WEBGPU
from tilecraft.errors import LoweringError
from tilecraft.testing.conformance import kernels as K
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass
from tilecraft.webgpu.transform.loop_iterations import loop_passes

NO_LIMIT = WEBGPU.replace("-max_loop_iterations=65535", "-max_loop_iterations=0")


def square_gemm(k: int):
    """TileLang's usual float16 GEMM: 128x128 blocks, 128 threads, so 128 accumulator elements each."""
    return K.gemm(256, 256, k, block_m=128, block_n=128, block_k=32)


@pass_test("check-loop-iterations", WEBGPU)
def test_a_gemm_within_the_limit_passes_unchanged(target):
    """K = 384: about 51,000 loop passes per invocation, under llvmpipe's 65535: unchanged."""
    assert_pass(target, "check-loop-iterations", square_gemm(384), UNCHANGED, prefix=True)


def test_a_gemm_past_the_limit_is_refused_at_its_k_loop():
    # K = 512: 128 elements x 512 k = 65536 passes of the innermost loop alone; lavapipe returned NaN
    with pytest.raises(LoweringError, match="loop passes") as info:
        run_pass(WEBGPU, "check-loop-iterations", square_gemm(512), prefix=True)
    err = info.value
    assert err.unsupported == "resource:loop-iterations"
    assert int(re.search(r"runs ([\d,]+) loop passes", str(err)).group(1).replace(",", "")) > 65535
    assert "for ko in T.Pipelined(T.ceildiv(k, block_k)" in str(err)  # the loop that carries them
    assert "max_loop_iterations=0" in str(err) and "threads" in str(err)  # what to do


def test_a_target_without_a_loop_limit_lowers_the_same_gemm():
    run_pass(NO_LIMIT, "check-loop-iterations", square_gemm(512), prefix=True)


@T.prim_func
def nested(Y: T.Tensor((4, 2), "int32")):
    with T.Kernel(4, threads=64) as bx:
        for i in T.serial(8):
            for j in T.serial(i + 1):
                Y[bx, 0] = j
        for k in T.serial(bx * 10 + 5):
            Y[bx, 1] = k


def test_nested_loops_multiply_and_trip_counts_are_bounded_by_the_grid_and_outer_loops():
    total, outermost = loop_passes(nested.body)
    # j runs at most 8 times (i <= 7): 8 * ((8 + 1) + 1) + 1; k at most 35 times (bx <= 3): 35 + 1
    assert [count.passes for _, count in outermost] == [81, 36]
    assert total.passes == 117 and total.known


@T.prim_func
def branches(Y: T.Tensor((2,), "int32"), flag: T.int32):
    with T.Kernel(1, threads=32):
        if flag > 0:
            for i in T.serial(100):
                Y[0] = i
        else:
            for j in T.serial(50):
                Y[1] = j


def test_both_sides_of_a_conditional_count():
    total, _ = loop_passes(branches.body)
    assert total.passes == 101 + 51  # lanes that diverge run both


n = T.dynamic("n")


@T.prim_func
def symbolic(X: T.Tensor((n,), "float32")):
    with T.Kernel(1, threads=32):
        for i in T.serial(n):
            for _j in T.serial(70000):
                X[i] = X[i] + 1.0


def test_an_unknown_trip_count_counts_as_its_fewest_passes():
    total, _ = loop_passes(symbolic.body)
    assert total.passes == 1 and not total.known  # n may be 0: not refused before it is known
