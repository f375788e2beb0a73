"""The Before/Expected helper: it fails when the pass's output differs, refuses tests that cannot fail,
and says which passes a pipeline has."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass


@T.prim_func
def edge(A: T.Tensor((100,), "float32")):
    with T.Kernel(2, threads=64) as bx:
        for i in T.Parallel(64):
            A[bx * 64 + i] = 1.0


GUARDED = """
@T.prim_func
def edge(A: T.Tensor((100,), "float32")):
    with T.Kernel(2, threads=64) as bx:
        for i in T.Parallel(64):
            if bx * 64 + i < 100:
                A[bx * 64 + i] = 1.0
"""


def test_expected_text_that_parses_is_compared_structurally():
    assert_pass("c", "guard-accesses", edge, GUARDED)
    assert_pass("c", "guard-accesses", edge, GUARDED.replace("as bx", "as b").replace("bx *", "b *"))


def test_a_different_output_fails_with_a_diff():
    with pytest.raises(
        AssertionError, match=r"did not give the expected IR:\n--- expected\n\+\+\+ actual"
    ) as info:
        assert_pass("c", "guard-accesses", edge, GUARDED.replace("< 100", "< 99"))
    assert "-            if bx * 64 + i < 99:" in str(info.value)
    assert "+            if bx * 64 + i < 100:" in str(info.value)


def test_an_expected_equal_to_the_input_is_refused():
    with pytest.raises(AssertionError, match="equals its input: write UNCHANGED"):
        assert_pass("c", "guard-accesses", edge, edge)


def test_unchanged_fails_when_the_pass_changes_the_module():
    with pytest.raises(AssertionError, match="'guard-accesses' changed a module it must keep"):
        assert_pass("c", "guard-accesses", edge, UNCHANGED)


def test_lowered_ir_parses_back_and_is_compared_structurally():
    out = run_pass("c", "split-host-device", edge)
    text = out.script()
    assert "T.ir.KernelCall(" in text
    assert_pass("c", "split-host-device", edge, text)
    with pytest.raises(AssertionError, match="did not give the expected IR"):
        assert_pass("c", "split-host-device", edge, text.replace("grid=(2,)", "grid=(3,)"))


def test_an_expected_text_that_does_not_parse_is_an_error():
    with pytest.raises(AssertionError, match="expected IR of 'guard-accesses' does not parse"):
        assert_pass("c", "guard-accesses", edge, "def f(:\n")


def test_prefix_runs_the_earlier_passes_first():
    # plan-block-storage needs the host/device split the earlier passes make
    out = run_pass("c", "plan-block-storage", edge, prefix=True)
    assert [f.attr("tilecraft.role") for f in out.functions] == ["host", "device"]


def test_an_unknown_pass_names_the_pipelines_passes():
    with pytest.raises(
        ValueError, match="pipeline 'c' has no pass 'no-such-pass'; its passes: check-target-support, flatten-thread-dims, lower-thread-allreduce, run-work-items"
    ):
        run_pass("c", "no-such-pass", edge)


def test_pass_tests_need_a_docstring_and_a_target():
    with pytest.raises(ValueError, match="docstring names the invariant"):
        pass_test("simplify", "c")(lambda target: None)
    with pytest.raises(ValueError, match="at least one target"):
        pass_test("simplify")
