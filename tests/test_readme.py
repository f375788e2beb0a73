"""The README's quick start is two commands for a fresh machine, and `.ci/run` runs the second; its
kernel example shows the kernel."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"^```bash\n(.*?)^```", section, re.DOTALL | re.MULTILINE)]


def test_quick_start_is_two_one_line_commands_in_a_virtual_environment():
    """A system Python (Debian's, Homebrew's) refuses `pip install` outside a virtual environment, so each
    command makes one and uses its pip and python."""
    commands = quick_start_commands()
    assert len(commands) == 2, commands
    for command in commands:
        assert "\n" not in command, command
        assert command.startswith("python3 -m venv .venv && .venv/bin/pip install -e "), command
        assert " python3 -m pip" not in command and " pip install" not in command, command
    assert commands[0].endswith(".venv/bin/python examples/quickstart.py"), commands[0]
    assert "'.[test]'" in commands[1] and commands[1].endswith(".venv/bin/python -m pytest -n 2 -q")


def test_ci_runs_the_readme_test_command():
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert lines[-1] == quick_start_commands()[1], lines[-1]


def test_the_kernel_example_prints_the_kernel_not_the_header(tmp_path):
    """The generated CPU source starts with the target's helper header (hundreds of lines); the README's
    kernel example prints the kernel function, from its first line."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## A kernel", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"^```python\n(.*?)^```", section, re.DOTALL | re.MULTILINE)
    (tmp_path / "kernel.py").write_text(block)
    env = dict(os.environ, TILECRAFT_TARGET="cpu")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    done = subprocess.run(
        [sys.executable, "kernel.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    first_error_line, source = done.stdout.split("\n", 1)
    assert float(first_error_line.split()[-1]) < 1e-2, first_error_line
    assert re.match(r"static void main_kernel0\(float\* A, float\* B, float\* C,", source), source[:300]
    assert "T.gemm" not in source and "#endif" not in source and "tc_matmul_f32" in source, source[:300]
