"""Kernels whose parameters, buffers, loop variables and dynamic dims are named after C macros, C and
C++ library names and MSL's built-ins (tests/conformance/test_reserved_names.py) type-check as MSL
against the metal_stdlib shim and run in the emulator."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
from tests.conformance.test_reserved_names import BLOCK, NAMES, N, build, reference
from tests.metal.conftest import forget, install_fake
from tests.metal.msl import find_compiler, typecheck
from tilecraft import settings
from tilecraft.testing import conformance as kit


@pytest.fixture(scope="module")
def compiler():
    found = find_compiler()
    if found is None:
        pytest.skip("no C++ compiler (clang++ or g++) to type-check MSL with; set TILECRAFT_MSL_CXX")
    return found


def test_reserved_names_typecheck(compiler):
    with settings.override(TILECRAFT_DISABLE_CACHE=True):  # the kernels differ only in their names
        sources = {f"names_{index}": tilecraft.lower(build(index), target="metal -family=apple7")
                   .source("metal-source") for index in range(len(NAMES))}  # fmt: skip
    assert "v_device" in "".join(sources.values())
    errors = typecheck(sources, compiler)
    assert not errors, "\n".join(f"{name}: {messages[:3]}" for name, messages in errors.items())


@pytest.mark.parametrize("index", [NAMES.index("INFINITY"), NAMES.index("device"), NAMES.index("min")])
def test_reserved_names_run_in_the_emulator(index, emulator_compiler, emulator_build_dir):
    monkeypatch = pytest.MonkeyPatch()
    install_fake(monkeypatch, emulator_build_dir, family=7, compiler=emulator_compiler)
    try:
        (pair,) = kit.declared_cases("metal")
        ctx = kit.resolve(pair)
        with settings.override(TILECRAFT_DISABLE_CACHE=True):
            kernel = tilecraft.compile(build(index), ctx=ctx)
        backend = ctx.execution_backend()
        x = np.random.default_rng(index).standard_normal(N).astype(np.float32)
        out = [backend.to_device(np.full(size, np.nan, np.float32)) for size in (N, -(-N // BLOCK))]
        kernel(backend.to_device(x), *out, 0.75)
    finally:
        monkeypatch.undo()
        forget()
    expected_y, expected_top = reference(x, 0.75)
    np.testing.assert_allclose(backend.to_host(out[0]), expected_y, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(backend.to_host(out[1]), expected_top, rtol=2e-5, atol=1e-6)
