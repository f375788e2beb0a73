"""The `tilecraft` command line: `backends`, `doctor` and `settings`, in plain text.

Everything printed comes from the registries; the command line knows no backend by name.
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Sequence

from tilecraft import __version__, settings
from tilecraft.backend import BackendModule, detection_report, registered_backends
from tilecraft.errors import TilecraftError
from tilecraft.execution import KernelCache, registered_execution_backends


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.run()
    except TilecraftError as err:
        print(f"tilecraft {args.command}: error: {err}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tilecraft", description="tilecraft kernel compiler tools")
    parser.add_argument("--version", action="version", version=f"tilecraft {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="command")
    for name, run, text in (
        ("backends", cmd_backends, "list target backends and their execution backends in `auto` order"),
        ("doctor", cmd_doctor, "report versions, detected targets, execution backends, cache and settings"),
        ("settings", cmd_settings, "print every TILECRAFT_* setting with its current value"),
    ):
        commands.add_parser(name, help=text, description=text).set_defaults(run=run)
    return parser


def cmd_backends() -> int:
    """Print each registered target backend, its kinds, variant, dialect and execution backends."""
    backends = registered_backends()
    if not backends:
        print("no target backends are registered")
        return 1
    for i, backend in enumerate(backends):
        if i:
            print()
        print("\n".join(describe_backend(backend)))
    return 0


def describe_backend(backend: BackendModule) -> list[str]:
    """The `tilecraft backends` lines for one manifest."""
    lines = [backend.name + (f": {backend.doc}" if backend.doc else "")]
    lines.append(f"  kinds:    {', '.join(backend.target_kinds)}")
    lines.append(f"  variant:  {backend.predicate_doc}")
    lines.append(f"  dialect:  {backend.dialect or '(none)'}")
    lines.append("  execution backends (auto order):")
    for i, spec in enumerate(backend.execution_backends, 1):
        lines.append(f"    {i}. {spec.name}: {spec.check().describe()}")
    return lines


def cmd_doctor() -> int:
    """Print what tilecraft sees on this machine, for bug reports."""
    print(f"tilecraft {__version__}")
    print(f"python    {platform.python_version()} ({sys.executable})")
    print(f"numpy     {_numpy_version()}")
    print(f"platform  {platform.platform()}")
    _section("target detection (in `auto` order)", _detection_lines())
    _section("execution backends", _execution_lines())
    _section("cache", [_cache_line()])
    _section("settings", settings.describe().splitlines())
    return 0


def _section(title: str, lines: list[str]) -> None:
    print(f"\n{title}:")
    for line in lines or ["(none)"]:
        print(f"  {line}")


def _numpy_version() -> str:
    try:
        import numpy
    except ImportError as err:
        return f"not importable ({err})"
    return numpy.__version__


def _detection_lines() -> list[str]:
    try:
        return [result.describe() for result in detection_report()]
    except Exception as err:  # doctor reports problems; it must not crash on them
        return [f"detection failed: {type(err).__name__}: {err}"]


def _execution_lines() -> list[str]:
    try:
        registered_backends()  # imports the built-in backends, which register their execution backends
        return [f"{spec.name}: {spec.check().describe()}" for spec in registered_execution_backends()]
    except Exception as err:
        return [f"listing failed: {type(err).__name__}: {err}"]


def _cache_line() -> str:
    cache = KernelCache()
    try:
        entries, size = cache.size()
    except OSError as err:
        return f"{cache.root} (unreadable: {err})"
    state = "enabled" if cache.enabled else "disabled (TILECRAFT_DISABLE_CACHE)"
    return f"{cache.root}: {entries} entries, {size / 2**20:.1f} MiB, {state}"


def cmd_settings() -> int:
    """Print the settings table."""
    print(settings.describe())
    return 0
