"""Shared code never names a backend, a target kind or an execution backend.

This guards boundary 2 of ARCHITECTURE.md: dispatch goes through the registries and the objects in the
BackendContext, so adding a backend never touches shared code. Every module under `tilecraft/` is
checked except:

* backend packages: `tilecraft/cpu`, `tilecraft/cuda`, `tilecraft/opencl`, any directory holding a
  `backend.py` manifest (target backends, and concrete execution backends, which live in
  `tilecraft/execution/<name>/backend.py`), and every package in `tilecraft/execution` (an execution
  backend, or a runtime several of them share, such as `cuda_driver`; the shared execution code is the
  modules directly in `tilecraft/execution`), with everything below them;
* `tilecraft/_builtin.py`, the one list of built-in backend packages;
* `tilecraft/compat`, the TileLang compatibility layer: it reproduces TileLang's public names, which
  name CUDA (`requires_cuda`, torch's `"cuda"` device for `--cuda-on-cpu`); it is not compiler code and
  dispatches nothing.

What counts as naming one:

* in any string literal (docstrings and f-string text included), case-insensitively, one of the words
  below, where a word is a run of letters and digits ("cuda-source" and "tilecraft.cuda" count,
  "accumulate" does not);
* a string literal that is exactly "c" (the C target kind's spelling) or "cc" (case-sensitive: "C" is
  the language or a matrix);
* an identifier with one of the words as a part, split at underscores and camelCase
  (`cuda_arch`, `NvrtcBackend`); "c" and "cc" are not checked in identifiers, where they are ordinary
  variable names.

Environment-variable names are not backend names: `TILECRAFT_*` setting names and `$NAME` references
in text are skipped (settings are declared once, in tilecraft/settings.py). Neither are TileLang's public
names that tilecraft keeps for compatibility (`TILELANG_NAMES`: a pass-config key TileLang spells with
its target in it); they are API, not dispatch.

test_boundaries_ast.py checks the same modules on their syntax tree: imports of backend packages,
registered names in code, and hardware constants in the shared SIMT passes.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tilecraft"
NAMED_BACKEND_DIRS = ("cpu", "cuda", "opencl")
EXEMPT_FILES = ("_builtin.py",)
EXEMPT_DIRS = ("compat",)
SHARED_DIRS = ("backend", "execution", "ir", "language", "transform", "layout", "codegen", "jit", "tools")
FORBIDDEN = frozenset({"cuda", "cpu", "opencl", "nvrtc", "nvcc", "pocl", "cc"})
FORBIDDEN_WHOLE = frozenset({"c", "cc"})
FORBIDDEN_IN_IDENTIFIERS = FORBIDDEN - {"cc"}
TILELANG_NAMES = frozenset({"CUDA_KERNELS_OUTPUT_DIR", "cuda.kernels_output_dir"})

_ENV_NAMES = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\bTILECRAFT_[A-Z0-9_]+\b")
_WORD = re.compile(r"[A-Za-z0-9]+")
_IDENT_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


def text_violations(text: str) -> list[str]:
    """Forbidden words in the text of one string literal."""
    if text in TILELANG_NAMES:
        return []
    if text.strip() in FORBIDDEN_WHOLE:
        return [f"string literal {text!r}"]
    words = {w.lower() for w in _WORD.findall(_ENV_NAMES.sub(" ", text))}
    return [f"word {w!r} in string {_clip(text)!r}" for w in sorted(words & FORBIDDEN)]


def identifier_violations(name: str) -> list[str]:
    if name in TILELANG_NAMES:
        return []
    parts = {p.lower() for piece in name.split("_") for p in _IDENT_PART.findall(piece)}
    return [f"identifier {name!r}" for _ in sorted(parts & FORBIDDEN_IN_IDENTIFIERS)][:1]


def _clip(text: str) -> str:
    return text if len(text) < 60 else text[:57] + "..."


def source_violations(source: str) -> list[tuple[int, str]]:
    """(line, problem) for every string literal and identifier in `source` that names a backend."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [(node.lineno, v) for v in text_violations(node.value)]
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME:
            found += [(tok.start[0], v) for v in identifier_violations(tok.string)]
    return sorted(set(found))


def _backend_dirs() -> list[Path]:
    named = [PACKAGE / name for name in (*NAMED_BACKEND_DIRS, *EXEMPT_DIRS)]
    manifests = [m.parent for m in PACKAGE.rglob("backend.py")]
    manifests += [init.parent for init in (PACKAGE / "execution").glob("*/__init__.py")]
    # A stray backend.py must not exempt a shared package itself.
    return named + [
        d for d in manifests if d != PACKAGE and d.relative_to(PACKAGE).as_posix() not in SHARED_DIRS
    ]


def shared_modules() -> list[Path]:
    """Every module of shared code, i.e. outside backend packages and the built-in list."""
    exempt = _backend_dirs()
    return sorted(
        path
        for path in PACKAGE.rglob("*.py")
        if path.name not in EXEMPT_FILES or path.parent != PACKAGE
        if not any(path.is_relative_to(d) for d in exempt)
    )


def test_shared_code_names_no_backend():
    problems = []
    for path in shared_modules():
        relative = path.relative_to(PACKAGE.parent).as_posix()
        for line, problem in source_violations(path.read_text(encoding="utf-8")):
            problems.append(f"{relative}:{line}: {problem}")
    assert not problems, (
        "shared code must not name a backend, target kind or execution backend; dispatch through the "
        "registry and the BackendContext instead, or move the code into the backend's package:\n  "
        + "\n  ".join(problems)
    )


def test_the_check_covers_the_shared_packages():
    checked = {p.relative_to(PACKAGE).parts[0] for p in shared_modules()}
    assert {"backend", "execution", "settings.py"} <= checked
    assert "_builtin.py" not in checked


@pytest.mark.parametrize(
    "source",
    [
        'FORMAT = "cuda-source"',
        'import_name = "tilecraft.cpu"',
        'KIND = "c"',
        'TOOL = "cc"',
        'def f():\n    """Runs on the OpenCL device."""',
        'msg = f"compiled by nvrtc {version}"',
        "def launch_cuda(): pass",
        "class NvrtcBackend: pass",
        "from tilecraft.cuda import language",
        "x.cpu_count",
    ],
)
def test_checker_catches_backend_names(source):
    assert source_violations(source)


@pytest.mark.parametrize(
    "source",
    [
        'doc = "C compiler command; takes precedence over $CC"',
        'name = "TILECRAFT_NVCC"',
        'text = "accumulate into the accumulator"',
        "c = a + b\ncc = c * 2",
        'fmt = "c-source"',
        'cpus = "processors"',
    ],
)
def test_checker_ignores_neutral_text(source):
    assert source_violations(source) == []
