"""The `tilecraft` command line prints what the registries hold (test-only backends here)."""

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
