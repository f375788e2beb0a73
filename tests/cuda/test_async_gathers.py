"""async-gathers without a GPU: element gathers into shared tiles in T.Pipelined loops (T.im2col's, or a
T.Parallel nest written by hand) become zero-filling cp.async chunks where the index arithmetic proves a
run contiguous, aligned and under one guard, and stay synchronous, with the reason under
TILECRAFT_VERBOSE, where it does not. The run algebra is checked numerically against the IR evaluator.
The GPU runs are the conformance cases convolution_16_byte_gathers*."""

from __future__ import annotations

import itertools
import random

import pytest

import tilecraft
import tilecraft.language as T
from tilecraft import settings
from tilecraft.cuda.transform.async_gathers import _Run
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.arith.analyzer import Analyzer
from tilecraft.ir.buffer import Range
from tilecraft.ir.eval import evaluate
from tilecraft.testing.conformance import convolution as CV

TARGETS = ("cuda -arch=sm_90a", "cuda -arch=sm_80")


def _source(func, target: str) -> str:
    return next(iter(tilecraft.lower(func, target=target).device_sources.values()))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("build", "call", "chunks"),
    [
        (CV.conv2d_wide, "tc_cp_async16(data_shared", 3),
        (CV.conv2d_wide_strided, "tc_cp_async16(data_shared", 3),
        (CV.conv2d, "tc_cp_async4(data_shared", 2),
    ],  # fmt: skip
)
def test_im2col_gathers_become_staged_cp_async(build, call, chunks, target):
    src = _source(build(), target)
    assert src.count(call) == chunks  # the prologue's stages and the loop's refill
    assert "data_shared[" not in src  # no element store into the image tile is left


def _gather(n: int, k: int, bk: int, guard_bound: int, transpose: bool = False):
    """A hand-written gather: tile[i, j] = A[row, col] under a guard of the column, in a pipelined GEMM."""

    @T.prim_func
    def gather(
        A: T.Tensor((n, k), "float16"), B: T.Tensor((k, 64), "float16"), C: T.Tensor((n, 64), "float32")
    ):
        with T.Kernel(1, T.ceildiv(n, 64), threads=128) as (bx, by):
            tile = T.alloc_shared((64, bk), "float16")
            b_tile = T.alloc_shared((bk, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=3):
                for i, j in T.Parallel(64, bk):
                    col = ko * bk + j
                    if col < guard_bound:
                        if transpose:
                            tile[i, j] = A[col % n, (by * 64 + i) % k]
                        else:
                            tile[i, j] = A[by * 64 + i, col]
                    else:
                        tile[i, j] = 0
                T.copy(B[ko * bk, 0], b_tile)
                T.gemm(tile, b_tile, acc)
            T.copy(acc, C[by * 64, 0])

    return gather


@pytest.mark.parametrize("target", TARGETS)
def test_a_hand_written_gather_is_the_same_capability(target):
    src = _source(_gather(128, 256, 32, 256), target)
    assert src.count("tc_cp_async16(tile") == 3


def test_a_bound_inside_a_16_byte_run_takes_4_byte_chunks():
    src = _source(_gather(128, 256, 32, 250), "cuda -arch=sm_90a")  # 250: even, no multiple of 8
    assert "tc_cp_async16(tile" not in src and src.count("tc_cp_async4(tile") == 3


@pytest.mark.parametrize(
    ("bound", "transpose", "reason"),
    [
        (251, False, "its guard is not the same for every element of a run"),
        (256, True, "the elements of a thread's run are not consecutive in both buffers"),
    ],  # fmt: skip
)
def test_gathers_that_do_not_qualify_stay_synchronous_and_say_why(bound, transpose, reason, capsys):
    with settings.override(TILECRAFT_VERBOSE=True):
        src = _source(_gather(128, 256, 32, bound, transpose), "cuda -arch=sm_90a")
    assert "tc_cp_async16(tile" not in src and "tc_cp_async4(tile" not in src
    assert (
        f"a gather into tile in the T.Pipelined loop stays synchronous: {reason}" in capsys.readouterr().err
    )


# ---------------------------------------------------------------- the run algebra, numerically

LANES = 8


def _vars():
    q, t, a, b = (E.Var(dt.int32, name) for name in ("q", "t", "a", "b"))
    return q, t, a, b


def _expressions(q, t, a, b):
    k = E.add(E.add(E.mul(a, 32), E.mul(b, 8)), t)  # a run of 8 starting on a multiple of 8
    return [
        E.floordiv(k, 384), E.floormod(E.floordiv(k, 128), 3), E.floormod(k, 128), E.floordiv(k, 8),
        E.floormod(k, 16), E.floordiv(E.add(k, 16), 48), E.sub(E.floormod(k, 24), 3),
        E.Call(dt.int32, "bitwise_and", (E.add(E.mul(q, 8), t), E.const(7))),
        E.Call(dt.int32, "shift_right", (E.add(E.mul(q, 8), t), E.const(3))),
        E.mul(E.floormod(k, 64), 3),
    ]  # fmt: skip


def test_linear_forms_agree_with_the_evaluator():
    q, t, a, b = _vars()
    ranges = {q: Range(E.const(0), E.const(4)), t: Range(E.const(0), E.const(LANES)),
              a: Range(E.const(0), E.const(100)), b: Range(E.const(0), E.const(4))}  # fmt: skip
    run = _Run(t, LANES, Analyzer(ranges))
    rng = random.Random(5)
    for e in _expressions(q, t, a, b):
        form = run.linear(e)
        assert form is not None, e
        base, c = form
        for _ in range(40):
            env = {q: rng.randrange(4), a: rng.randrange(100), b: rng.randrange(4)}
            for lane in range(LANES):
                assert evaluate(e, {**env, t: lane}) == evaluate(base, env) + c * lane, (e, env, lane)


def test_a_division_that_a_run_crosses_has_no_linear_form():
    q, t, a, b = _vars()
    run = _Run(t, LANES, Analyzer({t: Range(E.const(0), E.const(LANES))}))
    k = E.add(E.mul(a, 4), t)  # runs start on multiples of 4 only: k // 8 changes inside a run
    assert run.linear(E.floordiv(k, 8)) is None
    assert run.linear(E.floormod(E.add(E.mul(a, 8), t), 6)) is None  # 6 is no multiple of 8


def test_guards_are_invariant_only_where_no_bound_falls_inside_a_run():
    q, t, a, b = _vars()
    run = _Run(t, LANES, Analyzer({t: Range(E.const(0), E.const(LANES))}))
    k = E.add(E.mul(a, 8), t)
    assert run.invariant(E.compare(E.LT, k, 144)) is not None
    assert run.invariant(E.compare(E.LT, k, 140)) is None
    assert run.invariant(E.compare(E.GE, k, 16)) is not None
    assert run.invariant(E.compare(E.LE, k, 144)) is None  # k <= 144 holds for t = 0 only at k = 144
    for av, lane in itertools.product(range(30), range(LANES)):
        cond = E.compare(E.LT, k, 144)
        assert evaluate(cond, {a: av, t: lane}) == evaluate(run.invariant(cond), {a: av})
