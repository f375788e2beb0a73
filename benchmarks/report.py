"""The performance page: docs/performance.md and its plots, generated from the JSON in benchmarks/results/.

    python benchmarks/report.py            # writes docs/performance.md and docs/images/perf-*.png
    python benchmarks/report.py --check    # exit 1 when docs/performance.md is not what the JSON gives

Each workload is one JSON file in benchmarks/results/, an object with `workload` (a name), `section`
("gpu" or "cpu"), `title`, `about` (what is measured, how), `source` (the RESULTS.md section it comes
from) and `records`, each record one figure of tilecraft against one peer:

    {"date": "2026-12-02", "device": "NVIDIA H200 (sm_90a)", "command": "python benchmarks/...",
     "case": "GEMM f16 4096^3", "tilecraft": 650, "peer": 676, "peer_name": "cuBLAS", "unit": "TFLOP/s",
     "series": "float16", "size": 4096, "note": "..."}

`series`, `size` and `note` are optional; records with a `size` are also plotted against it. A workload
measured by benchmarks/tilelang_regression.py names that script's own JSON instead of holding records:
`outcomes` (files in benchmarks/results/, later ones win) and `run` (the `date`, `device` and `command`
they share). Every other JSON file there must be named by such a workload.

The ratio is how many times faster tilecraft is: peer time / tilecraft time, or tilecraft throughput /
peer throughput; above 1.00x tilecraft is faster. benchmarks/RESULTS.md remains the dated log of every
run; a new run's figures replace a workload's records here (`python benchmarks/cpu.py --json` writes
its file directly), then this script rewrites the page. The plots need matplotlib; the page does not.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import tilelang_regression  # noqa: E402 - benchmarks/ is not a package on sys.path when run as a script

RESULTS = REPO / "benchmarks" / "results"
PAGE = REPO / "docs" / "performance.md"
IMAGES = REPO / "docs" / "images"
COMMAND = "python benchmarks/report.py"
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
RATE_UNITS = ("TFLOP/s", "GFLOP/s", "TB/s", "GB/s")
SECTIONS = {"gpu": "GPU", "cpu": "CPU"}
RECORD_FIELDS = ("date", "device", "command", "case", "tilecraft", "peer", "peer_name", "unit")
OPTIONAL_FIELDS = ("series", "size", "note")
WORKLOAD_FIELDS = ("workload", "section", "title", "about", "source")
NOT_HERE = (
    "Start-up (`benchmarks/startup.py`), cold compile and warm load times, the CPU launcher "
    "(`benchmarks/launch_cpu.py`), autotuning scale-out (`benchmarks/tune_scaleout.py`) and the ablations of "
    "single switches (`benchmarks/hopper_check.py`, `hopper_epilogue.py`, `gemm_sweep.py`) have no peer "
    "figure of the same run, or are older than the figures above; they are in "
    "[benchmarks/RESULTS.md](../benchmarks/RESULTS.md), with every earlier run."
)


class ResultsError(ValueError):
    """A results file that does not follow the format above; the message names the file and the field."""


@dataclass(frozen=True)
class Record:
    """One figure of tilecraft and its peer's, of one case, measured in one run."""

    date: str
    device: str
    command: str
    case: str
    tilecraft: float
    peer: float
    peer_name: str
    unit: str
    series: str | None = None
    size: int | None = None
    note: str | None = None

    @property
    def ratio(self) -> float:
        """How many times faster tilecraft is than the peer (above 1: faster)."""
        if self.unit in TIME_UNITS:
            return self.peer / self.tilecraft
        return self.tilecraft / self.peer

    @property
    def run(self) -> tuple[str, str, str]:
        return self.date, self.device, self.command


@dataclass(frozen=True)
class Workload:
    """One table of the page: a workload's records, in the order of its file."""

    name: str
    section: str
    title: str
    about: str
    source: str
    records: tuple[Record, ...]
    path: Path

    @property
    def image(self) -> str:
        return f"perf-{self.name}.png"


# ---------------------------------------------------------------------- reading


