"""Run TileLang's op tests under tilecraft and tabulate what passes, and why not.

TileLang's op tests are the pytest cases of `testing/python/{language,kernel,tilelibrary,cuda}` in its
repository; a parametrized test is one case per parameter set. The cases are collected with

    python -m tilecraft.compat --target TARGET --cuda-on-cpu -m pytest --collect-only ...

and, for a file pytest cannot collect under tilecraft (an import or a module-level kernel fails), read
from the file's AST: one case per test function and literal `pytest.mark.parametrize` entry. Each case
runs in a fresh process with a time limit, on a copy of TileLang's `testing/` (and `examples/`, which
one test imports), exactly as benchmarks/tilelang_examples.py runs an example; a file that cannot be
collected runs once and its outcome is every one of its cases'. Result: pass / fail / skip, the first
error line and a cause class (tilelang_examples.classify).

The *selection* is the op cases: what a kernel computes and whether it is right. `left_out` gives the
rule, a reason class per left-out case, decided from the case's code (the test function and the
module-level definitions it reaches) and, for skips, from the skip reason:

- a compute capability the emulated device (8.0) does not have: >= 9.0 (Hopper, Blackwell), or another
  generation (sm_70, sm_75, sm_89), from `requires_cuda_compute_version*` decorators or the skip reason;
- a package beyond torch, einops, tqdm and scipy (and TileLang's own, numpy, ml_dtypes, pytest);
- TileLang's compiler internals: the case builds or inspects TVM IR (any TVM name but `DataType`,
  `target.Target`, `tirx.const` and the error classes), runs TileLang's passes or `tilelang.lower`,
  prints TVMScript, reads TileLang's JIT adapter, or asserts on the generated source text; or it makes
  no kernel at all (no `prim_func`, `jit`, `compile`, `Kernel`, `macro`: TileLang's package surface).

    python benchmarks/tilelang_optests.py --tilelang PATH/TO/tilelang --cuda-on-cpu --timeout 300 \\
        --json results.json --markdown results.md [--only language/test_tilelang_language_reduce]
    python benchmarks/tilelang_optests.py --tilelang PATH/TO/tilelang --cuda-on-cpu --list   # no run

Only selected cases run unless `--all` is given; `--rerun earlier.json --cause REGEX` runs again only
the cases of an earlier run that did not pass, for a cause that matches, and keeps the other outcomes. The counts are recorded in docs/compat.md, "TileLang's
op tests".
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.tilelang_examples import (  # noqa: E402
    ALLOWED_PACKAGES,
    Case,
    Outcome,
    add_run_options,
    case_env,
    cause_table,
    imported_packages,
    left_out_reason,
    pytest_command,
    run_case,
    write_reports,
)
from benchmarks.tvm_census import _chain, _Collector  # noqa: E402

DIRS = ("language", "kernel", "tilelibrary", "cuda")
TESTS = "testing/python"
# The compute capability --cuda-on-cpu reports unless --cuda-capability says otherwise.
EMULATED = (8, 0)
# Packages a case may import besides ALLOWED_PACKAGES: TileLang itself (tvm and tvm_ffi ship with it),
# what TileLang and its test runner depend on, and the repository's own folders.
OWN_PACKAGES = {"tilelang", "tvm", "tvm_ffi", "numpy", "ml_dtypes", "pytest", "examples", "testing"}
# TVM names an op test may use without testing TVM: the modules, a constant; and the objects whose
# attributes it may use: a dtype, a target, the error classes.
KERNEL_TVM = {"tvm", "tvm.tirx", "tvm.tirx.const"}
KERNEL_TVM_OBJECTS = (
    "tvm.DataType",
    "tvm.runtime.DataType",
    "tvm.target.Target",
    "tvm.error",
    "tvm.TVMError",
)
KERNEL_TVM |= set(KERNEL_TVM_OBJECTS)
# Names through which a case writes or compiles a kernel.
KERNEL_MAKERS = {"prim_func", "jit", "lazy_jit", "compile", "Kernel", "macro"}
# Methods and attributes that give a kernel's generated source text.
SOURCE_GETTERS = {"get_kernel_source", "get_host_source", "get_source", "kernel_source", "host_source"}


@dataclass
class OpCase(Case):
    """One pytest case of an op-test file; `internals` says why it tests the compiler, not an op."""

    internals: str = ""
    collected: bool = True  # False: pytest could not collect the file; the case was read from its AST


@dataclass
class OpOutcome(Outcome):
    """An outcome with the reason the case is left out of the selection ("" when it is selected)."""

    left_out: str = ""


def capability_reason(mode: str, major: int, minor: int) -> str:
    """Why a case that requires compute capability `mode major.minor` is left out, or "" when the
    emulated device meets the requirement."""
    have, wanted = EMULATED, (major, minor)
    met = {"ge": have >= wanted, "gt": have > wanted, "le": have <= wanted, "lt": have < wanted,
           "eq": have == wanted}[mode]  # fmt: skip
    if met:
        return ""
    if mode in ("ge", "gt", "eq") and wanted >= (9, 0):
        return "compute capability >= 9.0"
    return "another GPU generation (sm_70, sm_75, sm_89)"


_REQUIRES = re.compile(r"requires_cuda_compute_version(?:_(ge|gt|le|lt|eq))?\((\d+)(?:,\s*(\d+))?")
_NEEDS = re.compile(r"needs compute (ge|gt|le|lt|eq) (\d+)\.(\d+)")


def left_out(case: OpCase, cause: str = "") -> str:
    """The selection rule: "" for an op case, else the class of reason it is left out."""
    for text in [*case.decorators, cause]:
        for found in [*_REQUIRES.finditer(text), *_NEEDS.finditer(text)]:
            reason = capability_reason(found.group(1) or "ge", int(found.group(2)), int(found.group(3) or 0))
            if reason:
                return reason
    reason = left_out_reason(case, cause)
    if reason:
        return reason
    other = sorted(case.packages - OWN_PACKAGES - set(ALLOWED_PACKAGES) - sys.stdlib_module_names)
    if other:
        return f"needs package: {', '.join(other)}"
    return f"compiler internals: {case.internals}" if case.internals else ""


def case_code(tree: ast.Module, test: ast.FunctionDef) -> list[ast.AST]:
    """The test function (with its decorators) and the module-level definitions it reaches by name."""
    defs: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defs.update((t.id, node) for t in targets if isinstance(t, ast.Name))
    code, queue = [test], [test]
    while queue:
        for name in ast.walk(queue.pop()):
            found = defs.get(name.id) if isinstance(name, ast.Name) else None
            if found is not None and all(found is not c for c in code):
                code.append(found)
                queue.append(found)
    return code


def internals(path: Path, tree: ast.Module, code: list[ast.AST]) -> str:
    """What in the case's code tests TileLang's compiler rather than a kernel's result ("" if nothing)."""
    return (
        _tvm_ir(path, tree, code)
        or _tilelang_internals(_aliases(tree), code)
        or ("asserts on generated source text" if _checks_source_text(code) else "")
        or ("makes no kernel (tests TileLang's package surface)" if not _makes_kernel(code) else "")
    )


