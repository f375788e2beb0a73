"""Where the checkout lives, and what its folder is called, changes nothing (clones are often named
`tilecraft`, the name of the package inside them)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_located_error_tests_pass_in_a_checkout_named_tilecraft(tmp_path):
    """The language tests that inspect tracebacks tell tilecraft's frames from the tests' own by the
    package's directory, not by "/tilecraft/" in the path (which every file of such a clone has)."""
    clone = tmp_path / "tilecraft"
    clone.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    for part in ("tilecraft", "tests"):
        shutil.copytree(ROOT / part, clone / part, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", clone)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
               "tests/language/test_errors.py"]  # fmt: skip
    done = subprocess.run(command, cwd=clone, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
