"""Layers import downwards only (boundary 10 of ARCHITECTURE.md): the front end (jit/, tools/ ...) ->
target backends -> execution/ -> the core (backend/, runtime/, transform/, layout/, codegen/, language/, ir/).

The import graph is read statically from every module under `tilecraft/`: each `import` and
`from ... import`, wherever it stands (inside functions and `if TYPE_CHECKING:` blocks too: a name used
only in a type is still a dependency on that layer), resolved to the tilecraft module it names
(`from tilecraft import settings` names `tilecraft.settings`). The rules:

1. every top-level part of the package (a subpackage or a module) is in one layer of `LAYERS`; target
   backends are the top-level packages holding a `backend.py`. A module imports its own part and parts
   of lower layers only;
2. target backends do not import each other, except that a variant (a manifest declared `variant=True`,
   handling targets of a kind another backend owns) may import that backend, its template;
3. in `tilecraft/execution`, the package of one execution backend (a subpackage holding a `backend.py`)
   imports no other execution backend's package, and the shared execution code (the modules of
   `tilecraft/execution` itself and the runtime packages several backends share) imports none.

The package root `tilecraft/__init__.py` is no layer: Python imports it before any submodule, so naming
it (`from tilecraft import __version__`) adds no dependency.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tilecraft"
FRONT_END, TARGET_BACKENDS, EXECUTION, CORE = 3, 2, 1, 0
LAYER_NAMES = {
    FRONT_END: "front end",
    TARGET_BACKENDS: "target backend",
    EXECUTION: "execution",
    CORE: "core",
}
LAYERS = {
    FRONT_END: ("jit", "tools", "autotuner", "profiler", "engine", "compat", "testing", "utils", "env", "math", "torch",
                "__main__"),
    EXECUTION: ("execution",),
    CORE: ("backend", "runtime", "transform", "layout", "codegen", "language", "ir", "carver", "errors", "settings",
           "_modules", "_origin", "_builtin"),
}  # fmt: skip


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    path: str  # its file, relative to the package's parent
    line: int
    target: str  # the tilecraft module imported, dotted


def module_name(package: Path, path: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(package: Path, dotted: str) -> bool:
    """Whether `dotted` (a tilecraft.* name) is a module or package of `package`."""
    base = package.parent.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(package: Path, path: Path) -> list[Import]:
    """Every import of a tilecraft module in the file at `path`, at any depth."""
    name = module_name(package, path)
    own_package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    relative = path.relative_to(package.parent).as_posix()
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        for target in dict.fromkeys(_targets(package, node, own_package)):  # once per module named
            if target == package.name or target.startswith(package.name + "."):
                found.append(Import(name, relative, node.lineno, target))
    return found


def _targets(package: Path, node: ast.AST, own_package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        anchor = own_package.split(".")[: len(own_package.split(".")) - node.level + 1]
        base = ".".join(anchor + ([node.module] if node.module else []))
    # `from a import b` imports the module a.b when there is one, else the name b of module a.
    return [f"{base}.{a.name}" if is_module(package, f"{base}.{a.name}") else base for a in node.names]


def part_of(dotted: str) -> str | None:
    """The top-level part of tilecraft a module belongs to; None for the package root."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else None


def layer_table(package: Path) -> dict[str, int]:
    table = {part: layer for layer, parts in LAYERS.items() for part in parts}
    for manifest in package.glob("*/backend.py"):
        table[manifest.parent.name] = TARGET_BACKENDS
    return table


def execution_backends(package: Path) -> set[str]:
    """The subpackages of tilecraft/execution that are execution backends (they hold a backend.py)."""
    return {manifest.parent.name for manifest in (package / "execution").glob("*/backend.py")}


def _execution_package(dotted: str) -> str | None:
    parts = dotted.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "execution" else None


def variant_templates() -> set[tuple[str, str]]:
    """(variant package, template package) of every registered variant: the template is the backend that
    owns the variant's kind without being a variant itself."""
    from tilecraft.backend.registry import registered_backends

    manifests = registered_backends()
    return {
        (_package_of(v), _package_of(t))
        for v in manifests
        if v.variant
        for t in manifests
        if not t.variant and set(t.target_kinds) & set(v.target_kinds)
    }


def _package_of(manifest) -> str:
    """The top-level part of tilecraft a manifest's device codegen comes from (its backend package)."""
    codegen = manifest.device_codegens[manifest.target_kinds[0]]
    return part_of(codegen.source.__module__) or ""