def _makes_kernel(code: list[ast.AST]) -> bool:
    """Whether the case's code names a way to write or compile a kernel."""
    words = {n.attr if isinstance(n, ast.Attribute) else n.id for c in code for n in ast.walk(c)
             if isinstance(n, (ast.Attribute, ast.Name))}  # fmt: skip
    return bool(words & KERNEL_MAKERS)


def _lines(code: list[ast.AST]) -> set[int]:
    lines: set[int] = set()
    for node in code:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        lines.update(range(first, node.end_lineno + 1))
    return lines


def _tvm_ir(path: Path, tree: ast.Module, code: list[ast.AST]) -> str:
    """A TVM name the code uses beyond KERNEL_TVM (found as tvm_census counts them)."""
    lines = _lines(code)
    for use in _tvm_uses(path, tree):
        name = use.name.split("(")[0]
        if use.line in lines and use.kind != "import" and not _kernel_tvm(name):
            return f"builds or inspects TVM IR ({name})"
    return ""


@functools.cache
def _tvm_uses(path: Path, tree: ast.Module) -> list:
    return _Collector(str(path)).run(tree).uses


def _kernel_tvm(name: str) -> bool:
    """Whether a counted name is no test of TVM: KERNEL_TVM, and TileLang's intrinsic emitters (which
    tvm_census counts too), whose macros write kernels."""
    return (
        name in KERNEL_TVM
        or any(name.startswith(k + ".") for k in KERNEL_TVM_OBJECTS)
        or name.startswith("tilelang.")
    )


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted module path, for names bound by imports of tilelang."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update((a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0])
                           for a in node.names)  # fmt: skip
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            aliases.update((a.asname or a.name, f"{node.module}.{a.name}") for a in node.names)
    return {k: v for k, v in aliases.items() if v.split(".")[0] == "tilelang"}


