"""The `tilecraft` command line prints what the registries hold (test-only backends here)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tilecraft import settings
from tilecraft.backend import Target
from tilecraft.tools.cli import main


def only_fast(target):
    """targets with -fast"""
    return target.attr("fast") is True


@pytest.fixture
def registered(toy):
    toy.kind("toyk", detect=lambda: "no toy device here", detect_priority=10)
    toy.kind("toyhost", detect=lambda: Target("toyhost"), detect_priority=95)
    specs = (
        toy.spec("quick", ok=False, reason="runtime missing", fix="install toy-runtime"),
        toy.spec("slow"),
    )
    toy.register("toy", predicate=only_fast, specs=specs, doc="a test-only backend")
    return toy


def test_backends_lists_kinds_variant_dialect_and_execution_order(registered, capsys):
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "toy: a test-only backend",
        "  kinds:    toyk",
        "  variant:  targets with -fast",
        "  dialect:  tests.toy.language",
        "  execution backends (auto order):",
        "    1. quick: unavailable: runtime missing (fix: install toy-runtime)",
        "    2. slow: available",
    ]


def test_backends_with_nothing_registered(toy, capsys):
    assert main(["backends"]) == 1
    assert "no target backends are registered" in capsys.readouterr().out


def test_doctor_reports_detection_execution_cache_and_settings(registered, capsys, tmp_path):
    with settings.override(TILECRAFT_CACHE_DIR=tmp_path):
        assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "python " in out and "numpy " in out
    assert "toyk (priority 10): no: no toy device here" in out
    assert "toyhost (priority 95): found toyhost" in out
    assert "quick: unavailable: runtime missing (fix: install toy-runtime)" in out
    assert f"{tmp_path}: 0 entries, 0.0 MiB, enabled" in out
    assert "TILECRAFT_CACHE_DIR" in out and "override" in out


def test_settings_prints_the_table(capsys):
    assert main(["settings"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["name", "type", "value", "from", "doc"]
    assert "TILECRAFT_DUMP_IR" in out


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "backends" in capsys.readouterr().out


def test_python_dash_m_runs_the_cli():
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-m", "tilecraft", "--version"], capture_output=True, text=True, cwd=root, check=True
    )
    assert out.stdout.startswith("tilecraft ")


GARBAGE = ("gar bage -x=", "'", "-1", "~no-such-user-xyz/x")


@pytest.fixture
def fresh_availability():
    """Availability probes are cached per process: these tests break the environment, so they probe
    afresh and leave no verdict behind for later tests."""
    from tilecraft.backend.registry import registered_backends
    from tilecraft.execution import registered_execution_backends

    def reset():
        registered_backends()
        for spec in registered_execution_backends():
            spec.reset_availability()

    reset()
    yield
    reset()


@pytest.mark.parametrize("garbage", GARBAGE)
def test_doctor_shows_every_invalid_setting_and_never_raises(
    garbage, monkeypatch, capsys, fresh_availability
):
    for setting in settings.all_settings():
        monkeypatch.setenv(setting.name, garbage)
    monkeypatch.setenv("TILECRAFT_CACHEDIR", garbage)
    invalid = settings.problems()
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    table, problems = out.split("\nsettings:\n")[1].split("\nproblems:\n")
    for name, problem in invalid.items():
        assert problem in problems
        row = next((line for line in table.splitlines() if line.split()[:1] == [name]), None)
        assert row is None or f"invalid: {garbage!r}" in row
    assert "did you mean TILECRAFT_CACHE_DIR?" in problems
    assert "TILECRAFT_TARGET=" in problems  # none of the garbage is a target


def test_doctor_reports_a_broken_environment_one_problem_per_line(
    monkeypatch, capsys, tmp_path, fresh_availability
):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TILECRAFT_CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("TILECRAFT_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setenv("TILECRAFT_DUMP_IR", str(blocker))
    monkeypatch.setenv("TILECRAFT_TARGET", "c -iza=sse")
    assert main(["doctor"]) == 0
    problems = capsys.readouterr().out.split("\nproblems:\n")[1].splitlines()
    expected = (
        f"TILECRAFT_CC={str(tmp_path / 'no-such-cc')!r} cannot be used: program",
        f"TILECRAFT_DUMP_IR={str(blocker)!r} cannot be used: it is an existing file",
        "TILECRAFT_TARGET='c -iza=sse' is not a valid target: target c: unknown attribute(s) iza",
        f"cache directory {blocker / 'cache'} cannot be created: {blocker} is a file",
    )
    for start in expected:
        assert sum(line.strip().startswith(start) for line in problems) == 1, start


def test_doctor_with_a_clean_environment_has_no_problems(registered, capsys, monkeypatch, tmp_path):
    for name in [n for n in os.environ if n.startswith("TILECRAFT_")]:
        monkeypatch.delenv(name)
    with settings.override(TILECRAFT_CACHE_DIR=tmp_path):
        assert main(["doctor"]) == 0
    assert capsys.readouterr().out.endswith("\nproblems:\n  (none)\n")
