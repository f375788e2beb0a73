"""The `tilecraft` command line: `backends`, `backend new`, `backend check`, `doctor`, `settings`, `tune`,
`opt` and `run-tilelang`, in plain text.

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
from typing import Any

from tilecraft import __version__, settings
from tilecraft.backend import BackendModule, Target
from tilecraft.backend._loader import plugin_problems
from tilecraft.backend.detection import detection_report
from tilecraft.backend.registry import registered_backends
from tilecraft.errors import KernelWarning, PluginWarning, TilecraftError
from tilecraft.execution import KernelCache, registered_execution_backends
from tilecraft.tools import opt, tune


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
        return args.run(args) if getattr(args, "takes_args", False) else args.run()
    except TilecraftError as err:
        command = " ".join(filter(None, (args.command, getattr(args, "action", None))))
        print(f"tilecraft {command}: error: {err}", file=sys.stderr)
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
    _backend_parser(commands)
    tune.add_parser(commands)
    opt.add_parser(commands)
    # Listed for --help only: main() hands its arguments to the runner, which parses them itself.
    commands.add_parser(RUN_TILELANG, help="run a TileLang script unchanged (see run-tilelang --help)")
    return parser


RUN_TILELANG = "run-tilelang"


def _backend_parser(commands) -> None:
    text = "scaffold (new) or audit (check) a target backend; docs/backends.md is the guide"
    backend = commands.add_parser("backend", help=text, description=text)
    actions = backend.add_subparsers(dest="action", metavar="action", required=True)
    text = "write a pip-installable backend package: a renamed variant of the backend of kind --from"
    new = actions.add_parser("new", help=text, description=text)
    new.add_argument("name", help="the new backend's name, also its target kind (lower case, digits, _)")
    new.add_argument("--from", dest="template", required=True, metavar="KIND",
                     help="the target kind whose backend it starts from (see `tilecraft backends`)")  # fmt: skip
    new.add_argument("--out", type=Path, help="the folder to write (default: ./tilecraft-NAME)")
    new.set_defaults(run=cmd_backend_new, takes_args=True)
    text = "audit a backend: manifest, boundaries, codegen, compile and the conformance kit, as a table"
    check = actions.add_parser("check", help=text, description=text)
    check.add_argument("name", help="a backend's name or one of its target kinds")
    check.add_argument("--execution", metavar="E", help="run the conformance kit only on execution backend E")
    check.add_argument("--jobs", "-j", type=int, default=0, help="kernels at a time (default: one per core)")
    check.add_argument("--verbose", "-v", action="store_true", help="list every kernel's verdict")
    check.set_defaults(run=cmd_backend_check, takes_args=True)


def cmd_backend_new(args: argparse.Namespace) -> int:
    """Write the package; print where, and what to run next."""
    from tilecraft.tools.scaffold import scaffold

    out = args.out if args.out is not None else Path(f"tilecraft-{args.name}")
    written = scaffold(args.name, args.template, out)
    print(f"wrote backend {args.name!r} (a variant of the {args.template!r} backend) to {out}:")
    for path in written:
        print(f"  {path.relative_to(out)}")
    print(f"next: pip install -e {out} && tilecraft backend check {args.name}   (see {out / 'README.md'})")
    return 0


def cmd_backend_check(args: argparse.Namespace) -> int:
    """Print the audit's table as it runs, then the failed kernels; the status is 1 when a row fails."""
    from tilecraft.tools.audit import audit, default_jobs, find_backend, format_details, format_row

    with _plugin_warnings_listed():
        manifest = find_backend(args.name)
    progress = CheckProgress(sys.stderr, args.verbose)
    rows_ahead = audit(manifest, args.execution, args.jobs or default_jobs(), progress)
    rows = []
    with warnings.catch_warnings():
        # Some conformance kernels warn by design (a fragment sized from its loop); the table is the report.
        warnings.simplefilter("ignore", KernelWarning)
        for row in rows_ahead:
            progress.clear()
            if not rows:
                print(f"tilecraft backend check {manifest.name}\n{format_row_header()}")
            rows.append(row)
            print(format_row(row), flush=True)
    details = format_details(rows, args.verbose)
    if details:
        print()
        print("\n".join(details))
    failed = [r.check for r in rows if r.verdict.status == "fail"]
    print(f"\n{len(rows)} checks: {len(failed)} failed" + (f" ({', '.join(failed)})" if failed else ""))
    return 1 if failed else 0


class CheckProgress:
    """The kernels a row of `backend check` has got through, on stderr while the row runs (a row of the
    conformance kit takes minutes): one line rewritten in place on a terminal; elsewhere (a CI log), a
    line per kernel with --verbose and nothing without."""

    def __init__(self, stream: Any, verbose: bool) -> None:
        self.stream = stream
        self.live = bool(getattr(stream, "isatty", lambda: False)())
        self.verbose = verbose
        self._shown = False

    def __call__(self, check: str, done: int, total: int, kernel: str) -> None:
        text = f"{check}: {done}/{total} kernels ({kernel})"
        if self.live:
            self.stream.write(f"\r\033[K{text}")
            self._shown = True
        elif self.verbose:
            self.stream.write(f"  {text}\n")
        else:
            return
        self.stream.flush()

    def clear(self) -> None:
        """Erase the live line before a row of the table is printed."""
        if self._shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._shown = False


def format_row_header() -> str:
    from tilecraft.testing.conformance import Verdict
    from tilecraft.tools.audit import Row, format_row

    line = format_row(Row("check", Verdict("verdict", "reason")))
    return f"{line}\n{'-' * len(line)}"


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
