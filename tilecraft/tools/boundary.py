"""The boundary audit of `tilecraft backend check`: shared code names no backend, and a backend package
imports only tilecraft's public API.

Shared code is every module under `tilecraft/` except backend packages (any directory holding a
`backend.py`, which covers target backends and concrete execution backends, and every package in
`tilecraft/execution`: an execution backend or a runtime several share), `tilecraft/compat` (the
TileLang compatibility layer, which reproduces TileLang's names) and `tilecraft/_builtin.py` (tilecraft's
own entry points). A backend's names are its manifest's name, its target kinds and its execution
backends' names. A name is found in a string literal (docstrings included) as a token not run into
letters or digits, case-insensitively, and in an identifier as whole parts (split at underscores and
camelCase); a one-letter name only as a whole string literal. `TILECRAFT_*` setting names, `$NAME`
environment references and TileLang's public names that tilecraft keeps (`TILELANG_NAMES`) are not names
of a backend.

Public API: a module whose dotted path has no part starting with `_`; of it, a name that does not start
with `_` (dunder names such as `__all__` are public) and, when the module declares `__all__`, is listed
there or is one of its submodules. A backend may import its own package freely.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from pathlib import Path

import tilecraft

PACKAGE = Path(tilecraft.__file__).resolve().parent
EXEMPT_DIRS = ("compat",)
EXEMPT_FILES = ("_builtin.py",)
SHARED_DIRS = ("backend", "execution", "ir", "language", "transform", "layout", "codegen", "jit", "tools")
TILELANG_NAMES = frozenset({"CUDA_KERNELS_OUTPUT_DIR", "cuda.kernels_output_dir"})

_ENV_NAMES = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\bTILECRAFT_[A-Z0-9_]+\b")
_IDENT_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


def shared_modules(root: Path = PACKAGE) -> list[Path]:
    """Every module of shared code under `root` (the tilecraft package)."""
    exempt = [root / name for name in EXEMPT_DIRS]
    exempt += [
        m.parent for m in root.rglob("backend.py") if m.parent != root and m.parent.name not in SHARED_DIRS
    ]
    exempt += [d.parent for d in (root / "execution").glob("*/__init__.py")]
    return sorted(
        path
        for path in root.rglob("*.py")
        if not (path.parent == root and path.name in EXEMPT_FILES)
        if not any(path.is_relative_to(d) for d in exempt)
    )


def _in_text(name: str, text: str) -> bool:
    if text in TILELANG_NAMES:
        return False
    if len(name) == 1:
        return text.strip() == name
    text = _ENV_NAMES.sub(" ", text)
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", text, re.IGNORECASE) is not None


def _in_identifier(name: str, identifier: str) -> bool:
    if len(name) <= 2 or identifier in TILELANG_NAMES:
        return False  # two-letter names ("cc") are ordinary variable names
    parts = [p.lower() for piece in identifier.split("_") for p in _IDENT_PART.findall(piece)]
    wanted = [p for p in re.split(r"[-_]", name.lower()) if p]
    return any(parts[i : i + len(wanted)] == wanted for i in range(len(parts) - len(wanted) + 1))


def naming_violations(source: str, names: Iterable[str]) -> list[tuple[int, str]]:
    """(line, problem) for every string literal and identifier in `source` that contains one of `names`."""
    names = sorted(set(names))
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            clipped = text if len(text) < 60 else text[:57] + "..."
            found |= {(node.lineno, f"{n!r} in string {clipped!r}") for n in names if _in_text(n, text)}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME:
            found |= {
                (tok.start[0], f"{n!r} in identifier {tok.string!r}")
                for n in names
                if _in_identifier(n, tok.string)
            }
    return sorted(found)


def shared_code_naming(names: Iterable[str], root: Path = PACKAGE) -> list[str]:
    """'file:line: problem' for every place in shared code that names one of `names`."""
    names = tuple(names)
    problems = []
    for path in shared_modules(root):
        relative = path.relative_to(root.parent).as_posix()
        for line, problem in naming_violations(path.read_text(encoding="utf-8"), names):
            problems.append(f"{relative}:{line}: {problem}")
    return problems


def package_files(package: str) -> list[Path]:
    """The Python files of an importable package (or the one file of a plain module)."""
    spec = importlib.util.find_spec(package)
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return sorted(p for d in spec.submodule_search_locations for p in Path(d).rglob("*.py"))
    return [Path(spec.origin)] if spec.origin else []


def private_imports(package: str) -> list[str]:
    """'file:line: problem' for every import of a private tilecraft module or name in `package`."""
    problems = []
    for path in package_files(package):
        module = _module_name(path, package)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, imported, names in _imports(tree, module):
            for problem in _private(imported, names, package):
                problems.append(f"{path}:{line}: {problem}")
    return problems


def _module_name(path: Path, package: str) -> str:
    spec = importlib.util.find_spec(package)
    roots = [Path(d) for d in (spec.submodule_search_locations or [])] if spec else []
    root = next((r for r in roots if path.is_relative_to(r)), None)
    if root is None:
        return package
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def _imports(tree: ast.AST, module: str) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """(line, module imported, names imported from it) for every import statement."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                # Relative: `from . import x` in package module a.b.c is a.b; in a.b/__init__ it is a.b too.
                anchor = module.split(".")[
                    : len(module.split(".")) - node.level + (1 if _is_init(module) else 0)
                ]
                base = ".".join([*anchor, *([base] if base else [])])
            yield node.lineno, base, tuple(a.name for a in node.names)


def _is_init(module: str) -> bool:
    found = importlib.util.find_spec(module) if module else None
    return bool(found and found.submodule_search_locations)


def _private(imported: str, names: tuple[str, ...], own: str) -> list[str]:
    if imported.split(".")[0] != "tilecraft" or imported == own or imported.startswith(own + "."):
        return []
    hidden = next((part for part in imported.split(".") if part.startswith("_")), None)
    if hidden is not None:
        return [f"imports {imported}, a private module ({hidden!r} starts with an underscore)"]
    problems = []
    exported = _exports(imported)
    for name in names:
        if name == "*" or (name.startswith("__") and name.endswith("__")):
            continue
        if name.startswith("_"):
            problems.append(f"imports {name} from {imported}, a private name")
        elif exported is not None and name not in exported and not _is_submodule(f"{imported}.{name}"):
            problems.append(f"imports {name} from {imported}, which does not list it in __all__")
    return problems


def _exports(module: str) -> frozenset[str] | None:
    try:
        loaded = importlib.import_module(module)
    except Exception:  # noqa: BLE001 - a module that does not import is reported by the backend's own rows
        return None
    names = getattr(loaded, "__all__", None)
    return frozenset(names) if names is not None else None


def _is_submodule(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
