"""The conformance kit's rule for lowering errors: a skip only for a limit the backend declares."""

from __future__ import annotations

import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import LoweringError
from tilecraft.testing import conformance as kit


def divergent_barrier_kernel():
    @T.prim_func
    def skips_a_barrier(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            if tx < 64:
                A[tx] = 1.0
                T.sync_threads()

    return skips_a_barrier


@pytest.fixture(scope="module")
def host_ctx():
    return tilecraft.create_backend_context("c")


def test_a_declared_limit_is_a_skip(host_ctx):
    with pytest.raises(kit.Unsupported) as info:
        kit.compile_kernel(divergent_barrier_kernel(), host_ctx)
    assert info.value.key == "feature:divergent-barrier"
    assert str(info.value).startswith(
        "declared unsupported by cpu (feature:divergent-barrier: a block runs as one thread"
    )


def test_a_lowering_error_without_a_limit_fails(host_ctx):
    err = LoweringError("tile op Foo is broken")
    assert kit.declared(err, host_ctx) is err


def test_a_limit_the_manifest_does_not_declare_fails_and_says_so(host_ctx):
    found = kit.declared(LoweringError("no bfloat16 here", unsupported="dtype:bfloat16"), host_ctx)
    assert isinstance(found, kit.UndeclaredLimit)
    assert (
        "limit 'dtype:bfloat16', which backend 'cpu' does not declare (declared: feature:divergent-barrier)"
        in str(found)
    )


def test_verdicts(host_ctx):
    def unsupported():
        raise kit.declared(LoweringError("x", unsupported="feature:divergent-barrier"), host_ctx)

    def mismatch():
        raise AssertionError("output 2 relative error 1e-1 > 1e-5")

    def broken():
        raise LoweringError("tile op Foo is broken")

    assert kit.verdict_of(lambda: None) == kit.Verdict(kit.PASS)
    assert kit.verdict_of(unsupported).status == kit.SKIP
    assert kit.verdict_of(mismatch) == kit.Verdict(kit.FAIL, "output 2 relative error 1e-1 > 1e-5")
    assert kit.verdict_of(broken) == kit.Verdict(kit.FAIL, "LoweringError: tile op Foo is broken")


def test_a_case_runs_to_a_verdict(host_ctx):
    case = next(c for c in kit.CASES if c.name == "elementwise_add_ragged")
    assert kit.run_case(case, host_ctx) == kit.Verdict(kit.PASS)


def test_case_names_are_unique():
    names = [c.name for c in kit.CASES] + list(kit.CHECKS)
    assert len(names) == len(set(names))
