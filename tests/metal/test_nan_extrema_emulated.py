"""NaN in T.max / T.min and the max/min reductions on the Metal target, run in the emulator: the SIMD-group
reductions (simd_max, simd_min) go through tc_metal.h's NaN-propagating wrappers
(tests/conformance/test_nan_extrema.py has the cases and the NumPy references)."""

from __future__ import annotations

import pytest

from tests.conformance import test_nan_extrema as cases
from tests.metal.conftest import forget, install_fake
from tilecraft.testing import conformance as kit


@pytest.fixture(scope="module")
def backend_ctx(emulator_compiler, emulator_build_dir):
    monkeypatch = pytest.MonkeyPatch()
    module = install_fake(monkeypatch, emulator_build_dir, family=7, compiler=emulator_compiler)
    (pair,) = kit.declared_cases("metal")
    try:
        yield kit.resolve(pair)
    finally:
        assert module.device.committed, "nothing ran on the (emulated) device"
        monkeypatch.undo()
        forget()


@pytest.mark.parametrize("name", sorted(cases.REDUCTIONS))
def test_a_nan_anywhere_in_a_row_gives_nan(backend_ctx, name):
    cases.test_a_nan_anywhere_in_a_row_gives_nan(backend_ctx, name, "float32")


def test_a_nan_already_in_the_running_result_stays(backend_ctx):
    cases.test_a_nan_already_in_the_running_result_stays(backend_ctx, "reduce_max", "float32")


def test_elementwise_max_and_min_give_nan_for_a_nan_on_either_side(backend_ctx):
    cases.test_elementwise_max_and_min_give_nan_for_a_nan_on_either_side(backend_ctx, "float32")


def test_the_simd_group_reduction_is_the_one_that_ran(backend_ctx):
    import tilecraft

    kernel = tilecraft.compile(cases._reduction(cases.T.reduce_max, "float32", True), ctx=backend_ctx)
    assert "tc_simd_max_f32(" in kernel.get_kernel_source()