def _tilelang_internals(aliases: dict[str, str], code: list[ast.AST]) -> str:
    """A call of TileLang's lowering, passes or TVMScript printer, or a look into its JIT adapter."""
    for node in (n for c in code for n in ast.walk(c)):
        if isinstance(node, ast.Attribute) and node.attr == "adapter":
            return "reads TileLang's JIT adapter"
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr == "script":
            return "prints TVMScript"
        chain = _chain(node.func)
        name = ".".join([aliases[chain[0]], *chain[1]]) if chain and chain[0] in aliases else ""
        if name in ("tilelang.lower", "tilelang.engine.lower"):
            return "inspects what tilelang.lower returns"
        last = name.rsplit(".", 1)[-1]
        if name.startswith("tilelang.transform.") and last[:1].isupper() and last != "PassConfigKey":
            return "runs TileLang's IR passes"
    return ""


def _checks_source_text(code: list[ast.AST]) -> bool:
    """Whether an assert reads a kernel's generated source: names bound to a SOURCE_GETTERS value (and
    parameters of the case's functions that receive one) are followed until nothing changes."""
    params = {f.name: [a.arg for a in f.args.args] for c in code for f in ast.walk(c)
              if isinstance(f, ast.FunctionDef)}  # fmt: skip
    tainted: set[str] = set()

    def dirty(expr: ast.AST | None) -> bool:
        for n in ast.walk(expr) if expr is not None else ():
            if isinstance(n, ast.Attribute) and n.attr in SOURCE_GETTERS:
                return True
            if isinstance(n, ast.Name) and n.id in tainted:
                return True
        return False

    nodes = [n for c in code for n in ast.walk(c)]
    before = -1
    while before != len(tainted):
        before = len(tainted)
        for node in nodes:
            tainted |= _tainted_by(node, dirty, params)
    return any(isinstance(n, ast.Assert) and dirty(n.test) for n in nodes)


def _tainted_by(node: ast.AST, dirty, params: dict[str, list[str]]) -> set[str]:
    """Names `node` binds to source text: assignment targets, loop variables, parameters of a call."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and dirty(node.value):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(node, (ast.For, ast.comprehension)) and dirty(node.iter):
        return {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in params:
        names = params[node.func.id]
        found = {names[i] for i, a in enumerate(node.args) if i < len(names) and dirty(a)}
        return found | {k.arg for k in node.keywords if k.arg and dirty(k.value)}
    return set()


def collect(work: Path, options: argparse.Namespace) -> tuple[list[str], set[str]]:
    """Node ids pytest collects under tilecraft, and the files it could not collect. A file that fails in
    the collection of all the folders is collected again alone: importing another test file first may
    have changed what it sees (each case runs alone, so alone is what counts)."""
    ids, errors = _collect(work, options, collection_paths(work, options))
    for file in sorted(errors):
        alone, failed = _collect(work, options, [file])
        if not failed:
            ids += alone
            errors.discard(file)
    return ids, errors


def collection_paths(work: Path, options: argparse.Namespace) -> list[str]:
    """The folders to collect, or only the test files an `--only` with a "/" names by path (a whole
    collection takes minutes; a node id's "/" are its file's path)."""
    folders = [f"{TESTS}/{d}" for d in options.dirs]
    wanted = options.only.split("::")[0]
    if "/" not in wanted:
        return folders
    files = [str(f.relative_to(work)) for d in folders for f in sorted((work / d).rglob("test_*.py"))]
    return [f for f in files if wanted in f] or folders


def _collect(work: Path, options: argparse.Namespace, paths: list[str]) -> tuple[list[str], set[str]]:
    command = pytest_command(options) + ["--collect-only", "-q", "-p", "no:cacheprovider",
                                         "--continue-on-collection-errors", *paths]  # fmt: skip
    output = subprocess.run(command, cwd=work, env=case_env(), capture_output=True, text=True).stdout
    ids = [line.strip() for line in output.splitlines() if line.startswith(f"{TESTS}/") and "::" in line]
    return ids, set(re.findall(rf"^ERROR ({TESTS}/\S+\.py)", output, re.M))


def find_cases(work: Path, options: argparse.Namespace) -> list[OpCase]:
    """Every case of the op-test folders: collected ones by node id, the others from their file's AST."""
    ids, errors = collect(work, options)
    by_file: dict[str, list[str]] = {}
    for node_id in ids:
        by_file.setdefault(node_id.split("::")[0], []).append(node_id.split("::", 1)[1])
    cases = []
    for file in sorted(set(by_file) | errors):
        path = work / file
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tests = {
            n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
        }
        names = by_file.get(file) if file not in errors else _ast_ids(tree, tests)
        for name in names or []:
            test = tests.get(name.split("[")[0])
            if test is None:  # a test pytest found elsewhere (a class): no code to analyse
                cases.append(OpCase(file.split("/")[2], file, name))
                continue
            code = case_code(tree, test)
            packages = imported_packages(path, tree, ast.Module(code, []))
            packages |= {m.split(".")[0] for c in code for n in ast.walk(c) if _is_import(n)
                         for m in _imported(n)}  # fmt: skip
            decorators = [ast.unparse(d) for d in test.decorator_list]
            cases.append(OpCase(file.split("/")[2], file, name, decorators, packages,
                                internals(path, tree, code), file not in errors))  # fmt: skip
    return cases


