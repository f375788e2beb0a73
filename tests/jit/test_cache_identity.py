"""Kernels that differ only in what a user reads (parameter names, the file and line of a statement) never
share a lowering: each one's generated code, argument errors and run-time errors show its own names and
lines (issue 31, item 9). The disk cache is shared by every test here, as it is by a user's kernels."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tilecraft
from tilecraft.errors import ArgumentError
from tilecraft.execution.cc import toolchain
from tilecraft.execution.cc.backend import OutOfBoundsError

pytestmark = pytest.mark.skipif(toolchain.find_compiler_path() is None, reason="no C compiler installed")

BOUNDS_CHECK = {"tilecraft.bounds_check": True}


def kernel_from(path: Path, text: str):
    """The `shift` kernel defined by `text`, written to `path` (so spans and source lines are real)."""
    path.write_text(textwrap.dedent(text))
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - the test's own kernel
    return namespace["shift"]


def shift_source(name: str, blank_lines: int = 0) -> str:
    """A kernel reading one element past the end of its input (a hand-written index in a serial loop, which
    only the bounds check catches); `name` names that input."""
    return "import tilecraft.language as T\n" + "\n" * blank_lines + textwrap.dedent(f"""
        @T.prim_func
        def shift({name}: T.Tensor((64,), "float32"), Out: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                for i in T.serial(64):
                    Out[i] = {name}[i + 1]  # NOTE: reads {name}[64] at i = 63
        """)  # fmt: skip


def compiled(path: Path, text: str, **options):
    return tilecraft.compile(kernel_from(path, text), target="c", **options)


def test_kernels_differing_only_in_a_parameter_name_each_show_their_own(tmp_path):
    first = compiled(tmp_path / "a.py", shift_source("Alpha"), pass_configs=BOUNDS_CHECK)
    second = compiled(tmp_path / "b.py", shift_source("Beta"), pass_configs=BOUNDS_CHECK)
    assert [p.name for p in first.params] == ["Alpha", "Out"]
    assert [p.name for p in second.params] == ["Beta", "Out"]
    assert "Beta" in second.get_kernel_source() and "Alpha" not in second.get_kernel_source()
    with pytest.raises(ArgumentError, match="parameter 'Beta'"):
        second(np.zeros(3, np.float32), np.zeros(64, np.float32))
    with pytest.raises(OutOfBoundsError, match="buffer Beta at .*b.py"):
        second(np.ones(64, np.float32), np.zeros(64, np.float32))


def test_kernels_differing_only_in_their_lines_report_their_own_file_and_line(tmp_path):
    errors = []
    for name, blank in (("early.py", 0), ("late.py", 7)):
        kernel = compiled(tmp_path / name, shift_source("A", blank), pass_configs=BOUNDS_CHECK)
        with pytest.raises(OutOfBoundsError) as info:
            kernel(np.ones(64, np.float32), np.zeros(64, np.float32))
        errors.append(str(info.value))
    lines = [re.search(r"\.py:(\d+):", e) for e in errors]
    assert "early.py" in errors[0] and "late.py" in errors[1]
    assert int(lines[1].group(1)) == int(lines[0].group(1)) + 7


def test_a_kernel_whose_line_text_changed_reports_the_new_text(tmp_path):
    """The bounds-check message quotes the source line: an edit that keeps the structure (a comment) must
    not be served the old text."""
    path = tmp_path / "edited.py"
    for note in ("first version", "second version"):
        kernel = compiled(path, shift_source("A").replace("NOTE", note), pass_configs=BOUNDS_CHECK)
        with pytest.raises(OutOfBoundsError, match=note):
            kernel(np.ones(64, np.float32), np.zeros(64, np.float32))


def test_renamed_kernels_still_compute_the_same(tmp_path):
    """Keying on names costs a lowering, never a wrong answer: both kernels run, on fresh inputs."""
    source = shift_source("X").replace("[i + 1]", "[i] * 2.0")
    for i, name in enumerate(("X", "Y")):
        kernel = compiled(tmp_path / f"k{i}.py", source.replace("X", name))
        a = np.random.default_rng(i).standard_normal(64).astype(np.float32)
        out = np.full(64, np.nan, np.float32)
        kernel(a, out)
        np.testing.assert_allclose(out, a.astype(np.float64) * 2.0, rtol=1e-6)
