"""Every script in examples/ runs on the CPU target (the docs' `python` blocks: tests/docs/test_code_blocks.py).

Each example compares its kernels with a float64 NumPy reference and exits non-zero when an error is
too large, so exit code 0 means the numbers are right. Scripts run in a subprocess, as a user runs
them, with `--target cpu --small` and TILECRAFT_TARGET=cpu (a script that takes no options, like
quickstart.py, ignores them but still runs on the CPU), sharing the test session's isolated kernel
cache (inherited through TILECRAFT_CACHE_DIR).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
ARGS = ("--target", "cpu", "--small")
TIMEOUT_S = 300


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
