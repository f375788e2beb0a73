"""The conformance kernels also pass when blocks run serially (TILECRAFT_OPENMP=0)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import tilecraft
from tests.conformance.test_conformance import rel_error
from tilecraft import settings
from tilecraft.testing.conformance.cases import CASES


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_without_openmp(case):
    with settings.override(TILECRAFT_OPENMP=False):
        kernel = tilecraft.compile(case.build(), target="cpu")
        assert kernel.built.entry.meta["openmp"] is False
        arrays = case.inputs(np.random.default_rng(zlib.crc32(case.name.encode())))
        expected = case.reference([a.copy() for a in arrays])
        kernel(*arrays)
    for index, ref in expected.items():
        assert rel_error(arrays[index], ref) <= case.tol