def _is_import(node: ast.AST) -> bool:
    return isinstance(node, (ast.Import, ast.ImportFrom))


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return [node.module] if node.module and not node.level else []


def _ast_ids(tree: ast.Module, tests: dict[str, ast.FunctionDef]) -> list[str]:
    """Case names of a file pytest could not collect: one per test and literal parameter set."""
    lists = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
             if isinstance(t, ast.Name)}  # fmt: skip
    names = []
    for name, test in tests.items():
        count = math.prod(_parameter_sets(d, lists) for d in test.decorator_list)
        names += [name] if count == 1 else [f"{name}[ast-{i}]" for i in range(count)]
    return names


def _parameter_sets(decorator: ast.expr, lists: dict[str, ast.expr]) -> int:
    """How many parameter sets a `parametrize` decorator gives (1 where it is not a literal list)."""
    if not (
        isinstance(decorator, ast.Call) and (_chain(decorator.func) or ("", []))[1][-1:] == ["parametrize"]
    ):
        return 1
    values = decorator.args[1] if len(decorator.args) > 1 else None
    values = next((k.value for k in decorator.keywords if k.arg == "argvalues"), values)
    values = lists.get(values.id, values) if isinstance(values, ast.Name) else values
    return len(values.elts) if isinstance(values, (ast.List, ast.Tuple)) else 1


def run_cases(cases: list[OpCase], work: Path, options: argparse.Namespace) -> list[OpOutcome]:
    """Run the cases (a file pytest could not collect once, by its first test); every case gets an
    outcome, with `counted` true for the selected ones."""
    runs: dict[str, OpCase] = {}
    # a file pytest could not collect runs by its first selected case, so that its cases are run
    for case in sorted(cases, key=lambda c: bool(left_out(c))):
        key = case.node_id if case.collected else case.file
        runs.setdefault(key, case if case.collected else replace(case, name=case.name.split("[")[0]))
    wanted = {k: c for k, c in runs.items() if options.all or not left_out(c)}
    earlier = _earlier(options)
    wanted = {k: c for k, c in wanted.items() if _rerun(earlier.get(c.node_id), options)}

    def one(item: tuple[str, OpCase]) -> tuple[str, Outcome]:
        outcome = run_case(item[1], work, options)
        print(f"{outcome.status:4} {outcome.seconds:6.0f}s {item[0]}  {outcome.cause}", file=sys.stderr)
        return item[0], outcome

    print(f"{len(cases)} cases, {len(wanted)} runs; copies and logs in {work}", file=sys.stderr)
    with ThreadPoolExecutor(max(options.jobs, 1)) as pool:
        results = dict(pool.map(one, wanted.items()))
    outcomes = [outcome_of(c, results.get(c.node_id if c.collected else c.file)) for c in cases]
    kept = {c.node_id: c for c in cases if c.node_id in earlier}
    return [_kept(earlier[o.case], kept[o.case]) if o.status == "not run" and o.case in kept else o
            for o in outcomes]  # fmt: skip


def _kept(earlier: OpOutcome, case: OpCase) -> OpOutcome:
    """An earlier outcome kept as it was, with the selection decided again by the current rule."""
    reason = left_out(case, earlier.cause)
    return replace(earlier, left_out=reason, counted=not reason)


