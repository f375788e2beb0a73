"""`tilecraft backend check NAME`: the audit of one backend, printed as a table of verdicts.

One row per check, each pass, fail or skip with its reason:

- `entry point`: an entry point of `tilecraft.backends` names the manifest (how tilecraft finds it);
- `manifest`: the manifest's rules (checked when it was built and registered), and that every example
  target of its kinds selects this manifest (no other variant's predicate accepts it);
- `target kind K`: the kind's normalizer is idempotent on its examples, it declares its capabilities and
  every limit key they report for an example is declared by the manifest, and what its detector finds here;
- `dialect`: the dialect module imports and exports the whole common language;
- `boundary: shared code`: no shared tilecraft module names the backend (tilecraft/tools/boundary.py);
- `boundary: public API`: the backend's package imports only tilecraft's public API;
- `codegen T`: every conformance kernel lowers and generates source for T, each distinct example target
  of the kinds (no device needed);
- `compile T`: the device codegen's compile step on that source, where the backend has one and its
  compiler is installed (skipped, with the reason, otherwise);
- `conformance K-E`: the conformance kit (tilecraft.testing.conformance) on every declared pair of kind
  and execution backend that can run here (skipped, with the reason, otherwise).

A kernel that fails to lower is a skip only for a limit the manifest declares (`unsupported`); anything
else fails, as in tilecraft's own suite, which runs the same kit. The exit status is 1 when a row fails.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from tilecraft.backend import (
    BackendContext,
    BackendModule,
    DeviceCode,
    Target,
    backend_for,
    check_idempotent,
    create_backend_context,
    lookup_target_kind,
)
from tilecraft.backend._loader import BACKENDS, plugin_problems, plugin_source
from tilecraft.backend.capabilities import capabilities_of
from tilecraft.backend.registry import registered_backends
from tilecraft.errors import BackendError, LoweringError, ToolchainNotFound
from tilecraft.testing.conformance import (
    CASES,
    CHECKS,
    FAIL,
    PASS,
    SKIP,
    NotHere,
    TargetCase,
    Verdict,
    declared,
    declared_cases,
    expect,
    resolve,
    run_case,
    verdict_of,
)
from tilecraft.tools import boundary


@dataclass(frozen=True)
class Item:
    """One kernel (or check) of a row, with its verdict."""

    name: str
    verdict: Verdict


@dataclass(frozen=True)
class Row:
    """One check of the audit: its verdict, and the per-kernel verdicts it is made of (if any)."""

    check: str
    verdict: Verdict
    items: tuple[Item, ...] = ()


def find_backend(name: str) -> BackendModule:
    """The manifest called `name`, or the one owning target kind (or alias) `name`; the error lists both
    and any plugin that failed to load under that name."""
    backends = registered_backends()
    found = next((m for m in backends if m.name == name), None)
    if found is not None:
        return found
    try:
        kind = lookup_target_kind(name).name
    except BackendError:
        kind = None
    owners = [m for m in backends if kind in m.target_kinds]
    if len(owners) == 1:
        return owners[0]
    broken = [p.describe() for p in plugin_problems() if p.group == BACKENDS and p.name == name]
    # by name: registration order depends on which backend package a process imported first
    listed = ", ".join(
        f"{m.name} (kinds {', '.join(m.target_kinds)})" for m in sorted(backends, key=lambda m: m.name)
    )
    listed = listed or "none"
    more = f"; {broken[0]}" if broken else ""
    if len(owners) > 1:
        raise BackendError(f"target kind {name!r} has variants {', '.join(m.name for m in owners)}; name one")
    raise BackendError(f"no backend or target kind named {name!r}; registered backends: {listed}{more}")


Progress = Callable[[str, int, int, str], None]
"""Told of each kernel a row has checked: (the row's check, kernels done, kernels in the row, the kernel)."""


def audit(
    manifest: BackendModule, execution: str | None = None, jobs: int = 1, progress: Progress | None = None
) -> Iterator[Row]:
    """Every row of the audit of `manifest`, in order (each computed when asked for); `execution` limits
    the conformance rows to that execution backend, which the manifest must declare. `progress` hears of
    every kernel as the rows that check kernels (codegen, compile, conformance) get through them."""
    if execution is not None and manifest.execution_backend(execution) is None:
        declared_names = ", ".join(s.name for s in manifest.execution_backends)
        raise BackendError(
            f"backend {manifest.name!r} declares no execution backend {execution!r}; declared: {declared_names}"
        )
    yield _entry_point_row(manifest)
    yield _manifest_row(manifest)
    for kind in manifest.target_kinds:
        yield _kind_row(kind, manifest)
    yield _dialect_row(manifest)
    yield _naming_row(manifest)
    yield _imports_row(manifest)
    for target, spec_name in _codegen_targets(manifest):
        ctx = create_backend_context(target, execution_backend=spec_name, require_available=False)
        artifacts: dict[str, object] = {}
        yield _codegen_row(ctx, artifacts, jobs, progress)
        yield _compile_row(ctx, artifacts, jobs, progress)
    for pair in declared_cases(manifest.name):
        if execution is None or pair.execution_backend == execution:
            yield _conformance_row(pair, jobs, progress)


# ---------------------------------------------------------------- registration and rules


def _entry_point_row(manifest: BackendModule) -> Row:
    source = plugin_source(BACKENDS, manifest.name)
    if source is None:
        return Row("entry point", Verdict(FAIL, f"no entry point of {BACKENDS} names manifest {manifest.name!r}; "
                   f"declare `{manifest.name} = \"package.module:MANIFEST\"` under [project.entry-points."
                   f"\"{BACKENDS}\"] in pyproject.toml and reinstall"))  # fmt: skip
    return Row("entry point", Verdict(PASS, f"{BACKENDS}: {manifest.name} = {source}"))


def _manifest_row(manifest: BackendModule) -> Row:
    def check() -> None:
        for kind in manifest.target_kinds:
            for example in lookup_target_kind(kind).examples:
                target = manifest.own_target(Target.parse(example))
                chosen = backend_for(target)
                expect(chosen is manifest, f"example target {target} selects backend {chosen.name!r}")

    found = verdict_of(check)
    if found.status != PASS:
        return Row("manifest", found)
    specs = ", ".join(s.name for s in manifest.execution_backends)
    limits = len(manifest.unsupported)
    summary = (f"kinds {', '.join(manifest.target_kinds)}; execution backends {specs}; api_version "
               f"{manifest.api_version}; {limits} declared limit{'s' if limits != 1 else ''}")  # fmt: skip
    return Row("manifest", Verdict(PASS, summary))


def _kind_row(kind: str, manifest: BackendModule) -> Row:
    def check() -> None:
        examples = check_idempotent(kind)
        expect(lookup_target_kind(kind).capabilities is not None,
               f"kind {kind} declares no capabilities: give its TargetKind capabilities=, a function of a target "
               "to its tilecraft.backend.capabilities.Capabilities (docs/backends.md, 'What a target declares')")  # fmt: skip
        for target in examples:
            undeclared = sorted(capabilities_of(target).limit_keys() - set(manifest.unsupported))
            expect(not undeclared, f"the capabilities of {target} report limit(s) {', '.join(undeclared)}, which "
                   f"manifest {manifest.name!r} does not declare in `unsupported`")  # fmt: skip

    found = verdict_of(check)
    if found.status != PASS:
        return Row(f"target kind {kind}", found)
    detect = lookup_target_kind(kind).detect
    if detect is None:
        here = "no detector (used only when named)"
    else:
        try:
            target = detect()
            here = f"detected here: {target}" if isinstance(target, Target) else f"not here: {target}"
        except Exception as err:  # noqa: BLE001 - a detector raising means "not present"
            here = f"not here: {err}"
    return Row(
        f"target kind {kind}",
        Verdict(PASS, f"examples normalize idempotently; capabilities declared; {here}"),
    )


def _dialect_row(manifest: BackendModule) -> Row:
    if not manifest.dialect:
        return Row("dialect", Verdict(SKIP, "the manifest names no dialect module"))

    def check() -> None:
        import importlib

        import tilecraft.language as common

        dialect = importlib.import_module(manifest.dialect)
        missing = [name for name in common.__all__ if not hasattr(dialect, name)]
        expect(not missing, f"{manifest.dialect} lacks common names {', '.join(missing[:8])}")

    found = verdict_of(check)
    return Row(f"dialect {manifest.dialect}", found if found.status != PASS else Verdict(PASS, "imports; "
               "exports the whole common language"))  # fmt: skip


def _names(manifest: BackendModule) -> tuple[str, ...]:
    return tuple(
        dict.fromkeys([manifest.name, *manifest.target_kinds, *(s.name for s in manifest.execution_backends)])
    )


def _naming_row(manifest: BackendModule) -> Row:
    names = _names(manifest)
    problems = boundary.shared_code_naming(names)
    check, words = "boundary: shared code", ", ".join(names)
    if problems:
        return Row(
            check, Verdict(FAIL, f"names {words} in {len(problems)} place(s): " + "; ".join(problems[:5]))
        )
    return Row(
        check, Verdict(PASS, f"no shared module names {words} ({len(boundary.shared_modules())} checked)")
    )


def _package(manifest: BackendModule) -> str | None:
    source = plugin_source(BACKENDS, manifest.name)
    module = (source or "").partition(":")[0]
    return module.rpartition(".")[0] or module or None


def _imports_row(manifest: BackendModule) -> Row:
    package = _package(manifest)
    check = "boundary: public API"
    if package is None:
        return Row(check, Verdict(SKIP, "no entry point, so no package to read"))
    problems = boundary.private_imports(package)
    if problems:
        return Row(check, Verdict(FAIL, f"{len(problems)} import(s): " + "; ".join(problems[:5])))
    files = len(boundary.package_files(package))
    return Row(
        check, Verdict(PASS, f"package {package} ({files} modules) imports only public tilecraft names")
    )


# ---------------------------------------------------------------- codegen and compile


def _codegen_targets(manifest: BackendModule) -> list[tuple[Target, str]]:
    """Each distinct example target of the manifest's kinds, with the first execution backend declared for
    it (its host codegen is part of the output)."""
    found: dict[str, tuple[Target, str]] = {}
    for kind in manifest.target_kinds:
        for example in lookup_target_kind(kind).examples or (kind,):
            try:
                target = manifest.own_target(Target.parse(example))
            except BackendError:
                continue  # reported by the target-kind row
            spec = next((s for s in manifest.execution_backends if s.matches(target)), None)
            if spec is not None and backend_for(target) is manifest:
                found.setdefault(str(target), (target, spec.name))
    return list(found.values())


def _codegen_row(
    ctx: BackendContext, artifacts: dict[str, object], jobs: int, progress: Progress | None
) -> Row:
    from tilecraft.jit.lower import lower_uncached

    def one(case) -> Verdict:
        def check() -> None:
            try:
                artifacts[case.name] = lower_uncached(case.build(), ctx)
            except LoweringError as err:
                raise declared(err, ctx) from err

        return verdict_of(check)

    return _row("codegen", _each(CASES, one, jobs, report=_reporter(progress, "codegen")), f"{ctx.target}: ")


def _compile_row(
    ctx: BackendContext, artifacts: dict[str, object], jobs: int, progress: Progress | None
) -> Row:
    check, on = "compile", f"{ctx.target}: "
    step = ctx.backend.device_codegens[ctx.target.kind].compile
    if step is None:
        return Row(
            check, Verdict(SKIP, f"{on}no compile step in the device codegen (the execution backend builds)")
        )
    missing: list[str] = []

    def one(case) -> Verdict:
        artifact = artifacts.get(case.name)
        if artifact is None:
            return Verdict(SKIP, "did not generate code")
        if missing:
            return Verdict(SKIP, missing[0])
        code = DeviceCode(sources=artifact.device_sources, kernels=artifact.kernels)
        try:
            step(code, ctx)
        except ToolchainNotFound as err:
            missing.append(f"no compiler here: {err}")
            return Verdict(SKIP, missing[0])
        except Exception as err:  # noqa: BLE001 - the compiler's message is the reason
            return Verdict(FAIL, f"{type(err).__name__}: {err}")
        return Verdict(PASS)

    row = _row(check, _each(CASES, one, jobs, report=_reporter(progress, check)), on)
    if missing and row.verdict.status == SKIP:
        return Row(check, Verdict(SKIP, on + missing[0]), row.items)
    return row


# ---------------------------------------------------------------- conformance


def _conformance_row(pair: TargetCase, jobs: int, progress: Progress | None) -> Row:
    check = f"conformance {pair.id}"
    try:
        ctx = resolve(pair)
    except NotHere as why:
        return Row(check, Verdict(SKIP, str(why)))
    total = len(CASES) + len(CHECKS)
    items = _each(CASES, lambda case: run_case(case, ctx), jobs, report=_reporter(progress, check, total))
    items += _each(list(CHECKS.items()), lambda named: verdict_of(lambda: named[1](ctx)), 1, lambda n: n[0],
                   _reporter(progress, check, total, len(CASES)))  # fmt: skip
    return _row(check, items, f"{ctx.target}: ")


# ---------------------------------------------------------------- rows


def _reporter(progress: Progress | None, check: str, total: int | None = None, before: int = 0):
    """`_each`'s report for a row: (kernels done in this call, its total, the kernel) -> `progress`, with
    the row's own total and the kernels an earlier call of the row counted (`before`)."""
    if progress is None:
        return None
    return lambda done, count, name: progress(check, before + done, total or count, name)


def _each(things: Sequence, verdict: Callable[[object], Verdict], jobs: int,
          name: Callable[[object], str] = lambda case: case.name,
          report: Callable[[int, int, str], None] | None = None) -> list[Item]:  # fmt: skip
    """Each thing's verdict, `jobs` at a time (compilers run in subprocesses, so threads overlap them);
    `report(done, total, name)` after each, in order."""
    items: list[Item] = []
    with ThreadPoolExecutor(max_workers=jobs) if jobs > 1 else contextlib.nullcontext() as pool:
        verdicts = pool.map(verdict, things) if pool is not None else (verdict(t) for t in things)
        for thing, v in zip(things, verdicts):
            items.append(Item(name(thing), v))
            if report is not None:
                report(len(items), len(things), items[-1].name)
    return items


def _row(check: str, items: Iterable[Item], prefix: str = "") -> Row:
    """A row whose verdict sums up its items': a failure if one fails, a skip if none passes."""
    items = tuple(items)
    counts = {status: sum(1 for i in items if i.verdict.status == status) for status in (PASS, FAIL, SKIP)}
    summary = ", ".join(f"{counts[s]} {s}" for s in (PASS, FAIL, SKIP) if counts[s])
    failed = [i.name for i in items if i.verdict.status == FAIL]
    if failed:
        more = " ..." if len(failed) > 6 else ""
        return Row(check, Verdict(FAIL, f"{prefix}{summary}: {', '.join(failed[:6])}{more}"), items)
    if counts[PASS] == 0:
        reasons = sorted({i.verdict.reason for i in items})
        return Row(check, Verdict(SKIP, prefix + (reasons[0] if len(reasons) == 1 else summary)), items)
    return Row(check, Verdict(PASS, prefix + summary), items)


def default_jobs() -> int:
    """One job per core this process may use (where the system says; else one)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else 1


def format_row(row: Row, width: int = 36) -> str:
    return f"{row.check:<{width}} {row.verdict.status:<4}  {row.verdict.reason}"


def format_details(rows: Sequence[Row], verbose: bool) -> list[str]:
    """The lines under the table: every failed (with `verbose`, every) kernel of every row, with why."""
    lines = []
    for row in rows:
        shown = [i for i in row.items if verbose or i.verdict.status == FAIL]
        if shown:
            lines.append(f"{row.check}:")
            lines += [f"  {i.name:<52} {i.verdict.status:<4}  {i.verdict.reason}" for i in shown]
    return lines
