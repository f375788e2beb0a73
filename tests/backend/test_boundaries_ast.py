"""Shared code knows no backend and no hardware, checked on its syntax tree (boundaries 2, 9 and 10 of
ARCHITECTURE.md). test_boundaries.py greps text for a fixed word list; this reads the code itself:

* imports: no shared module imports a backend package (a target backend, `tilecraft/<name>/`, or a
  concrete execution backend, `tilecraft/execution/<name>/`), directly, relatively, through `from
  tilecraft import <name>` or through a dotted string (`importlib.import_module("tilecraft.<name>")`);
* names: no string constant of code (docstrings aside: test_boundaries.py reads those) and no
  identifier, attribute name or keyword names a registered backend, target kind or alias, execution
  backend or artifact format. The names come from the registries, so a backend added later, in tree
  or out, is covered without editing this file;
* hardware: the shared SIMT passes and the layout modules they build on contain no integer literal
  but 0, 1 and 2 (a warp's 32, its log2 5, a 16-byte vector, a 1024-thread block...) and call no
  intrinsic outside the reference interpreter's generic set (a `shfl_xor`), except the few listed
  below with the reason each is generic. Such facts come from the backend (`tilecraft.backend.simt`).

Modules checked are those of test_boundaries.py's `shared_modules()`: everything outside backend
packages, `tilecraft/compat` and `tilecraft/_builtin.py`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.backend.test_boundaries import _ENV_NAMES, PACKAGE, TILELANG_NAMES, _backend_dirs, shared_modules

# (module, name): why the module may use the name. Beside these, test_boundaries.py's exceptions hold:
# TILECRAFT_* setting names and $NAME references, and TileLang's public names (TILELANG_NAMES).
ALLOWED_NAMES = {
    ("tilecraft/settings.py", "nvidia"): "the help text of TILECRAFT_NVCC, which settings.py declares",
}
SIMT_PASS_DIRS = ("transform/simt", "layout")
# Modules of those directories the hardware rule does not read, and why.
NOT_SIMT_PASSES = {
    "layout/draw.py": "draws layouts as pictures: its numbers are glyph sizes and colours",
    "layout/swizzle.py": "TileLang's swizzle modes of T.annotate_layout: their byte widths are the language's",
}
GENERIC_INTS = frozenset({0, 1, 2})
# (module, the function or module-level name it is in): why the literal there is no hardware fact.
ALLOWED_LITERALS = {
    ("layout/fragment.py", "MAX_PROBE_POINTS"): "a bound on the work of probing a T.Fragment for linearity",
    ("layout/inference.py", "power_of_two_factor"): "2^30 stands for 'any power of two' (the factor of zero), "
    "past every index range; arithmetic, not hardware",
    ("layout/gemm.py", "make_gemm_fragment_8x8"): "TileLang's named layout of one 8x8 matrix: its shape and "
    "thread map are the definition of the public function, which no pass consults",
    ("layout/gemm.py", "make_gemm_fragment_8x8_transposed"): "the same, transposed",
}
# Intrinsics the SIMT passes may emit beyond the reference interpreter's, and why they are generic.
ALLOWED_INTRINSICS = {
    "sync_threads": "the shared IR's block barrier: every SIMT backend prints it (__syncthreads, barrier)",
}
SHORT_NAME = 2  # names this short ("c", "cc") count only as a whole string, never as part of a word

_IDENT_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")
_MODULE_PATH = re.compile(r"tilecraft(\.[A-Za-z_]\w*)+")


@dataclass(frozen=True)
class Registered:
    """What the registries say exists: names shared code must not use, packages it must not import."""

    names: frozenset[str]
    packages: tuple[str, ...]


def registered() -> Registered:
    from tilecraft.backend.registry import registered_backends
    from tilecraft.backend.target_kind import registered_target_kinds

    names: set[str] = set()
    packages = {_module_of(d) for d in _backend_dirs() if d.relative_to(PACKAGE).parts[0] != "compat"}
    for kind in registered_target_kinds():
        names |= {kind.name, *kind.aliases}
    for manifest in registered_backends():
        names |= {manifest.name, *manifest.produced_formats}
        names |= {spec.name for spec in manifest.execution_backends}
        names |= {fmt for spec in manifest.execution_backends for fmt in spec.consumes}
        packages |= {
            spec.implementation.partition(":")[0].rsplit(".", 1)[0] for spec in manifest.execution_backends
        }
        if manifest.dialect:
            packages.add(manifest.dialect.rsplit(".", 1)[0])
    return Registered(frozenset(names), tuple(sorted(packages)))


def _module_of(path: Path) -> str:
    return ".".join(("tilecraft", *path.relative_to(PACKAGE).with_suffix("").parts))


# ---------------------------------------------------------------- imports


def imported_modules(tree: ast.Module, module: str) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of every module `tree` (the code of `module`) imports or names as a path."""
    package = module.rsplit(".", 1)[0] if not module.endswith("__init__") else module[: -len(".__init__")]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, package)
            yield node.lineno, base
            yield from ((node.lineno, f"{base}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _MODULE_PATH.fullmatch(node.value.partition(":")[0])
            if match:
                yield node.lineno, match.group(0)


def _resolve(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - node.level + 1])
    return f"{base}.{node.module}" if node.module else base


def import_violations(source: str, module: str, packages: tuple[str, ...]) -> list[tuple[int, str]]:
    found = []
    for line, name in imported_modules(ast.parse(source), module):
        owner = next((p for p in packages if name == p or name.startswith(p + ".")), None)
        if owner is not None:
            found.append((line, f"imports {name} (backend package {owner})"))
    return found


# ---------------------------------------------------------------- names


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [(node.asname or node.name).rsplit(".", 1)[-1]]
    return []


def string_names(text: str, names: frozenset[str]) -> set[str]:
    """Registered names in one string constant: the whole string, or, for names longer than
    SHORT_NAME, a part of it that is not inside a longer word ("hwx" in "tilecraft.hwx", not in "hwxs")."""
    if text in TILELANG_NAMES:
        return set()
    if text.strip() in names:
        return {text.strip()}
    lowered = _ENV_NAMES.sub(" ", text).lower()
    return {
        n
        for n in names
        if len(n) > SHORT_NAME and re.search(rf"(?<![a-z0-9]){re.escape(n)}(?![a-z0-9])", lowered)
    }


def identifier_names(name: str, names: frozenset[str]) -> set[str]:
    if name in TILELANG_NAMES:
        return set()
    parts = {p.lower() for piece in name.split("_") for p in _IDENT_PART.findall(piece)}
    return {n for n in names if len(n) > SHORT_NAME and n in parts}


def name_violations(source: str, names: frozenset[str], module: str = "") -> list[tuple[int, str]]:
    names = frozenset(n for n in names if (module, n) not in ALLOWED_NAMES)
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found += [
                (line, f"string {_clip(node.value)!r} names {n!r}")
                for n in sorted(string_names(node.value, names))
            ]
        for ident in _identifiers(node):
            found += [
                (line, f"identifier {ident!r} names {n!r}") for n in sorted(identifier_names(ident, names))
            ]
    return found


def _clip(text: str) -> str:
    return text if len(text) < 60 else text[:57] + "..."


# ---------------------------------------------------------------- hardware constants


def simt_pass_modules() -> list[Path]:
    return sorted(
        path
        for sub in SIMT_PASS_DIRS
        for path in (PACKAGE / sub).glob("*.py")
        if path.relative_to(PACKAGE).as_posix() not in NOT_SIMT_PASSES
    )


def _contexts(tree: ast.Module) -> Iterator[tuple[ast.AST, str]]:
    """Every node with the name it belongs to: its top-level function or class, or the module-level
    name it is assigned to."""
    for top in tree.body:
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            context = top.name
        elif isinstance(top, (ast.Assign, ast.AnnAssign)):
            targets = top.targets if isinstance(top, ast.Assign) else [top.target]
            context = ",".join(t.id for t in targets if isinstance(t, ast.Name)) or "<module>"
        else:
            context = "<module>"
        yield from ((node, context) for node in ast.walk(top))


def _intrinsic_name(node: ast.Call) -> str | None:
    """The intrinsic a `E.call("name", ...)`, `E.int_call("name", ...)` or `E.Call(dtype, "name", ...)`
    builds."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    position = {"call": 0, "int_call": 0, "Call": 1}.get(called)
    if position is None or len(node.args) <= position:
        return None
    arg = node.args[position]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def hardware_violations(source: str, module: str) -> list[tuple[int, str]]:
    from tilecraft.ir.eval import SUPPORTED_INTRINSICS

    found = []
    for node, context in _contexts(ast.parse(source)):
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value not in GENERIC_INTS:
            if (module, context) not in ALLOWED_LITERALS:
                found.append((node.lineno, f"integer literal {node.value} in {context}"))
        elif isinstance(node, ast.Call):
            name = _intrinsic_name(node)
            if name is not None and name not in SUPPORTED_INTRINSICS and name not in ALLOWED_INTRINSICS:
                found.append((node.lineno, f"intrinsic {name!r} in {context}"))
    return found


# ---------------------------------------------------------------- the checks


def _report(problems: list[str], what: str) -> str:
    return f"{what}:\n  " + "\n  ".join(problems)


def test_shared_code_imports_no_backend_package():
    packages = registered().packages
    problems = []
    for path in shared_modules():
        relative = path.relative_to(PACKAGE.parent).as_posix()
        module = _module_of(path)
        problems += [
            f"{relative}:{line}: {p}" for line, p in import_violations(path.read_text(), module, packages)
        ]
    assert not problems, _report(
        problems,
        "shared code must not import a backend package; reach backends through the registry and the "
        "BackendContext, or move the code into the backend",
    )


def test_shared_code_names_no_registered_backend_kind_or_format():
    names = registered().names
    problems = []
    for path in shared_modules():
        relative = path.relative_to(PACKAGE.parent).as_posix()
        problems += [
            f"{relative}:{line}: {p}" for line, p in name_violations(path.read_text(), names, relative)
        ]
    assert not problems, _report(
        problems,
        "shared code must not name a backend, target kind, execution backend or artifact format in its "
        "code; dispatch through the registry and the objects in the BackendContext",
    )


def test_shared_simt_passes_assume_no_hardware():
    problems = []
    for path in simt_pass_modules():
        relative = path.relative_to(PACKAGE).as_posix()
        problems += [
            f"tilecraft/{relative}:{line}: {p}" for line, p in hardware_violations(path.read_text(), relative)
        ]
    assert not problems, _report(
        problems,
        "the shared SIMT passes must not assume hardware: thread-group width, block size, vector width and "
        "cross-lane instructions come from the backend's SimtTarget (tilecraft/backend/simt.py); a literal "
        "that is truly generic goes into ALLOWED_LITERALS with the reason",
    )


def test_the_checks_see_the_registered_backends_and_the_simt_passes():
    found = registered()
    assert {"tilecraft.cuda", "tilecraft.opencl", "tilecraft.execution.nvrtc"} <= set(found.packages)
    assert {"cuda", "nvidia", "nvrtc", "opencl", "cubin"} <= found.names
    checked = {p.relative_to(PACKAGE).as_posix() for p in simt_pass_modules()}
    assert {"transform/simt/reduce.py", "transform/simt/lower_threads.py", "layout/fragment.py"} <= checked
    assert {"layout/tile.py", "layout/inference.py"} <= checked
    for module, _ in ALLOWED_LITERALS:
        assert module in checked, f"ALLOWED_LITERALS names {module}, which the hardware check does not read"


def test_every_allowance_is_still_needed():
    """An allow-list entry whose reason has gone (the name or literal left the module) is removed."""
    names = registered().names
    for module, name in ALLOWED_NAMES:
        found = name_violations((PACKAGE.parent / module).read_text(), frozenset({name}))
        assert found, f"ALLOWED_NAMES: {module} no longer names {name!r}; drop the entry"
    for module, context in ALLOWED_LITERALS:
        source = (PACKAGE / module).read_text()
        bare = [p for _, p in hardware_violations(source, "") if p.endswith(f" in {context}")]
        assert bare, f"ALLOWED_LITERALS: {module} has no literal in {context} any more; drop the entry"
    assert names


# ---------------------------------------------------------------- the checkers themselves

PACKAGES = ("tilecraft.hwx", "tilecraft.execution.hwxrt")
NAMES = frozenset({"hwx", "hwxrt", "hwx-source", "c", "cc"})


@pytest.mark.parametrize(
    "source",
    [
        "import tilecraft.hwx.codegen",
        "from tilecraft.hwx import language",
        "from tilecraft import hwx",
        "from tilecraft.execution.hwxrt.driver import load",
        "from ..hwx.op import table",
        "importlib.import_module('tilecraft.hwx')",
        "spec = 'tilecraft.execution.hwxrt.backend:Backend'",
    ],
)
def test_the_import_check_catches_backend_imports(source):
    assert import_violations(source, "tilecraft.jit.kernel", PACKAGES)


@pytest.mark.parametrize(
    "source",
    [
        "import tilecraft.backend",
        "from tilecraft.execution import base",
        "from . import options",
        "x = 'tilecraft.hw'",
    ],
)
def test_the_import_check_allows_shared_imports(source):
    assert import_violations(source, "tilecraft.jit.kernel", PACKAGES) == []


@pytest.mark.parametrize(
    "source",
    [
        "if target.kind == 'hwx': pass",
        "FORMAT = 'hwx-source'",
        "spec.name in ('hwxrt', 'other')",
        "KIND = 'c'",
        "runtime.hwxrt.launch()",
        "def launch_hwx(): pass",
        "class HwxBackend: pass",
        "f(use_hwx=True)",
        "msg = f'built by hwxrt {version}'",
    ],
)
def test_the_name_check_catches_registered_names_in_code(source):
    assert name_violations(source, NAMES)


@pytest.mark.parametrize(
    "source",
    [
        'def f():\n    """Runs on the hwx device."""',  # docstrings are test_boundaries.py's to read
        "c = a + b\ncc = c * 2",
        "fmt = 'c-source'",
        "text = 'a hwxylophone'",
        "name = 'TILECRAFT_HWXRT'",
        "key = 'cuda.kernels_output_dir'",
    ],
)
def test_the_name_check_ignores_docstrings_short_names_in_words_and_other_words(source):
    assert name_violations(source, NAMES) == []


@pytest.mark.parametrize(
    "source, problem",
    [
        ("def lane(tid):\n    return tid % 32", "integer literal 32 in lane"),
        ("WARP = 32", "integer literal 32 in WARP"),
        ("bits = [b + 5 for b in warp_bits]", "integer literal 5 in bits"),
        ("def f(x):\n    return E.call('shfl_xor', x, 1)", "intrinsic 'shfl_xor' in f"),
        ("barrier = E.Call(i32, 'named_barrier_sync', ())", "intrinsic 'named_barrier_sync' in barrier"),
    ],
)
def test_the_hardware_check_catches_constants_and_instructions(source, problem):
    assert [p for _, p in hardware_violations(source, "transform/simt/x.py")] == [problem]


@pytest.mark.parametrize(
    "source",
    [
        "def f(x, w):\n    return x % w + 2 * x - 1",
        "y = E.int_call('bitwise_xor', tid, mask)",
        "s = E.Call(i32, 'sync_threads', ())",
        "MAX_PROBE_POINTS = 1 << 18",
    ],
)
def test_the_hardware_check_allows_generic_code_and_listed_literals(source):
    assert hardware_violations(source, "layout/fragment.py") == []
