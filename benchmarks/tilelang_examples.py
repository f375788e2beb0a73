"""Run TileLang's own examples through `tilecraft run-tilelang` and tabulate what passes, and why not.

A case is one test function of an `examples/<dir>/test_*.py` file of TileLang's repository (those files
give the small problem sizes and the entry points). Each case runs in a fresh process,

    python -m tilecraft.compat --target TARGET [--cuda-on-cpu] -m pytest FILE::CASE

with a time limit, on a copy of the examples (so nothing is written into the source tree). The result of
each case is pass / fail / skip, the first error line and a cause class (a missing API name, a missing
module, a compiler error, a wrong result, a package or GPU generation the case needs, a timeout...).

    python benchmarks/tilelang_examples.py --examples PATH/TO/tilelang/examples --cuda-on-cpu \\
        --jobs 2 --timeout 600 --json results.json --markdown results.md

Not run in CI: it takes an hour or more on a CPU. `--only gemm` runs the cases whose example directory,
file or function name contains `gemm`. The counts and causes are recorded in docs/compat.md,
"TileLang's examples".
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Packages a case may use and still count towards the target (besides numpy and ml_dtypes).
ALLOWED_PACKAGES = ("torch", "einops", "tqdm", "scipy")
# Packages beyond those that examples import: a case whose code imports one is not counted, whether or
# not it is installed where it runs (triton is, on the GPU machine).
OTHER_PACKAGES = ("triton", "flash_attn", "fla")
# Generations whose constructs the target excludes: compute capability 9.0 (Hopper) and later.
FIRST_EXCLUDED_CAPABILITY = 9


@dataclass
class Case:
    """One test function of one test file."""

    example: str  # the directory under examples/
    file: str  # path relative to examples/
    name: str
    decorators: list[str] = field(default_factory=list)
    packages: set[str] = field(default_factory=set)  # top-level packages the case's code imports

    @property
    def node_id(self) -> str:
        return f"{self.file}::{self.name}"


@dataclass
class Outcome:
    """What running one case gave."""

    example: str
    case: str
    status: str  # pass, fail or skip
    first_error: str
    cause: str
    seconds: float
    counted: (
        bool  # whether the case counts towards the target (no package beyond ALLOWED_PACKAGES, no Hopper+)
    )
    log: str
    # decorated for compute capability >= 9 (left out of `counted`); on a GPU of that generation it runs,
    # and issue 30 counts it there (`counted_on_device`)
    hopper_only: bool = False

    @property
    def counted_on_device(self) -> bool:
        """Counted, or a Hopper-only case that ran on the device at hand (not skipped for its generation)."""
        return self.counted or (self.hopper_only and not self.cause.startswith(("needs compute", "needs package")))


def find_cases(examples: Path) -> list[Case]:
    """Every `def test_*` at the top level of examples/*/test_*.py (and below), in path order."""
    cases = []
    for path in sorted(examples.rglob("test_*.py")):
        relative = path.relative_to(examples)
        if relative.parts[0].startswith("bitnet"):  # TileLang's pytest.ini does not collect it
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                decorators = [ast.unparse(d) for d in node.decorator_list]
                packages = imported_packages(path, tree, node)
                cases.append(Case(relative.parts[0], relative.as_posix(), node.name, decorators, packages))
    return cases


def imported_packages(path: Path, tree: ast.Module, test: ast.FunctionDef) -> set[str]:
    """The top-level packages a case needs: those its test file imports for it, and those every example
    module of its directory that it uses imports anywhere (a benchmark's `import triton` inside main
    included), followed through the directory's modules."""
    used = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    wanted = [n for n in tree.body if _is_import(n) and _binds(n) & used]
    packages: set[str] = set()
    seen: set[Path] = set()
    while wanted:
        node = wanted.pop()
        for name in _module_names(node):
            local = path.parent / f"{name}.py"
            if not local.is_file():
                packages.add(name.split(".")[0])
            elif local not in seen:
                seen.add(local)
                module = ast.parse(local.read_text(encoding="utf-8"))
                wanted.extend(n for n in ast.walk(module) if _is_import(n))
    return packages


def _module_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return [node.module] if node.module and not node.level else []


def isolated_copy(case: Case, work: Path) -> str:
    """Write the case into a test file of its own, beside the original, that keeps only the imports
    and helpers the case uses; returns its node id. TileLang's test files import every example of
    their directory at the top, so in the original one broken example fails all the file's cases."""
    source = (work / case.file).read_text(encoding="utf-8")
    tree = ast.parse(source)
    test = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == case.name)
    kept = [n for n in tree.body if not _is_other_test_or_main(n, case.name)]
    used = {
        n.id
        for n in ast.walk(ast.Module([s for s in kept if not _is_import(s)], []))
        if isinstance(n, ast.Name)
    }
    used |= {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    body = [n for n in kept if not _is_import(n) or _binds(n) & used]
    path = Path(case.file)
    isolated = path.with_name(f"test_isolated_{path.stem.removeprefix('test_')}__{case.name}.py")
    (work / isolated).write_text(ast.unparse(ast.Module(body, [])) + "\n", encoding="utf-8")
    return f"{isolated.as_posix()}::{case.name}"


def _is_import(node: ast.stmt) -> bool:
    return isinstance(node, (ast.Import, ast.ImportFrom))


def _binds(node: ast.Import | ast.ImportFrom) -> set[str]:
    return {(a.asname or a.name).split(".")[0] for a in node.names}


def _is_other_test_or_main(node: ast.stmt, name: str) -> bool:
    if isinstance(node, ast.FunctionDef):
        return node.name.startswith("test_") and node.name != name
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)


def run_case(case: Case, work: Path, options: argparse.Namespace) -> Outcome:
    """Run one case in a fresh process; kill its whole process group when it runs out of time."""
    logs = work / "_logs"
    stem = case.node_id.replace("/", "__").replace("::", "--")
    junit, log = logs / f"{stem}.xml", logs / f"{stem}.log"
    node_id = isolated_copy(case, work) if options.isolate else case.node_id
    command = pytest_command(options) + ["-q", "-p", "no:cacheprovider", f"--junitxml={junit}", node_id]
    start = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        process = subprocess.Popen(command, cwd=work, env=case_env(), stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
        try:
            process.wait(timeout=options.timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            timed_out = True
    seconds = time.monotonic() - start
    text = log.read_text(encoding="utf-8", errors="replace")
    if timed_out:
        status, first, cause = "fail", f"no result within {options.timeout} s", "timeout"
    else:
        status, first, detail = read_junit(junit, text)
        cause = classify(status, first, detail)
    return Outcome(case.example, case.node_id, status, first, cause, round(seconds, 1),
                   counts_toward_target(case, cause), str(log), is_hopper_only(case))  # fmt: skip


def pytest_command(options: argparse.Namespace) -> list[str]:
    """`python -m tilecraft.compat [--cuda-on-cpu ...] -m pytest`: pytest under the TileLang import hook."""
    command = [sys.executable, "-m", "tilecraft.compat", "--target", options.target]
    if options.cuda_on_cpu:
        command += ["--cuda-on-cpu", "--cuda-capability", options.cuda_capability]
    return command + ["-m", "pytest"]


def case_env() -> dict[str, str]:
    """The environment of a case's process: this checkout of tilecraft first on the path (it, not an
    installed copy, is what is measured); no bytecode written into the copy; plots without a display."""
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg")


def read_junit(junit: Path, log: str) -> tuple[str, str, str]:
    """(status, first error line, full error text) of the single case in a pytest junit file."""
    if not junit.is_file():
        return "fail", _first_error(log) or "pytest wrote no report (crashed?)", log[-4000:]
    root = ET.parse(junit).getroot()
    cases = list(root.iter("testcase"))
    if not cases:
        return "fail", _first_error(log) or "no test was collected", log[-4000:]
    for element in cases[0]:
        tag = element.tag
        text = (element.get("message") or "") + "\n" + (element.text or "")
        if tag == "skipped":
            return "skip", (element.get("message") or "").strip(), text
        if tag in ("failure", "error"):
            return "fail", _first_error(element.text or "") or (element.get("message") or "").strip(), text
    return "pass", "", ""


_E_LINE = re.compile(r"^E\s+(.*\S)", re.M)
_EXCEPTION_LINE = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt)\b.*)$", re.M)


def _first_error(text: str) -> str:
    """The exception line of a pytest traceback (its first `E   ...` line, else a `XxxError: ...` line)."""
    for pattern in (_E_LINE, _EXCEPTION_LINE):
        found = pattern.search(text)
        if found:
            return found.group(1).strip()[:300]
    return ""


_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"TileLang module '([\w.]+)' has no tilecraft counterpart"), "missing module: {0}"),
    (re.compile(r"ParseError:.*?([\w.]+) has no attribute '(\w+)'"), "missing API: {0}.{1} (in a kernel)"),
    (re.compile(r"(?:type object|module) '([\w.]+)' has no attribute '(\w+)'"), "missing API: {0}.{1}"),
    (re.compile(r"'(\w+)' object has no attribute '(\w+)'"), "missing API: {0}.{1}"),
    (re.compile(r"must be str(?:ing)?, not '(DataType)'"), "dtype is not a str ({0})"),
    (re.compile(r"`(tvm[\w.]*|tilelang[\w.]*)` is not provided"), "unmapped TVM or intrinsics: {0}"),
    (re.compile(r"tilecraft has no TVM|No module named '(tvm)\b|cannot import name '(tvm)'"), "uses TVM directly"),
    (re.compile(r"No module named '([\w]+)"), "needs package: {0}"),
    (re.compile(r"cannot import name '(\w+)' from '(tilecraft[\w.]*)'"), "missing API: {1}.{0}"),
    (re.compile(r"Requires package\(s\) (.+?), not installed"), "needs package: {0}"),
    (re.compile(r"Requires CUDA compute (\w+) (\d+)\.(\d+)"), "needs compute {0} {1}.{2}"),
    (re.compile(r"(ParseError|SemanticError|LoweringError|ToolchainError|TargetError|ArgumentError|"
                r"OutOfBoundsError|TilecraftError)\b:?\s*(.*)"), "tilecraft {0}: {1}"),
    (re.compile(r"(Mismatched elements|not close|Too many mismatched|differ beyond)"), "wrong result"),
    (re.compile(r"AssertionError:?\s*(.*)"), "assertion: {0}"),
]  # fmt: skip


def classify(status: str, first: str, detail: str) -> str:
    """A short cause class for a failed or skipped case (the first rule that matches wins)."""
    if status == "pass":
        return ""
    for text in (first, detail):
        for pattern, template in _RULES:
            found = pattern.search(text)
            if found:
                return _shorten(_tilelang_names(template.format(*found.groups())))
    return _shorten(first.split(":")[0] if first else "unknown")


def _tilelang_names(text: str) -> str:
    """A missing tilecraft name is reported by the TileLang name the example used."""
    return re.sub(r"\btilecraft(?=[.\s]|$)", "tilelang", text) if text.startswith("missing") else text


def _shorten(text: str) -> str:
    text = re.sub(r"/\S+?:\d+:\d+:?", "", text)  # file:line:col of a kernel
    return text.strip()[:120]


def is_hopper_only(case: Case) -> bool:
    """Decorated for compute capability 9.0 or later, and needing no package beyond ALLOWED_PACKAGES."""
    if case.packages & set(OTHER_PACKAGES):
        return False
    return any(_needs_hopper(d) for d in case.decorators)


def _needs_hopper(decorator: str) -> bool:
    found = re.search(r"requires_cuda_compute_version(?:_(ge|gt|eq))?\((\d+)", decorator)
    return bool(found) and int(found.group(2)) >= FIRST_EXCLUDED_CAPABILITY


def counts_toward_target(case: Case, cause: str) -> bool:
    """The issue counts cases that need no package beyond ALLOWED_PACKAGES and no Hopper/Blackwell-only
    construct (`left_out_reason` says why a case is not counted)."""
    return not left_out_reason(case, cause)


def left_out_reason(case: Case, cause: str) -> str:
    """Why a case does not count towards the target, or "" when it does: a case decorated for compute
    capability >= 9, or failing for want of a package, is out. So is a case its own decorator skips on the
    device at hand (`requires_cuda_compute_version_le(8, 9)` on a Hopper GPU): TileLang's test run skips it
    there too."""
    for decorator in case.decorators:
        if _needs_hopper(decorator):
            return f"compute capability >= {FIRST_EXCLUDED_CAPABILITY}.0"
        if "requires_package" in decorator or "requires_gfx" in decorator or "requires_rocm" in decorator:
            return "needs a package or an AMD GPU"
    if re.match(r"needs compute (le|lt|eq) ", cause):
        return "skipped by its own compute-capability decorator"
    other = case.packages & set(OTHER_PACKAGES)
    if other:
        return f"needs package: {', '.join(sorted(other))}"
    package = re.match(r"needs package: (\w+)", cause)
    if package and package.group(1) not in ALLOWED_PACKAGES:
        return f"needs package: {package.group(1)}"
    return ""


def _on_device_line(outcomes: list[Outcome]) -> str:
    on_device = [o for o in outcomes if o.counted_on_device]
    passed = sum(o.status == "pass" for o in on_device)
    return (f"- counted with the Hopper-only cases that ran on this device (issue 30): {len(on_device)}; "
            f"pass {passed} ({100 * passed / max(len(on_device), 1):.0f}%)")  # fmt: skip


def summary(outcomes: list[Outcome]) -> list[str]:
    """Markdown lines: the counts, then the causes of failures and skips by frequency."""
    status = Counter(o.status for o in outcomes)
    counted = [o for o in outcomes if o.counted]
    passed = sum(o.status == "pass" for o in counted)
    lines = [
        f"- cases: {len(outcomes)}; pass {status['pass']}, fail {status['fail']}, skip {status['skip']}",
        f"- counted towards the target (no package beyond {', '.join(ALLOWED_PACKAGES)}; no Hopper/Blackwell-"
        f"only case): {len(counted)}; pass {passed} ({100 * passed / max(len(counted), 1):.0f}%)",
        _on_device_line(outcomes),
        "",
    ]
    return lines + cause_table(outcomes, "counted")


def cause_table(outcomes: list[Outcome], counted: str) -> list[str]:
    """Markdown lines: the causes of failures and skips by frequency; `counted` names the column of the
    cases that count."""
    lines = [f"| cause | failed | skipped | of them {counted} |", "|---|---|---|---|"]
    causes = Counter(o.cause for o in outcomes if o.status != "pass")
    for cause, _ in causes.most_common():
        these = [o for o in outcomes if o.cause == cause and o.status != "pass"]
        failed = sum(o.status == "fail" for o in these)
        lines.append(f"| {cause} | {failed} | {len(these) - failed} | {sum(o.counted for o in these)} |")
    return lines


def table(outcomes: list[Outcome]) -> list[str]:
    """Markdown lines: one row per case."""
    lines = ["| example | case | status | first error line | cause |", "|---|---|---|---|---|"]
    for o in outcomes:
        first = o.first_error.replace("|", "\\|")[:160]
        lines.append(f"| {o.example} | {o.case.split('::')[1]} | {o.status} | {first} | {o.cause} |")
    return lines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", required=True, type=Path, help="TileLang's examples/ directory")
    add_run_options(parser, timeout=600)
    parser.add_argument("--only", default="", help="run only cases whose path or name contains this")
    parser.add_argument(
        "--isolate", action="store_true",
        help="run each case from a file of its own that imports only what the case uses",
    )  # fmt: skip
    parser.add_argument("--work", type=Path, help="where the examples are copied (default: a temporary dir)")
    parser.add_argument(
        "--reclassify", type=Path, metavar="JSON",
        help="run nothing: read the outcomes of an earlier run (its --json) and classify them again",
    )  # fmt: skip
    return parser


def add_run_options(parser: argparse.ArgumentParser, timeout: float) -> None:
    """The options of a harness that runs TileLang's cases: target, emulation, time limit, jobs, reports."""
    parser.add_argument("--target", default="c", help="tilecraft target (default: c, the CPU)")
    parser.add_argument("--cuda-on-cpu", action="store_true", help="emulate torch's CUDA device on the host")
    parser.add_argument("--cuda-capability", default="8.0", help="the emulated device's compute capability")
    parser.add_argument(
        "--timeout", type=float, default=timeout, help=f"seconds per case (default {timeout:g})"
    )
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1)")
    parser.add_argument("--json", type=Path, help="write every outcome here, as JSON")
    parser.add_argument("--markdown", type=Path, help="write the summary and the table here")


def reclassify(previous: Path, examples: Path) -> list[Outcome]:
    """The outcomes of an earlier run with their status, first error and cause read again from its
    reports (after the rules changed); timeouts stay timeouts."""
    decorators = {c.node_id: c for c in find_cases(examples)}
    outcomes = []
    for item in json.loads(previous.read_text(encoding="utf-8")):
        outcome = Outcome(**item)
        log = Path(outcome.log)
        if outcome.cause != "timeout" and log.is_file():
            text = log.read_text(encoding="utf-8", errors="replace")
            outcome.status, outcome.first_error, detail = read_junit(log.with_suffix(".xml"), text)
            outcome.cause = classify(outcome.status, outcome.first_error, detail)
        case = decorators.get(outcome.case)
        outcome.counted = counts_toward_target(case, outcome.cause) if case else outcome.counted
        outcome.hopper_only = is_hopper_only(case) if case else outcome.hopper_only
        outcomes.append(outcome)
    return outcomes


def write_reports(
    outcomes: list[Outcome], options: argparse.Namespace, head: list[str] | None = None
) -> None:
    """Print the summary (`head`, else this harness's) and the per-case table; write --json, --markdown."""
    report = [*(summary(outcomes) if head is None else head), "", *table(outcomes)]
    if options.json:
        options.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1), encoding="utf-8")
    if options.markdown:
        options.markdown.write_text("\n".join(report) + "\n", encoding="utf-8")
    print("\n".join(report))


def main(argv: list[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    if not (options.examples / "conftest.py").is_file():
        raise SystemExit(f"--examples {options.examples}: not TileLang's examples/ (no conftest.py there)")
    if options.reclassify:
        write_reports(reclassify(options.reclassify, options.examples), options)
        return 0
    work = options.work or Path(tempfile.mkdtemp(prefix="tilelang-examples-"))
    shutil.copytree(options.examples, work, dirs_exist_ok=True)
    (work / "_logs").mkdir(exist_ok=True)
    cases = [c for c in find_cases(work) if options.only in c.node_id]
    print(f"{len(cases)} cases; copies and logs in {work}", file=sys.stderr)

    def one(case: Case) -> Outcome:
        outcome = run_case(case, work, options)
        print(f"{outcome.status:4} {outcome.seconds:6.0f}s {case.node_id}  {outcome.cause}", file=sys.stderr)
        return outcome

    with ThreadPoolExecutor(max(options.jobs, 1)) as pool:
        outcomes = list(pool.map(one, cases))
    write_reports(outcomes, options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
