"""TileLang's performance-regression suite under TileLang and under tilecraft, case by case, on one GPU.

TileLang's repository guards its speed with `examples/*/regression_*.py`: each file's `regression_*`
functions call `tilelang.testing.process_func(run_regression_perf, ...)`, which records the latency a
kernel's own timing returns (most examples time with `do_bench(backend="cupti")`: kernel time alone).
This script runs every case in a fresh process for each compiler, one process at a time on the GPU:

    TileLang:  PYTHONPATH=<site with tilelang> python FILE
    tilecraft: python -m tilecraft.compat FILE

with `TL_PERF_REGRESSION_ONLY=[r]egression_<case>` (a glob matching that case's name alone) and
`TL_PERF_REGRESSION_FORMAT=json`, and reads the results line. Both sides run the same file, so the same
kernel text, sizes and timing method. The ratio is TileLang's latency over tilecraft's: above 1,
tilecraft is faster.

    python benchmarks/tilelang_regression.py run --examples tilelang/examples \\
        --tilelang-site /tmp/site --json results.json [--only gemm,cast] [--timeout 600]
    python benchmarks/tilelang_regression.py report results.json --markdown table.md --plot ratios.png

`run` needs a GPU (it is the device tool's job, not CI's); `report` needs only the JSON (and matplotlib for
the plot). The table and the geometric mean go into benchmarks/RESULTS.md with the date and command.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS_PREFIX = "__TILELANG_PERF_RESULTS_JSON__="
SIDES = ("tilelang", "tilecraft")


@dataclass
class Case:
    """One `regression_*` function of one regression file."""

    file: str  # relative to the examples directory
    function: str

    @property
    def name(self) -> str:
        return self.function.removeprefix("regression_")


@dataclass
class Outcome:
    """What one side gave for one case: latencies by recorded name, or the error that stopped it."""

    case: str
    file: str
    side: str
    latencies: dict[str, float]
    error: str
    seconds: float


def find_cases(examples: Path, only: list[str]) -> list[Case]:
    cases = []
    for path in sorted(examples.glob("*/regression_*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("regression_"):
                case = Case(str(path.relative_to(examples)), node.name)
                if not only or any(o in case.file or o in case.name for o in only):
                    cases.append(case)
    return cases


def _environment(side: str, tilelang_site: str | None) -> dict[str, str]:
    env = dict(os.environ, TL_PERF_REGRESSION_FORMAT="json", PYTHONUNBUFFERED="1")
    env.pop("PYTHONPATH", None)
    if side == "tilelang":
        if tilelang_site:
            env["PYTHONPATH"] = tilelang_site
    else:
        env["PYTHONPATH"] = str(REPO)
    return env


def _command(side: str, file: Path, compat_options: list[str]) -> list[str]:
    if side == "tilelang":
        return [sys.executable, file.name]
    return [sys.executable, "-m", "tilecraft.compat", *compat_options, file.name]


def _first_error(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "error:" in line or line.startswith("AssertionError"):
            return line[:300]
    return lines[-1][:300] if lines else "no output"


def run_case(examples: Path, case: Case, side: str, args: argparse.Namespace) -> Outcome:
    file = examples / case.file
    env = _environment(side, args.tilelang_site)
    env["TL_PERF_REGRESSION_ONLY"] = f"[{case.function[0]}]{case.function[1:]}"
    start = time.perf_counter()
    try:
        done = subprocess.run(
            _command(side, file, args.compat_option),
            cwd=file.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=args.timeout,
        )
        output = done.stdout + done.stderr
        failed = done.returncode != 0
    except subprocess.TimeoutExpired as err:
        output = f"{err.stdout or ''}{err.stderr or ''}\ntimed out after {args.timeout:.0f} s"
        failed = True
    seconds = time.perf_counter() - start
    latencies: dict[str, float] = {}
    for line in output.splitlines():
        if line.startswith(RESULTS_PREFIX):
            for row in json.loads(line[len(RESULTS_PREFIX) :]):
                latencies[row["name"]] = float(row["latency"])
    error = _first_error(output) if failed or not latencies else ""
    return Outcome(case.name, case.file, side, latencies, error, seconds)


def run(args: argparse.Namespace) -> None:
    examples = Path(args.examples).resolve()
    cases = find_cases(examples, [o for o in args.only.split(",") if o])
    print(f"{len(cases)} cases in {len({c.file for c in cases})} files", flush=True)
    outcomes: list[Outcome] = []
    for i, case in enumerate(cases, 1):
        for side in args.sides.split(","):
            outcome = run_case(examples, case, side, args)
            outcomes.append(outcome)
            shown = ", ".join(f"{k} {v:.4f}" for k, v in outcome.latencies.items()) or outcome.error
            print(
                f"[{i}/{len(cases)}] {case.file}::{case.name} {side} ({outcome.seconds:.0f} s): {shown}",
                flush=True,
            )
            Path(args.json).write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    print(render_markdown(rows_of(outcomes)))


@dataclass
class Row:
    """One recorded latency name under both compilers."""

    file: str
    name: str
    tilelang: float | None
    tilecraft: float | None
    note: str

    @property
    def ratio(self) -> float | None:
        if self.tilelang and self.tilecraft:
            return self.tilelang / self.tilecraft
        return None


def rows_of(outcomes: list[Outcome]) -> list[Row]:
    by_case: dict[tuple[str, str], dict[str, Outcome]] = {}
    for o in outcomes:
        by_case.setdefault((o.file, o.case), {})[o.side] = o
    rows = []
    for (file, case), sides in by_case.items():
        names = sorted({n for o in sides.values() for n in o.latencies} or {case})
        for name in names:
            got = {s: sides[s].latencies.get(name) if s in sides else None for s in SIDES}
            notes = [f"{s}: {sides[s].error}" for s in SIDES if s in sides and got[s] is None]
            rows.append(Row(file, name, got["tilelang"], got["tilecraft"], "; ".join(notes)))
    return rows


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def render_markdown(rows: list[Row]) -> str:
    ratios = [r.ratio for r in rows if r.ratio is not None]
    lines = [
        "| file | case | TileLang (ms) | tilecraft (ms) | ratio (TileLang / tilecraft) | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        fmt = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        lines.append(
            f"| {Path(r.file).parent} | {r.name} | {fmt(r.tilelang)} | {fmt(r.tilecraft)} | {ratio} | {r.note[:160]} |"
        )
    at_par = sum(1 for v in ratios if v >= 0.95)
    lines.append("")
    lines.append(
        f"{len(ratios)} of {len(rows)} cases timed by both; geometric mean {geometric_mean(ratios):.2f}x; "
        f"{at_par} at >= 0.95x; {sum(1 for v in ratios if v >= 1.0)} at >= 1.0x."
    )
    return "\n".join(lines)


def plot(rows: list[Row], path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("the plot needs matplotlib: pip install matplotlib")
    timed = sorted((r for r in rows if r.ratio is not None), key=lambda r: r.ratio)
    fig, ax = plt.subplots(figsize=(8, max(3, 0.22 * len(timed))))
    ax.barh([f"{Path(r.file).parent}/{r.name}" for r in timed], [r.ratio for r in timed])
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("TileLang latency / tilecraft latency (above 1: tilecraft faster)")
    ax.set_title(f"TileLang regression suite, geometric mean {geometric_mean([r.ratio for r in timed]):.2f}x")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def report(args: argparse.Namespace) -> None:
    # later files win for a case and side they share: a rerun of a few cases replaces their figures
    outcomes = [Outcome(**o) for path in args.results for o in json.loads(Path(path).read_text())]
    rows = rows_of(outcomes)
    text = render_markdown(rows)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    print(text)
    if args.plot:
        plot(rows, args.plot)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the cases on this machine's GPU under both compilers")
    r.add_argument("--examples", required=True, help="TileLang's examples/ directory")
    r.add_argument(
        "--tilelang-site", help="a directory holding the tilelang package (PYTHONPATH of its side)"
    )
    r.add_argument("--only", default="", help="comma-separated substrings of file paths or case names")
    r.add_argument("--sides", default=",".join(SIDES), help="which compilers to run (default: both)")
    r.add_argument(
        "--compat-option",
        action="append",
        default=[],
        help="an option of `python -m tilecraft.compat` (e.g. --cuda-on-cpu for a dry run)",
    )
    r.add_argument("--timeout", type=float, default=600, help="seconds per case and side")
    r.add_argument("--json", required=True, help="where the outcomes go (rewritten after each run)")
    r.set_defaults(handler=run)
    p = sub.add_parser("report", help="tabulate (and plot) the outcomes of earlier runs")
    p.add_argument("results", nargs="+", help="the JSON files that `run` wrote (later ones win)")
    p.add_argument("--markdown", help="write the table here")
    p.add_argument("--plot", help="write a bar chart of the ratios here (PNG)")
    p.set_defaults(handler=report)
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    main()
