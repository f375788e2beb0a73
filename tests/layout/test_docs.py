"""docs/layouts.md stays true: every `python` block runs, and every public name of the layout modules is
mentioned on the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tilecraft.cuda.intrinsics import mma_layouts
from tilecraft.layout import draw, fragment, linear

DOC = Path(__file__).resolve().parents[2] / "docs" / "layouts.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def python_blocks() -> list[pytest.param]:
    found = [m.group(2) for m in FENCE.finditer(DOC.read_text()) if m.group(1) == "python"]
    return [pytest.param(code, id=f"block{k}") for k, code in enumerate(found)]


@pytest.mark.parametrize("code", python_blocks())
def test_python_block_runs(code):
    exec(compile(code, str(DOC), "exec"), {"__name__": "layouts_doc"})


DOCUMENTED_ELSEWHERE = {"FRAGMENT_INS", "owners", "encode_png"}
DOCUMENTED_ELSEWHERE |= {"fragment_dims", "thread_dims", "linear_from_fragment", "linear_from_layout"}
DOCUMENTED_ELSEWHERE |= {"mma_operand_a_coords", "mma_operand_b_coords", "render_fragment"}


@pytest.mark.parametrize("module", [linear, fragment, mma_layouts, draw], ids=lambda m: m.__name__)
def test_public_names_are_documented(module):
    text = DOC.read_text()
    missing = [name for name in module.__all__ if name not in DOCUMENTED_ELSEWHERE and name not in text]
    assert not missing
