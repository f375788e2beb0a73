"""Where the checkout lives, and what its folder is called, changes nothing (clones are often named
`tilecraft`, the name of the package inside them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _env_without_pythonpath() -> dict[str, str]:
    """The environment of a fresh shell: PYTHONPATH (which a test run may set to the checkout) would put
    the package on sys.path ahead of what the test sets up."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


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

# Only this checkout's package: drop other installs (an editable finder, or a sys.path entry holding it).
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path[:] = [p for p in sys.path if not __import__("os").path.isfile(p + "/tilecraft/__init__.py")]
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
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=_env_without_pythonpath(),
        capture_output=True,
        text=True,
        timeout=300,
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


def test_python_m_tilecraft_beside_a_clone_folder_names_it(tmp_path):
    """`python -m tilecraft` started beside a folder named tilecraft (with a finder-based install) says
    why, instead of "cannot import name '__version__' from 'tilecraft' (unknown location)"."""
    (tmp_path / "tilecraft").mkdir()
    script = EDITABLE_SCRIPT.format(root=str(ROOT), package=str(ROOT / "tilecraft"))
    script = script.replace("import tilecraft.language as T\nprint(tilecraft.jit)", "import runpy\n")
    script += "runpy.run_module('tilecraft', run_name='__main__', alter_sys=True)\n"
    (tmp_path / "run_cli.py").write_text(textwrap.dedent(script))
    done = subprocess.run(
        [sys.executable, "run_cli.py", "--version"],
        cwd=tmp_path,
        env=_env_without_pythonpath(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert "not the tilecraft package" in done.stderr.strip().splitlines()[-1], done.stderr


# Run from the folder that holds the clone: the clone's folder is there, named tilecraft.
SCRIPT_BESIDE_THE_CLONE = """
import site, sys
# Only the editable install built by the test: drop other installs of tilecraft (an editable finder, or
# a .pth path) from this interpreter.
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path[:] = [p for p in sys.path if not __import__("os").path.isfile(p + "/tilecraft/__init__.py")]
for name in [m for m in sys.modules if m.startswith("__editable__")]:
    del sys.modules[name]  # the wheel's finder module may have the same name as another install's
sys.path.insert(0, {site_dir!r})  # ahead of other site-packages, which may hold a finder module of that name
site.addsitedir({site_dir!r})  # what installing the wheel does: runs its .pth files
import tilecraft
import tilecraft.language as T
print(tilecraft.__file__)
print(tilecraft.jit, T.Kernel)
"""


def test_an_editable_install_is_found_beside_a_clone_named_tilecraft(tmp_path):
    """`pip install -e .` (the README's quick start) in a clone named tilecraft, then a script in the
    clone's parent folder: `import tilecraft` is the package, not the clone's folder. The editable wheel
    is built with the project's own build backend, and its .pth files are processed as site does."""
    setuptools = pytest.importorskip("setuptools", reason="building the editable wheel needs setuptools")
    if int(setuptools.__version__.split(".")[0]) < 68:  # pyproject.toml's build requirement
        pytest.skip(
            f"building the editable wheel needs setuptools>=68, this Python has {setuptools.__version__}"
        )
    clone = tmp_path / "tilecraft"
    clone.mkdir()
    shutil.copytree(ROOT / "tilecraft", clone / "tilecraft", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, clone)
    wheels = tmp_path / "wheels"
    build = f"from setuptools import build_meta; print(build_meta.build_editable({str(wheels)!r}))"
    done = subprocess.run(
        [sys.executable, "-c", build], cwd=clone, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site_dir = tmp_path / "site-packages"
    with zipfile.ZipFile(wheels / done.stdout.strip().splitlines()[-1]) as wheel:
        wheel.extractall(site_dir)
    (tmp_path / "my_kernel.py").write_text(SCRIPT_BESIDE_THE_CLONE.format(site_dir=str(site_dir)))
    ran = subprocess.run(
        [sys.executable, "my_kernel.py"],
        cwd=tmp_path,
        env=_env_without_pythonpath(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines()[0] == str(clone / "tilecraft" / "__init__.py"), ran.stdout