def _earlier(options: argparse.Namespace) -> dict[str, OpOutcome]:
    """The outcomes of an earlier run (--rerun JSON), by node id."""
    if not options.rerun:
        return {}
    items = json.loads(options.rerun.read_text(encoding="utf-8"))
    return {item["case"]: OpOutcome(**item) for item in items}


def _rerun(earlier: OpOutcome | None, options: argparse.Namespace) -> bool:
    """Whether to run a case again: always without --rerun; with it, a case the earlier run did not run,
    or did not pass for a cause that matches --cause."""
    if earlier is None or not options.rerun or earlier.status == "not run":
        return True
    return earlier.status != "pass" and re.search(options.cause, earlier.cause) is not None


def outcome_of(case: OpCase, run: Outcome | None) -> OpOutcome:
    """The case's outcome from its run (its file's, for a file pytest could not collect)."""
    if run is None:  # a left-out case (selected ones all run); counted only if the rule selects it
        reason = left_out(case)
        return OpOutcome(case.example, case.node_id, "not run", "", "", 0.0, not reason, "", left_out=reason)
    reason = left_out(case, run.cause)
    fields = asdict(run) | {"case": case.node_id, "counted": not reason}
    return OpOutcome(**fields, left_out=reason)


def summary(outcomes: list[OpOutcome]) -> list[str]:
    """Markdown lines: the counts, the left-out cases by reason, the causes among the selected ones."""
    status = Counter(o.status for o in outcomes)
    selected = [o for o in outcomes if o.counted]
    passed = sum(o.status == "pass" for o in selected)
    lines = [
        f"- cases: {len(outcomes)}; " + ", ".join(f"{k} {v}" for k, v in status.most_common()),
        f"- selected (op cases): {len(selected)}; pass {passed} ({100 * passed / max(len(selected), 1):.1f}%)",
        "",
        "| left out because | cases |",
        "|---|---|",
    ]
    reasons = Counter(re.sub(r" \(.*\)$", "", o.left_out) for o in outcomes if o.left_out)
    lines += [f"| {reason} | {count} |" for reason, count in reasons.most_common()]
    return [*lines, "", *cause_table(selected, "selected")]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tilelang", required=True, type=Path, help="a checkout (or export) of TileLang")
    parser.add_argument("--dirs", nargs="*", default=list(DIRS), help=f"folders under {TESTS}")
    add_run_options(parser, timeout=300)
    parser.add_argument("--only", default="", help="run only cases whose node id contains this")
    parser.add_argument("--all", action="store_true", help="run the left-out cases too")
    parser.add_argument("--list", action="store_true", help="print the cases and the selection; run nothing")
    parser.add_argument("--work", type=Path, help="where the tests are copied (default: a temporary dir)")
    parser.add_argument(
        "--rerun", type=Path, metavar="JSON",
        help="run only the cases an earlier run (its --json) did not pass; keep its other outcomes",
    )  # fmt: skip
    parser.add_argument("--cause", default="", help="with --rerun: only the cases whose cause matches this")
    parser.set_defaults(isolate=False)  # run_case's option: run each case from its own test file
    return parser


def copy_tests(tilelang: Path, work: Path) -> None:
    """TileLang's testing/ and examples/ (a test imports examples.gemm_sp), and its pyproject.toml: its
    pytest settings make the checkout root pytest's rootdir, so testing/conftest.py is loaded."""
    for part in ("testing", "examples"):
        shutil.copytree(tilelang / part, work / part, dirs_exist_ok=True)
    shutil.copy(tilelang / "pyproject.toml", work / "pyproject.toml")
    (work / "_logs").mkdir(exist_ok=True)


def main(argv: list[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    if not (options.tilelang / TESTS / "language").is_dir():
        raise SystemExit(f"--tilelang {options.tilelang}: no {TESTS}/language there")
    work = options.work or Path(tempfile.mkdtemp(prefix="tilelang-optests-"))
    copy_tests(options.tilelang, work)
    cases = [c for c in find_cases(work, options) if options.only in c.node_id]
    if options.list:
        for case in cases:
            print(f"{left_out(case) or 'selected':55.55} {case.node_id}")
        print(f"{len(cases)} cases, {sum(not left_out(c) for c in cases)} selected before running")
        return 0
    outcomes = run_cases(cases, work, options)
    write_reports(outcomes, options, summary(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
