"""Every script in examples/ and every `python` block in the user docs runs on the CPU target.

Each example compares its kernels with a float64 NumPy reference and exits non-zero when an error is
too large, so exit code 0 means the numbers are right. Scripts run in a subprocess, as a user runs
them, with `--target cpu --small` and TILECRAFT_TARGET=cpu (a script that takes no options, like
quickstart.py, ignores them but still runs on the CPU), sharing the test session's isolated kernel
cache (inherited through TILECRAFT_CACHE_DIR).

The docs' `python` blocks are complete programs (they assert what the text claims); each is written to
a file, since kernels are parsed from their source, and run with TILECRAFT_TARGET=cpu so that "auto"
means the CPU whatever else the machine has.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
ARGS = ("--target", "cpu", "--small")
TIMEOUT_S = 300
DOCS = ("quickstart.md", "cpu.md", "targets.md")
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def doc_blocks() -> list[tuple[str, str]]:
    """(id, source) of every python block in the user docs, numbered per file from 1."""
    blocks = []
    for name in DOCS:
        path = ROOT / "docs" / name
        if path.exists():
            for k, match in enumerate(_PYTHON_BLOCK.finditer(path.read_text()), 1):
                blocks.append((f"{path.stem}-{k}", match.group(1)))
    return blocks


DOC_BLOCKS = doc_blocks()


@pytest.fixture(scope="module")
def cpu_target_available():
    from tilecraft.backend import create_backend_context
    from tilecraft.errors import TilecraftError

    try:
        create_backend_context("cpu")
    except TilecraftError as err:
        pytest.skip(f"the CPU target cannot run here: {err}")


def run_python(script: Path, *args: str, **env_overrides: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=script.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def _output(result: subprocess.CompletedProcess) -> str:
    return f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def test_examples_exist():
    """The glob below found the scripts (an empty parametrization would pass silently)."""
    assert len(EXAMPLES) >= 5, [p.name for p in EXAMPLES]


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script: Path, cpu_target_available):
    """The script exits 0: its kernels compiled, ran and matched the NumPy reference."""
    result = run_python(script, *ARGS, TILECRAFT_TARGET="cpu")  # also for scripts that take no --target
    output = _output(result)
    assert result.returncode == 0, f"{script.name} {' '.join(ARGS)} exited {result.returncode}\n{output}"
    assert "rel. error" in result.stdout, f"{script.name} printed no error measurement\n{output}"


def test_docs_have_python_blocks():
    assert len(DOC_BLOCKS) >= 5, [name for name, _ in DOC_BLOCKS]


@pytest.mark.parametrize("source", [s for _, s in DOC_BLOCKS], ids=[name for name, _ in DOC_BLOCKS])
def test_doc_block_runs(source: str, tmp_path: Path, cpu_target_available):
    """The block runs to completion as a program of its own."""
    if re.search(r"^import torch", source, re.MULTILINE) and importlib.util.find_spec("torch") is None:
        pytest.skip("the block needs torch, which is not installed")
    script = tmp_path / "snippet.py"
    script.write_text(source)
    result = run_python(script, TILECRAFT_TARGET="cpu")
    assert result.returncode == 0, f"the block exited {result.returncode}\n{source}\n{_output(result)}"
