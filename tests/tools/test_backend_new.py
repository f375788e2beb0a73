"""`tilecraft backend new`: the package it writes, and (what CI runs) that package installed with pip and
passing `tilecraft backend check` as generated, without a file of tilecraft edited."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tilecraft.backend.registry import registered_backends
from tilecraft.errors import BackendError
from tilecraft.tools.cli import main
from tilecraft.tools.scaffold import scaffold

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("language/__init__.py", "target.py", "pipeline.py", "op.py", "codegen.py", "backend.py")


@pytest.mark.parametrize("template", sorted(k for m in registered_backends() for k in m.target_kinds))
def test_the_package_has_every_layer_and_its_entry_point(template, tmp_path):
    out = tmp_path / "pkg"
    written = {p.relative_to(out).as_posix() for p in scaffold("tcnew", template, out)}
    assert {f"tilecraft_tcnew/{layer}" for layer in LAYERS} <= written
    assert {"pyproject.toml", "README.md", "tests/test_backend.py", "tests/test_conformance.py"} <= written
    for path in out.rglob("*.py"):
        ast.parse(path.read_text(), str(path))  # valid Python, whatever the template
    pyproject = (out / "pyproject.toml").read_text()
    assert (
        '[project.entry-points."tilecraft.backends"]\ntcnew = "tilecraft_tcnew.backend:MANIFEST"' in pyproject
    )
    pipeline = (out / "tilecraft_tcnew/pipeline.py").read_text()
    assert "from tilecraft_tcnew.target import KIND" in pipeline
    assert "from tilecraft_tcnew.op import OP_TABLE" in pipeline
    readme = (out / "README.md").read_text()
    assert all(f"\n{n}. **" in readme for n in range(1, 8)), "the README walks through seven layers"
    target = ast.parse((out / "tilecraft_tcnew/target.py").read_text())
    assert any(isinstance(n, ast.FunctionDef) and n.name == "capabilities" for n in target.body)
    assert any(k.arg == "capabilities" for n in ast.walk(target) if isinstance(n, ast.Call) for k in n.keywords), (
        "the kind declares its capabilities"
    )


@pytest.mark.parametrize("name, words", [
    ("cpu", "'cpu' is already a registered backend, target kind or alias"),
    ("My-Backend", "backend name 'My-Backend' must match"),
])  # fmt: skip
def test_a_name_that_cannot_be_a_new_kind_is_refused(name, words, tmp_path):
    with pytest.raises(BackendError, match=words):
        scaffold(name, "c", tmp_path / "pkg")


def test_an_existing_folder_is_not_overwritten(tmp_path, capsys):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "notes.txt").write_text("mine\n")
    assert main(["backend", "new", "tcnew", "--from", "c", "--out", str(tmp_path / "pkg")]) == 1
    assert "exists and is not empty; choose another --out" in capsys.readouterr().err
    assert (tmp_path / "pkg" / "notes.txt").read_text() == "mine\n"


def _build_isolation_flags() -> list[str]:
    """Build with this environment's setuptools when it can make wheels by itself (no download)."""
    if importlib.util.find_spec("wheel") is not None:
        return ["--no-build-isolation"]
    try:
        import setuptools
    except ImportError:
        return []
    major, minor = (int(p) for p in setuptools.__version__.split(".")[:2])
    return ["--no-build-isolation"] if (major, minor) >= (70, 1) else []


def test_a_generated_backend_installs_and_passes_its_check(tmp_path):
    """What CI runs: `backend new` into a temporary folder, `pip install` it (into a folder of its own,
    so no other process on the machine sees the plugin), `backend check` it, and run its own tests."""
    out, site = tmp_path / "tilecraft-tcgen", tmp_path / "site"
    assert main(["backend", "new", "tcgen", "--from", "c", "--out", str(out)]) == 0
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", *_build_isolation_flags()]
    done = subprocess.run(
        [*install, "--target", str(site), str(out)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (site / "tilecraft_tcgen" / "backend.py").exists()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(site)]))
    check = subprocess.run([sys.executable, "-m", "tilecraft", "backend", "check", "tcgen"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    for row in (
        "entry point",
        "manifest",
        "boundary: shared code",
        "boundary: public API",
        "conformance tcgen-cc",
    ):
        assert any(line.startswith(row) and " pass " in line for line in check.stdout.splitlines()), (
            check.stdout
        )
    assert any(line.startswith("target kind tcgen") and "capabilities declared" in line
               for line in check.stdout.splitlines()), check.stdout  # fmt: skip
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                            "-k", "test_backend or elementwise_add_ragged or dynamic_shapes"],
                           cwd=out, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert tests.returncode == 0 and "5 passed" in tests.stdout, tests.stdout + tests.stderr
