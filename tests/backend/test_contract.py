"""`tilecraft.backend` is the backend contract and nothing else: at most 25 names, each documented in
docs/backends.md, each defined in the package itself, all that a generated backend imports; a name that
moved out names its new home. docs/backends.md's table of backends lists every registered backend."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import tilecraft.backend as contract
import tilecraft.runtime as runtime
from tilecraft.backend.registry import registered_backends
from tilecraft.tools.scaffold import scaffold

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "backends.md"


def section(heading: str) -> str:
    """The text of docs/backends.md under `## heading`, up to the next `## ` heading."""
    text = PAGE.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def table_rows(text: str) -> list[list[str]]:
    """The cells of each body row of the first markdown table in `text`."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def test_the_contract_is_at_most_25_names():
    assert len(contract.__all__) <= 25
    assert len(set(contract.__all__)) == len(contract.__all__)


def test_every_name_of_the_contract_is_documented_in_its_table():
    documented = [row[0].strip("`") for row in table_rows(section("The contract: `tilecraft.backend`"))]
    assert sorted(documented) == sorted(contract.__all__), (
        "docs/backends.md's contract table and tilecraft.backend.__all__ differ: "
        f"undocumented {sorted(set(contract.__all__) - set(documented))}, "
        f"not exported {sorted(set(documented) - set(contract.__all__))}"
    )


def test_every_name_of_the_contract_is_defined_in_the_backend_package():
    for name in contract.__all__:
        obj = getattr(contract, name)
        if isinstance(obj, int):
            continue
        assert obj.__module__.startswith("tilecraft.backend."), f"{name} comes from {obj.__module__}"


@pytest.mark.parametrize("name", sorted(contract._MOVED))
def test_a_name_that_moved_out_says_where_it_lives_now(name):
    home = contract._MOVED[name]
    with pytest.raises(ImportError, match=rf"tilecraft\.backend\.{name} moved to {re.escape(home)}:"):
        exec(f"from tilecraft.backend import {name}", {})
    if not hasattr(importlib.import_module(home), name):
        importlib.import_module(f"{home}.{name}")  # a module that moved


def test_an_unknown_name_is_an_attribute_error():
    assert not hasattr(contract, "no_such_name")


def test_every_runtime_name_resolves():
    for name in runtime.__all__:
        assert getattr(runtime, name) is not None, name


def imported_backend_names(package: Path) -> dict[str, set[str]]:
    """name -> the files that import it from tilecraft.backend or one of its modules."""
    found: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tilecraft.backend"):
                for alias in node.names:
                    found.setdefault(alias.name, set()).add(path.relative_to(package).as_posix())
    return found


@pytest.mark.parametrize("template", sorted({k for m in registered_backends() for k in m.target_kinds}))
def test_a_generated_backend_needs_only_the_contract(template, tmp_path):
    scaffold("tccontract", template, tmp_path / "pkg")
    imported = imported_backend_names(tmp_path / "pkg")
    outside = {name: files for name, files in imported.items() if name not in contract.__all__}
    assert imported and not outside, f"`tilecraft backend new --from {template}` imports {outside}"


def test_the_table_of_backends_lists_every_registered_backend():
    rows = {row[0].strip("`"): row for row in table_rows(section("The backends"))}
    manifests = {m.name: m for m in registered_backends()}
    assert set(rows) == set(manifests)
    for name, (_, kinds, language, execution, status, pages) in rows.items():
        manifest = manifests[name]
        assert all(f"`{kind}`" in kinds for kind in manifest.target_kinds), (name, kinds)
        for codegen in manifest.device_codegens.values():
            assert all(f"`{fmt}`" in language for fmt in (*codegen.source_formats, *codegen.binary_formats))
        assert re.findall(r"`([\w-]+)`", execution) == [s.name for s in manifest.execution_backends]
        assert status
        linked = re.findall(r"\]\(([\w-]+\.md)\)", pages)
        assert linked and all((PAGE.parent / page).is_file() for page in linked), (name, pages)
