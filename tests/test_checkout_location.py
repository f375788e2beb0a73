"""Where the checkout lives, and what its folder is called, changes nothing (clones are often named
`tilecraft`, the name of the package inside them)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
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


# What an editable install (setuptools' default for this layout) adds: a finder consulted after
# Python's path finder, which maps `tilecraft` and its subpackages to the checkout.
EDITABLE_SCRIPT = """
import sys
from importlib.machinery import PathFinder

class EditableFinder:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname == "tilecraft":
            return PathFinder.find_spec(fullname, [{root!r}])
        if fullname.rpartition(".")[0] == "tilecraft":
            return PathFinder.find_spec(fullname, [{package!r}])
        return None

# Only this checkout's package: drop an editable install of another one.
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
sys.meta_path.append(EditableFinder)
import tilecraft
import tilecraft.language as T
print(tilecraft.jit)
"""


def test_a_clone_folder_hiding_the_package_is_named_in_the_error(tmp_path):
    """A script next to a folder named tilecraft (a clone) imports that folder as `tilecraft`; the first
    tilecraft import that runs package code says so, naming the folder and what to do."""
    (tmp_path / "tilecraft").mkdir()  # the clone: no __init__.py at its root
    (tmp_path / "tilecraft" / "README.md").write_text("a clone of the repository\n")
    script = tmp_path / "kernel_script.py"
    script.write_text(
        textwrap.dedent(EDITABLE_SCRIPT.format(root=str(ROOT), package=str(ROOT / "tilecraft")))
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError"), done.stderr
    for words in (
        str(tmp_path / "tilecraft"),
        "not the tilecraft package",
        "script's folder",
        "another folder",
    ):
        assert words in last, last