def check_record(raw: object, where: str) -> Record:
    """The record `raw` (a dict from a results file), or a ResultsError naming `where` and the problem."""
    if not isinstance(raw, dict):
        raise ResultsError(f"{where}: a record is an object, got {raw!r}")
    missing = [f for f in RECORD_FIELDS if raw.get(f) in (None, "")]
    if missing:
        raise ResultsError(f"{where}: the record of {raw.get('case', '?')!r} lacks {', '.join(missing)}")
    unknown = sorted(set(raw) - set(RECORD_FIELDS) - set(OPTIONAL_FIELDS))
    if unknown:
        raise ResultsError(
            f"{where}: unknown fields {unknown}; a record has {', '.join(RECORD_FIELDS + OPTIONAL_FIELDS)}"
        )
    for name in ("tilecraft", "peer"):
        value = raw[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ResultsError(f"{where}: {raw['case']!r}: {name} must be a positive number, got {value!r}")
    if raw["unit"] not in (*TIME_UNITS, *RATE_UNITS):
        raise ResultsError(
            f"{where}: {raw['case']!r}: unit {raw['unit']!r}; known: {', '.join((*TIME_UNITS, *RATE_UNITS))}"
        )
    if len(raw["date"]) != 10 or raw["date"][4] != "-" or raw["date"][7] != "-":
        raise ResultsError(f"{where}: {raw['case']!r}: date {raw['date']!r} is not YYYY-MM-DD")
    return Record(**raw)


def regression_records(spec: dict, where: str) -> list[Record]:
    """The records of a workload that names benchmarks/tilelang_regression.py's outcome files."""
    run = spec.get("run")
    if not isinstance(run, dict):
        raise ResultsError(f"{where}: `outcomes` needs `run`, the date, device and command they share")
    outcomes = []
    for name in spec["outcomes"]:
        path = RESULTS / name
        if not path.exists():
            raise ResultsError(f"{where}: outcome file {name} is not in {RESULTS.relative_to(REPO)}")
        outcomes += [tilelang_regression.Outcome(**o) for o in json.loads(path.read_text())]
    records = []
    for row in tilelang_regression.rows_of(outcomes):
        if row.ratio is None:
            continue  # a side without a figure: absent, as in RESULTS.md's count of cases timed by both
        raw = dict(run, case=f"{Path(row.file).parent}/{row.name}", tilecraft=row.tilecraft,
                   peer=row.tilelang, peer_name="TileLang", unit="ms")  # fmt: skip
        records.append(check_record(raw, where))
    return records


def load_workload(path: Path) -> Workload:
    where = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
    spec = json.loads(path.read_text())
    missing = [f for f in WORKLOAD_FIELDS if not spec.get(f)]
    if missing:
        raise ResultsError(f"{where}: a workload needs {', '.join(missing)}")
    if spec["section"] not in SECTIONS:
        raise ResultsError(f"{where}: section {spec['section']!r}; known: {', '.join(SECTIONS)}")
    if "outcomes" in spec:
        records = regression_records(spec, where)
    else:
        records = [check_record(r, f"{where}, record {i}") for i, r in enumerate(spec.get("records", []), 1)]
    if not records:
        raise ResultsError(f"{where}: no records")
    return Workload(spec["workload"], spec["section"], spec["title"], spec["about"], spec["source"],
                    tuple(records), path)  # fmt: skip


def load_workloads(results: Path = RESULTS) -> list[Workload]:
    """Every workload of `results`, sorted by section and file name; a ResultsError for a file that is
    neither a workload nor named by one."""
    files = sorted(results.glob("*.json"))
    specs = {p: json.loads(p.read_text()) for p in files}
    named = {n for s in specs.values() if isinstance(s, dict) for n in s.get("outcomes", [])}
    stray = [p.name for p, s in specs.items() if not isinstance(s, dict) and p.name not in named]
    if stray:
        raise ResultsError(f"{', '.join(stray)}: not a workload, and no workload names it in `outcomes`")
    workloads = [load_workload(p) for p, s in specs.items() if isinstance(s, dict)]
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        raise ResultsError(f"two files hold the same workload: {sorted(names)}")
    return sorted(workloads, key=lambda w: (list(SECTIONS).index(w.section), w.path.name))


# ---------------------------------------------------------------------- the page


def figure(value: float) -> str:
    return f"{value:.4g}"


def shown(value: float, unit: str, header_unit: str | None) -> str:
    """A figure in a table cell: its unit is in the column's header when the whole table has one."""
    return figure(value) if header_unit else f"{figure(value)} {unit}"


def runs_of(records: Iterable[Record]) -> list[tuple[str, str, str]]:
    runs: list[tuple[str, str, str]] = []
    for r in records:
        if r.run not in runs:
            runs.append(r.run)
    return runs


def render_table(workload: Workload) -> list[str]:
    """The workload's table: a row per case (and run), tilecraft's figure, each peer's and the ratio."""
    records = workload.records
    runs = runs_of(records)
    peers = list(dict.fromkeys(r.peer_name for r in records))
    rows: dict[tuple[str, int], dict[str, Record]] = {}
    for r in records:
        rows.setdefault((r.case, runs.index(r.run)), {})[r.peer_name] = r
    unit = records[0].unit if len({r.unit for r in records}) == 1 else None
    header = ["case"] + (["run"] if len(runs) > 1 else []) + [f"tilecraft{f' ({unit})' if unit else ''}"]
    for peer in peers:
        header += [f"{peer}{f' ({unit})' if unit else ''}", f"vs {peer}"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (case, run), by_peer in rows.items():
        first = next(iter(by_peer.values()))
        cells = (
            [case] + ([str(run + 1)] if len(runs) > 1 else []) + [shown(first.tilecraft, first.unit, unit)]
        )
        for peer in peers:
            r = by_peer.get(peer)
            cells += ["", ""] if r is None else [shown(r.peer, r.unit, unit), f"{r.ratio:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_runs(workload: Workload) -> list[str]:
    runs = runs_of(workload.records)
    lines = []
    for i, (date, device, command) in enumerate(runs, 1):
        label = f"Run {i}: " if len(runs) > 1 else ""
        lines.append(f"- {label}{date}, {device}; `{command}`")
    notes = list(dict.fromkeys(r.note for r in workload.records if r.note))
    lines += [f"- Note: {n.rstrip('.')}." for n in notes]
    lines.append(
        f"- From {workload.source}; data: [{workload.path.name}](../benchmarks/results/{workload.path.name})."
    )
    return lines


def geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def render_workload(workload: Workload, images: dict[str, list[str]]) -> list[str]:
    ratios = [r.ratio for r in workload.records]
    summary = (f"{len(ratios)} figures; ratio {min(ratios):.2f}x to {max(ratios):.2f}x, geometric mean "
               f"{geometric_mean(ratios):.2f}x.")  # fmt: skip
    lines = [f"### {workload.title}", "", workload.about, "", *render_runs(workload), "",
             *render_table(workload), "", summary, ""]  # fmt: skip
    for image, alt in images.get(workload.name, []):
        lines += [f"![{alt}](images/{image})", ""]
    return lines


def plots_of(workloads: Sequence[Workload]) -> dict[str, list[tuple[str, str]]]:
    """workload name -> (PNG file name, alt text) of each plot the page shows for it."""
    shown: dict[str, list[tuple[str, str]]] = {}
    for w in workloads:
        shown[w.name] = [(w.image, f"{w.title}: tilecraft against its peers, per case")]
        if sum(1 for r in w.records if r.size is not None) >= 2:
            shown[w.name].append((f"perf-{w.name}-sizes.png", f"{w.title}: {w.records[0].unit} against size"))
    return shown


def render_page(workloads: Sequence[Workload]) -> str:
    """The whole of docs/performance.md."""
    images = plots_of(workloads)
    lines = [
        f"<!-- Generated by `{COMMAND}` from benchmarks/results/*.json; edit those and run it again. -->",
        "",
        "# Performance",
        "",
        f"This page is generated by `{COMMAND}` from the figures recorded in `benchmarks/results/*.json`, the",
        "current figure of each workload (benchmarks/report.py says how to add one). Each table says on which",
        "device, on which date and by which command its figures were measured. The",
        "[dated log](../benchmarks/RESULTS.md) has every run, the earlier ones included, and what was learnt.",
        "",
        "**Ratio** (`vs <peer>`): how many times faster tilecraft is than the peer, that is the peer's time",
        "over tilecraft's, or tilecraft's throughput over the peer's; above 1.00x tilecraft is faster. Ratios are",
        "computed from the figures shown, so one may differ from RESULTS.md's in the last digit.",
        "",
    ]
    for section, heading in SECTIONS.items():
        chosen = [w for w in workloads if w.section == section]
        if not chosen:
            continue
        lines += [f"## {heading}", ""]
        for w in chosen:
            lines += render_workload(w, images)
    lines += ["## Not on this page", "", NOT_HERE, ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------- the plots


def pyplot():
    """matplotlib's pyplot on a file backend, or SystemExit naming the package."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit(
            f"the plots need matplotlib, which is not installed: pip install matplotlib (or `{COMMAND} "
            "--no-plots` for the page alone)"
        ) from None
    return plt


def save(fig, path: Path) -> None:
    fig.tight_layout()
    # no matplotlib version in the file, so a rerun on the same data writes the same bytes
    fig.savefig(path, dpi=90, bbox_inches="tight", metadata={"Software": None})


def plot_ratios(workload: Workload, path: Path) -> None:
    """A bar per (case, peer) from the line of parity to the ratio, coloured by peer."""
    plt = pyplot()
    records = list(workload.records)
    peers = list(dict.fromkeys(r.peer_name for r in records))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, ax = plt.subplots(figsize=(7.5, 1.3 + 0.26 * len(records)))
    for peer in peers:
        rows = [(i, r) for i, r in enumerate(records) if r.peer_name == peer]
        ax.barh([i for i, _ in rows], [r.ratio - 1.0 for _, r in rows], left=1.0, label=f"vs {peer}",
                color=colors[peers.index(peer) % len(colors)])  # fmt: skip
    ax.set_yticks(range(len(records)), [r.case for r in records], fontsize=7)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linewidth=0.8)
    low, high = min(1.0, *(r.ratio for r in records)), max(1.0, *(r.ratio for r in records))
    ax.set_xlim(low - 0.12 * (high - low) - 0.02, high + 0.12 * (high - low) + 0.02)
    ax.set_xlabel("times as fast as the peer (right of 1: tilecraft is faster)")
    ax.set_title(f"{workload.title} ({', '.join(sorted({r.date for r in records}))})", fontsize=10)
    for i, r in enumerate(records):
        ax.annotate(f"{r.ratio:.2f}x", (r.ratio, i), xytext=(3 if r.ratio >= 1 else -3, 0),
                    textcoords="offset points", va="center", ha="left" if r.ratio >= 1 else "right",
                    fontsize=7)  # fmt: skip
    if len(peers) > 1:
        ax.legend(fontsize=7, loc="best")
    save(fig, path)
    plt.close(fig)


def plot_sizes(workload: Workload, path: Path) -> None:
    """tilecraft's and each peer's figure against the size: a colour per system, a marker per series."""
    plt = pyplot()
    sized = [r for r in workload.records if r.size is not None]
    systems = ["tilecraft", *dict.fromkeys(r.peer_name for r in sized)]
    series = list(dict.fromkeys(r.series for r in sized))
    points: dict[tuple[str, str | None], dict[int, float]] = {}
    for r in sized:
        points.setdefault(("tilecraft", r.series), {})[r.size] = r.tilecraft
        points.setdefault((r.peer_name, r.series), {})[r.size] = r.peer
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for (system, kind), values in points.items():
        sizes = sorted(values)
        label = f"{system}, {kind}" if kind and len(series) > 1 else system
        ax.plot(sizes, [values[s] for s in sizes], "-" if system == "tilecraft" else "--",
                marker="osD^v"[series.index(kind) % 5], color=colors[systems.index(system) % len(colors)],
                label=label)  # fmt: skip
    ticks = sorted({r.size for r in sized})
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [str(s) for s in ticks])
    ax.minorticks_off()
    ax.set_xlabel("size (M = N = K)" if "GEMM" in sized[0].case else "size")
    ax.set_ylabel(sized[0].unit)
    if sized[0].unit in TIME_UNITS:
        ax.set_yscale("log")
    ax.set_title(f"{workload.title} ({sized[0].date})", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    save(fig, path)
    plt.close(fig)


def write_plots(workloads: Sequence[Workload], images: Path = IMAGES) -> list[Path]:
    """Every plot the page shows, written under `images`; the paths."""
    images.mkdir(parents=True, exist_ok=True)
    written = []
    for w in workloads:
        for name, _ in plots_of([w])[w.name]:
            path = images / name
            if name.endswith("-sizes.png"):
                plot_sizes(w, path)
            else:
                plot_ratios(w, path)
            written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the page is up to date")
    parser.add_argument("--no-plots", action="store_true", help="write the page, not the plots")
    args = parser.parse_args(argv)
    workloads = load_workloads()
    page = render_page(workloads)
    if args.check:
        if PAGE.exists() and PAGE.read_text() == page:
            return 0
        print(f"{PAGE.relative_to(REPO)} is out of date: run {COMMAND}", file=sys.stderr)
        return 1
    if not args.no_plots:
        for path in write_plots(workloads):
            print(f"wrote {path.relative_to(REPO)} ({path.stat().st_size // 1024} KiB)")
    PAGE.write_text(page)
    print(f"wrote {PAGE.relative_to(REPO)}: {len(workloads)} workloads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
