"""docs/autotuning.md stays true: every `python` block is a complete program that runs on the CPU target
(written to a file and run as a user runs it, since kernels are parsed from their source and compile
workers import the main script), and every public name of the autotuner and profiler is on the page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tilecraft.autotuner
import tilecraft.profiler

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "autotuning.md"
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks() -> list[pytest.param]:
    return [pytest.param(code, id=f"block{k}") for k, code in enumerate(FENCE.findall(DOC.read_text()), 1)]


@pytest.mark.parametrize("code", python_blocks())
def test_python_block_runs(code, tmp_path):
    script = tmp_path / "doc_block.py"
    script.write_text(code)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TILECRAFT_TARGET": "cpu", "TILECRAFT_TUNE_WORKERS": "2"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr


UNDOCUMENTED = {"AutoTuneImpl", "CompileArgs", "ProfileArgs", "get_autotune_inputs", "device_timer"}


@pytest.mark.parametrize("module", [tilecraft.autotuner, tilecraft.profiler], ids=lambda m: m.__name__)
def test_public_names_are_documented(module):
    text = DOC.read_text()
    missing = [name for name in module.__all__ if name not in UNDOCUMENTED and name not in text]
    assert not missing
