"""The `tilecraft` command line: `backends`, `doctor`, `settings` and `run-tilelang`, in plain text.

Everything printed comes from the registries; the command line knows no backend by name.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tilecraft import __version__, settings
from tilecraft.backend import BackendModule, Target, detection_report, plugin_problems, registered_backends
from tilecraft.errors import PluginWarning, TilecraftError
from tilecraft.execution import KernelCache, registered_execution_backends


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [RUN_TILELANG]:
        return run_tilelang(argv[1:])
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
    # Listed for --help only: main() hands its arguments to the runner, which parses them itself.
    commands.add_parser(RUN_TILELANG, help="run a TileLang script unchanged (see run-tilelang --help)")
    return parser


RUN_TILELANG = "run-tilelang"


def run_tilelang(argv: Sequence[str]) -> int:
    """`tilecraft run-tilelang [OPTIONS] SCRIPT [ARGS]`: see tilecraft.compat.runner."""
    from tilecraft.compat.runner import main as run  # loads the compatibility layer only when asked

    return run(argv, prog=f"tilecraft {RUN_TILELANG}")


def cmd_backends() -> int:
    """Print each registered target backend, its kinds, variant, dialect and execution backends, then
    the plugins that failed to load; the status is 1 when there is no backend or a plugin failed."""
    with _plugin_warnings_listed():
        backends = registered_backends()
        problems = plugin_problems()
    if not backends:
        print("no target backends are registered")
    for i, backend in enumerate(backends):
        if i:
            print()
        print("\n".join(describe_backend(backend)))
    if problems:
        print("\nplugins that failed to load:")
        for problem in problems:
            print(f"  {problem.describe()}")
    return 1 if problems or not backends else 0


@contextmanager
def _plugin_warnings_listed() -> Iterator[None]:
    # The commands list broken plugins themselves; the warning would say it twice.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)
        yield


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
    """Print what tilecraft sees on this machine, for bug reports. Every problem found is a line of the
    `problems` section; nothing in a broken environment makes it raise."""
    print(f"tilecraft {__version__}")
    print(f"python    {platform.python_version()} ({sys.executable})")
    print(f"numpy     {_numpy_version()}")
    print(f"platform  {platform.platform()}")
    with _plugin_warnings_listed():
        plugin_lines = _plugin_lines()
    _section("target detection (in `auto` order)", _detection_lines())
    _section("execution backends", _execution_lines())
    cache_line, cache_problems = _cache_report()
    _section("cache", [cache_line])
    setting_problems = _setting_problems()
    _section("settings", _guarded(lambda: settings.describe(setting_problems).splitlines(), "settings table"))
    _section("problems", [*plugin_lines, *setting_problems.values(), *cache_problems])
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


def _guarded(lines: Callable[[], list[str]], what: str) -> list[str]:
    # doctor reports problems; it must not crash on them
    try:
        return lines()
    except Exception as err:
        return [f"{what} failed: {type(err).__name__}: {err}"]


def _detection_lines() -> list[str]:
    return _guarded(lambda: [result.describe() for result in detection_report()], "detection")


def _plugin_lines() -> list[str]:
    return _guarded(lambda: [problem.describe() for problem in plugin_problems()], "loading the plugins")


def _execution_lines() -> list[str]:
    def lines() -> list[str]:
        registered_backends()  # imports the built-in backends, which register their execution backends
        return [f"{spec.name}: {spec.check().describe()}" for spec in registered_execution_backends()]

    return _guarded(lines, "listing")


def _cache_report() -> tuple[str, list[str]]:
    """The cache line, and its problems (an invalid setting is reported with the other settings)."""
    cache = KernelCache()
    try:
        root = cache.root
        enabled = cache.enabled
    except TilecraftError as err:
        return f"unknown: {err}", []
    state = "enabled" if enabled else "disabled (TILECRAFT_DISABLE_CACHE)"
    try:
        entries, size = cache.size()
    except OSError as err:
        return f"{root} (unreadable: {err})", [f"cache directory {root} cannot be read: {err}"]
    problem = _unwritable(root) if enabled else ""
    if problem:
        problem = (f"cache directory {root} {problem}; kernels are compiled afresh in every process "
                   "(set TILECRAFT_CACHE_DIR to a writable directory)")  # fmt: skip
    return f"{root}: {entries} entries, {size / 2**20:.1f} MiB, {state}", [problem] if problem else []


def _unwritable(directory: Path) -> str:
    """Why `directory` cannot be created or written, or "" when it can."""
    existing = next((p for p in (directory, *directory.parents) if p.exists()), None)
    if existing is None:
        return ""
    if not existing.is_dir():
        return f"cannot be created: {existing} is a file"
    if not os.access(existing, os.W_OK | os.X_OK):
        return (
            "is not writable" if existing == directory else f"cannot be created in {existing} (not writable)"
        )
    return ""


def _setting_problems() -> dict[str, str]:
    """Invalid settings, unknown TILECRAFT_* variables, and a TILECRAFT_TARGET that does not parse. The
    sections before loaded the backends, so the settings they declare are known by now."""
    try:
        found = settings.problems()
        problem = "" if "TILECRAFT_TARGET" in found else _target_problem()
    except Exception as err:  # doctor reports problems; it must not crash on them
        return {"(settings)": f"checking the settings failed: {type(err).__name__}: {err}"}
    if problem:
        found["TILECRAFT_TARGET"] = problem
    return found


def _target_problem() -> str:
    """Why TILECRAFT_TARGET cannot be used, or "" when it is unset or parses."""
    configured = settings.get("TILECRAFT_TARGET")
    if not configured or configured.strip() == "auto":
        return ""
    try:
        Target.parse("auto")  # reads TILECRAFT_TARGET, and says so when it fails
    except Exception as err:
        return str(err)
    return ""


def cmd_settings() -> int:
    """Print the settings table."""
    print(settings.describe())
    return 0
