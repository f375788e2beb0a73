"""Pieces of the common mistakes' messages that the snapshots (test_common_mistakes.py) do not reach."""

from __future__ import annotations

import numpy as np
import pytest

from tilecraft.errors import ArgumentError, short_repr
from tilecraft.ir import expr as E
from tilecraft.ir.expr import IRError


def test_an_array_is_shown_by_shape_and_dtype_not_by_its_elements():
    big = np.arange(100_000, dtype=np.float32).reshape(100, 1000)
    assert short_repr(big) == "numpy.ndarray of shape (100, 1000) and dtype float32"
    with pytest.raises(IRError) as info:
        E.convert(big)
    assert len(str(info.value)) < 120 and "shape (100, 1000)" in str(info.value)


def test_other_values_are_cut_short():
    assert short_repr("x" * 500).endswith("...") and len(short_repr("x" * 500)) == 80
    assert short_repr(3) == "3" and short_repr(np.float32(2.5)) == "np.float32(2.5)"


def test_a_torch_tensor_of_the_wrong_dtype_gets_a_torch_conversion(tmp_path):
    torch = pytest.importorskip("torch")
    from tests.errors.test_common_mistakes import PRELUDE  # the kernel the snapshots call

    namespace: dict = {}
    script = tmp_path / "kernel.py"
    script.write_text(PRELUDE)
    exec(compile(script.read_text(), str(script), "exec"), namespace)
    kernel = namespace["add"](256, 128)
    a = torch.rand(256, 128, dtype=torch.float64)
    with pytest.raises(ArgumentError, match=r"got float64; convert it first: A\.to\(torch\.float32\)$"):
        kernel(a, torch.rand(256, 128))