def violation(imp: Import, table: dict[str, int], backends: set[str], templates=frozenset()) -> str | None:
    """What is wrong with one import, or None."""
    source, target = part_of(imp.module), part_of(imp.target)
    if (source, target) in templates:
        return None
    if target is None or source is None:
        return None
    if source not in table or target not in table:
        unplaced = source if source not in table else target
        return f"tilecraft.{unplaced} is in no layer; add it to LAYERS in tests/backend/test_layers.py"
    if source == target:
        return _within_execution(imp, backends) if source == "execution" else None
    low, high = table[target], table[source]
    if low > high or (low == high == TARGET_BACKENDS):
        return f"{LAYER_NAMES[high]} ({source}) imports {LAYER_NAMES[low]} ({target})"
    return None


def _within_execution(imp: Import, backends: set[str]) -> str | None:
    mine, theirs = _execution_package(imp.module), _execution_package(imp.target)
    if theirs not in backends or theirs == mine:
        return None
    who = (
        f"execution backend {mine}" if mine in backends else f"shared execution code ({mine or 'execution'})"
    )
    return f"{who} imports execution backend {theirs}"


def layer_violations(package: Path) -> list[str]:
    """`path:line: imports X: why` for every import in `package` that breaks a rule above."""
    table, backends, templates = layer_table(package), execution_backends(package), variant_templates()
    problems = []
    for path in sorted(package.rglob("*.py")):
        for imp in imports_of(package, path):
            why = violation(imp, table, backends, templates)
            if why is not None:
                problems.append(f"{imp.path}:{imp.line}: imports {imp.target}: {why}")
    return problems


def test_layers_import_downwards_only():
    problems = layer_violations(PACKAGE)
    assert not problems, (
        "an import goes up or sideways through the layers (jit/ and tools/ -> target backends -> execution/ -> "
        "core); move the code it needs down a layer, or pass it in from above:\n  " + "\n  ".join(problems)
    )


def test_every_part_of_the_package_is_in_a_layer():
    table = layer_table(PACKAGE)
    parts = {p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
             if p.suffix == ".py" and p.name != "__init__.py" or (p / "__init__.py").is_file()}  # fmt: skip
    assert parts - set(table) == set()
    assert {"cpu", "cuda", "opencl"} <= {p for p, layer in table.items() if layer == TARGET_BACKENDS}
    assert {"cc", "nvcc", "nvrtc", "opencl"} <= execution_backends(PACKAGE)


def _tree(root: Path, files: dict[str, str]) -> Path:
    package = root / "tilecraft"
    for name, text in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(package).parents:
            (package / parent / "__init__.py").touch()
        path.write_text(text)
    return package


def test_the_checker_finds_each_kind_of_violation(tmp_path):
    package = _tree(tmp_path, {
        "ir/expr.py": "def f():\n    from tilecraft.execution import base\n",  # inside a function
        "backend/context.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tilecraft.jit.kernel\n",
        "execution/base.py": "from tilecraft.jit.arrays import ArrayArg, as_array_arg\n",
        "execution/one/backend.py": "from tilecraft.execution.two import backend\n",
        "execution/two/backend.py": "from tilecraft.execution.shared import runtime\n",
        "execution/shared/runtime.py": "from tilecraft.execution.one.backend import X\n",
        "alpha/backend.py": "from tilecraft.beta import language\n",
        "beta/backend.py": "",
        "beta/language.py": "",
        "jit/arrays.py": "",
        "jit/kernel.py": "from tilecraft import settings, __version__\nfrom tilecraft.execution import base\n",
        "settings.py": "from tilecraft.errors import X\n",
        "errors.py": "",
        "newpart.py": "",
        "ir/dtype.py": "from tilecraft import newpart\n",
    })  # fmt: skip
    found = layer_violations(package)
    assert found == [
        "tilecraft/alpha/backend.py:1: imports tilecraft.beta.language: target backend (alpha) imports target "
        "backend (beta)",
        "tilecraft/backend/context.py:3: imports tilecraft.jit.kernel: core (backend) imports front end (jit)",
        "tilecraft/execution/base.py:1: imports tilecraft.jit.arrays: execution (execution) imports front end (jit)",
        "tilecraft/execution/one/backend.py:1: imports tilecraft.execution.two.backend: execution backend one "
        "imports execution backend two",
        "tilecraft/execution/shared/runtime.py:1: imports tilecraft.execution.one.backend: shared execution code "
        "(shared) imports execution backend one",
        "tilecraft/ir/dtype.py:1: imports tilecraft.newpart: tilecraft.newpart is in no layer; add it to LAYERS in "
        "tests/backend/test_layers.py",
        "tilecraft/ir/expr.py:2: imports tilecraft.execution.base: core (ir) imports execution (execution)",
    ]


def test_relative_imports_resolve_against_the_module(tmp_path):
    package = _tree(tmp_path, {"ir/expr.py": "from ..jit import kernel\nfrom . import dtype\n", "ir/dtype.py": "",
                               "jit/kernel.py": ""})  # fmt: skip
    targets = [i.target for i in imports_of(package, package / "ir" / "expr.py")]
    assert targets == ["tilecraft.jit.kernel", "tilecraft.ir.dtype"]
