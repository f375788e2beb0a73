"""The fuzz tooling without a target: the hunt's minimizer and the example-count knob."""

from __future__ import annotations

import pytest

from tests.fuzz.cases import elementwise_case
from tests.fuzz.choices import RandomChooser
from tests.fuzz.hunt import minimize, subtrees
from tests.fuzz.test_differential import EXAMPLES_VARIABLE, requested_examples


def ops(spec) -> list[str]:
    return [node.op for expr in spec.exprs for _, node in subtrees(expr)]


def test_minimize_keeps_the_failing_operation_and_drops_the_rest():
    spec = next(
        case.spec
        for case in (elementwise_case(RandomChooser(seed)) for seed in range(200))
        if "shl" in ops(case.spec) and len(ops(case.spec)) > 12
    )
    small = minimize(spec, lambda candidate: "shl" in ops(candidate), budget=2000)
    assert "shl" in ops(small)
    assert len(ops(small)) < len(ops(spec))
    assert small.layout == "direct1d" and not small.dynamic and len(small.exprs) == 1
    # The shift and its operands are all that is left: the value shifted and the amount.
    assert len(ops(small)) <= 4, elementwise_text(small)


def elementwise_text(spec) -> str:
    return spec.exprs[0].text([f"X{k}" for k in range(len(spec.input_dtypes))])


def test_the_example_count_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(EXAMPLES_VARIABLE, raising=False)
    assert requested_examples() is None
    monkeypatch.setenv(EXAMPLES_VARIABLE, "300")
    assert requested_examples() == 300
    monkeypatch.setenv(EXAMPLES_VARIABLE, "many")
    with pytest.raises(pytest.UsageError, match="TILECRAFT_FUZZ_EXAMPLES='many'.*positive number"):
        requested_examples()
