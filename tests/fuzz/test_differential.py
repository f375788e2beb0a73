"""Differential fuzzing: random elementwise, reduction and GEMM kernels on every available target,
compared with NumPy.

Each example generates a kernel as source text (tests/fuzz/cases.py), compiles it for the target, runs
it on fresh random inputs with poisoned outputs and checks every output element: integers exactly
(wrap-around at the declared width, as in NumPy), floats within an error bound derived from the
expression (tests/fuzz/expressions.py). A failure prints the kernel source, the sizes, and the first
mismatching elements with the inputs there.

By default (CI) a fixed, derandomized set of examples runs: a few dozen kernels per target, a couple of
minutes. `TILECRAFT_FUZZ_EXAMPLES=N` runs N random examples per family and target, and shrinks a
failure to a small kernel; `python -m tests.fuzz.hunt` keeps going after failures and lists them all.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import strategies as st

from tests.fuzz.cases import FAMILIES
from tests.fuzz.choices import HypothesisChooser
from tests.fuzz.runner import FuzzTarget, Unsupported, problems, report

EXAMPLES_VARIABLE = "TILECRAFT_FUZZ_EXAMPLES"  # a test-only knob, so not in tilecraft's settings registry
CI_EXAMPLES = {"elementwise": 8, "reduction": 4, "gemm": 4}


def requested_examples() -> int | None:
    """The example count asked for in the environment, or None for the CI default."""
    text = os.environ.get(EXAMPLES_VARIABLE, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise pytest.UsageError(
            f"{EXAMPLES_VARIABLE}={text!r}: give a positive number of examples per family"
        )
    return int(text)


def fuzz_settings(family: str):
    common = dict(
        deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
    )
    count = requested_examples()
    if count is None:  # reproducible and bounded: no shrinking, every compile costs a second or more
        return settings(max_examples=CI_EXAMPLES[family], derandomize=True, phases=[Phase.generate], **common)
    return settings(
        max_examples=count,
        derandomize=False,
        phases=[Phase.generate, Phase.shrink],
        print_blob=True,
        **common,
    )


def check(family: str, target: FuzzTarget, data) -> None:
    choose = HypothesisChooser(data)
    case = FAMILIES[family](choose)
    seed = choose.integer(0, 2**32 - 1)
    try:
        found = problems(case, target.ctx, seed)
    except Unsupported:  # a documented limit of this target: the example does not apply here
        reject()
    if found:
        raise AssertionError(report(case, target.ctx, seed, found))


@fuzz_settings("elementwise")
@given(data=st.data())
def test_elementwise_matches_numpy(fuzz_target, data):
    check("elementwise", fuzz_target, data)


@fuzz_settings("reduction")
@given(data=st.data())
def test_reduction_matches_numpy(fuzz_target, data):
    check("reduction", fuzz_target, data)


@fuzz_settings("gemm")
@given(data=st.data())
def test_gemm_matches_numpy(fuzz_target, data):
    check("gemm", fuzz_target, data)
