"""Every pass of every built-in pipeline has a Before/Expected test, so a pass added without one fails
here. The tests are `tilecraft.testing.passes.pass_test` functions in tests/<dir>/passes/test_<pass>.py."""

from __future__ import annotations

import importlib
from pathlib import Path

import tilecraft.testing.passes as passes_module
from tilecraft.backend.pipeline import PassPipeline, module_pass
from tilecraft.backend.registry import registered_backends
from tilecraft.testing.passes import untested_passes

ROOT = Path(__file__).resolve().parents[2]


def import_pass_tests() -> list[str]:
    """Import every pass-test module, so their `pass_test`s are recorded; returns the module names."""
    names = [
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in sorted(ROOT.glob("tests/*/passes/test_*.py"))
    ]
    for name in names:
        importlib.import_module(name)
    return names


def builtin_pipelines() -> list[PassPipeline]:
    """The pipelines of the backends shipped in the tilecraft package (not plugins installed beside it)."""
    return [
        p for m in registered_backends() if m.dialect.startswith("tilecraft.") for p in m.pipelines.values()
    ]


def test_every_pass_of_every_builtin_pipeline_has_a_before_expected_test():
    assert import_pass_tests()
    kinds = {p.name for p in builtin_pipelines()}
    assert {"c", "cuda", "opencl"} <= kinds, kinds
    missing = untested_passes(builtin_pipelines())
    assert not missing, (
        "passes without a Before/Expected test (write one with tilecraft.testing.passes.pass_test in "
        "tests/<dir>/passes/test_<pass>.py):\n  " + "\n  ".join(missing)
    )


def test_a_pass_without_a_test_is_reported(monkeypatch):
    @module_pass("toy-untested-pass")
    def toy(mod, ctx):
        return mod

    monkeypatch.setattr(passes_module, "_COVERED", {("toyk", "covered-pass")})
    covered = module_pass("covered-pass")(lambda mod, ctx: mod)
    pipeline = PassPipeline("toyk", (covered, toy, toy))
    assert untested_passes([pipeline]) == ["toyk: toy-untested-pass"]
