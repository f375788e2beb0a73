"""One tuning: make every candidate, compile them (an executor), check and measure each, keep the best.

    configs -> elaborate (this process) -> compile (executor: worker processes) -> check and measure
    (one at a time, on the device) -> best -> tuning cache

A candidate that fails anywhere (its factory raises, it does not compile, its worker crashes, it runs
past the timeout, its outputs differ from `ref_prog`'s) is recorded with its status and skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tilecraft import settings
from tilecraft.autotuner import record as rec
from tilecraft.autotuner.args import CompileArgs, ProfileArgs
from tilecraft.autotuner.configs import (
    check_config_keys,
    kernel_arguments,
    merged_pass_configs,
    resolve_configs,
)
from tilecraft.autotuner.dblink import DatabaseLink, database_path
from tilecraft.autotuner.executor import (
    CompileOutcome,
    Executor,
    WorkerStartError,
    compile_here,
    default_executor,
)
from tilecraft.autotuner.measure import Measured, Measurement
from tilecraft.autotuner.progress import Progress, say
from tilecraft.autotuner.result import (
    ELABORATION_FAILED,
    OK,
    AutotuneError,
    AutotuneResult,
    CandidateResult,
    TunedKernel,
)
from tilecraft.autotuner.worker import CompileJob, describe_error
from tilecraft.errors import TilecraftError
from tilecraft.ir.function import PrimFunc

if TYPE_CHECKING:
    from tilecraft.backend.context import BackendContext
    from tilecraft.jit.kernel import Kernel


@dataclass
class Factory:
    """How candidates are made: `elaborate(config) -> PrimFunc`; `signature` takes the config keys;
    `identity` (plain data) names the factory and its fixed arguments for the tuning cache."""

    elaborate: Callable[[dict[str, Any]], PrimFunc]
    signature: Callable[..., Any]
    name: str
    identity: Callable[[], Any]
    config_args: tuple[tuple[Any, ...], Mapping[str, Any]] = ((), {})
    signature_args: Callable[[], Any] = lambda: None  # what a tuning database keys the tuning on


@dataclass(frozen=True)
class RunOptions:
    """The options of one `run`: measurement counts, per-candidate timeout (s; None or <= 0: none, as in
    TileLang), early stop, re-tuning, compile workers, the executor (an Executor, or "local" / "ray";
    None: TILECRAFT_AUTOTUNE_EXECUTOR, else local) and the tuning database (None: TILECRAFT_TUNING_DB)."""

    warmup: int = 25
    rep: int = 100
    timeout: float | None = 180
    early_stop_factor: float | None = None
    retune: bool | None = None
    workers: int | None = None
    executor: Executor | str | None = None
    db: str | Path | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None and self.timeout <= 0:
            object.__setattr__(self, "timeout", None)


class Session:
    """State of one tuning run."""

    def __init__(self, factory: Factory, compile_args: CompileArgs, profile: ProfileArgs, options: RunOptions,
                 configs: Any, inputs: list[Any] | None) -> None:  # fmt: skip
        self.factory = factory
        self.compile_args = compile_args
        self.profile = profile
        self.options = options
        self.raw_configs = configs
        self.inputs = inputs
        self.verbose = bool(compile_args.verbose or settings.get("TILECRAFT_VERBOSE"))
        self.funcs: dict[int, PrimFunc | BaseException] = {}
        self.link: DatabaseLink | None = None

    # ------------------------------------------------------------------ driver

    def run(self) -> AutotuneResult:
        configs = resolve_configs(self.raw_configs, *self.factory.config_args)
        check_config_keys(configs, self.factory.signature, self.factory.name)
        self.configs = configs
        self.ctx = self._context()
        path = database_path(self.options.db)
        self.link = DatabaseLink.open(self, path) if path is not None else None
        try:
            return self._run()
        except WorkerStartError as err:
            # the cause is in the workers and the fix in the user's script: no trace through the tuner
            raise err.with_traceback(None) from None
        finally:
            if self.link is not None:
                self.link.close()

    def _run(self) -> AutotuneResult:
        retune = self.options.retune if self.options.retune is not None else settings.get("TILECRAFT_RETUNE")
        if self.link is not None and not retune:
            from_db = self._from_database(self.link)
            if from_db is not None:
                return from_db
        key = self._key()
        if key is not None and not retune:
            reused = self._reuse(key)
            if reused is not None:
                if self.link is not None:
                    self.link.record_all(reused.candidates)
                return reused
        if self.link is not None:
            # A complete tuning that got here is of no use (nothing ok, or its best no longer is): start
            # afresh; an incomplete one is resumed.
            self.link.begin(bool(retune) or self.link.db.complete(self.link.key))
        result = self._tune()
        result.key = key
        if key is not None:
            self._store(key, result)
        return result

    def _context(self) -> BackendContext:
        from tilecraft.jit.lower import resolve_context

        args = self.compile_args
        return resolve_context(args.target, args.target_host, args.execution_backend)

    def _note(self, text: str) -> None:
        if self.verbose:
            say(f"autotune {self.factory.name}: {text}")

    # ------------------------------------------------------------------ candidates

    def _elaborate(self, index: int) -> PrimFunc | BaseException:
        """Candidate `index`'s PrimFunc, or the error its factory raised (kept: asked for once)."""
        if index not in self.funcs:
            try:
                func = self.factory.elaborate(kernel_arguments(self.configs[index]))
                if not isinstance(func, PrimFunc):
                    raise TilecraftError(
                        f"the kernel factory {self.factory.name} returned {type(func).__name__}; it must return a "
                        "@T.prim_func (lazy style) or open `with T.Kernel(...)` (eager style)"
                    )
                self.funcs[index] = func
            except Exception as err:  # noqa: BLE001 - a config the factory rejects is one failed candidate
                self.funcs[index] = err
        return self.funcs[index]

    def _job(self, index: int, func: PrimFunc) -> CompileJob:
        flags = self.compile_args.compile_flags
        return CompileJob(
            index, func, self.compile_args.normalized_out_idx(),
            merged_pass_configs(self.compile_args.pass_configs, self.configs[index]),
            None if flags is None else tuple(str(f) for f in flags),
        )  # fmt: skip

    # ------------------------------------------------------------------ tuning

    def _tune(self) -> AutotuneResult:
        candidates = [CandidateResult(i, c, OK) for i, c in enumerate(self.configs)]
        prior = self._resume(candidates)
        jobs = self._jobs([c for c in candidates if c.index not in prior])
        given = self.options.executor
        executor = given if isinstance(given, Executor) else default_executor(self.options.workers,
                                                                               self.verbose, given)  # fmt: skip
        try:
            compiled = self._compile(executor, jobs, candidates)
            best = self._measure_all(executor, compiled, candidates, self._prior_best(prior, candidates))
        finally:
            if not isinstance(given, Executor):
                executor.close()
        if self.link is not None:
            self.link.finish()
        return self._result(best, candidates)

    def _resume(self, candidates: list[CandidateResult]) -> dict[int, CandidateResult]:
        """The candidates an interrupted tuning in the database measured already, taken from it."""
        if self.link is None:
            return {}
        prior = {}
        for index, row in self.link.stored().items():
            c = candidates[index]
            c.status, c.latency, c.error, c.compile_seconds = row.status, row.latency, row.error, row.compile_seconds
            prior[index] = c
        if prior:
            self._note(f"resuming: {len(prior)} of {len(candidates)} candidates are in the tuning database already")
        return prior

    @staticmethod
    def _prior_best(prior: dict[int, CandidateResult], candidates: list[CandidateResult]
                    ) -> tuple[CandidateResult, Measured] | None:  # fmt: skip
        ok = [c for c in prior.values() if c.ok and c.latency is not None]
        if not ok:
            return None
        best = min(ok, key=lambda c: c.latency)
        return best, Measured(OK, best.latency)

    def _jobs(self, candidates: list[CandidateResult]) -> list[CompileJob]:
        jobs = []
        for candidate in candidates:
            func = self._elaborate(candidate.index)
            if isinstance(func, BaseException):
                candidate.status, candidate.error = ELABORATION_FAILED, describe_error(func)
                self._note(f"#{candidate.index} {candidate.config}: {candidate.status}: {candidate.error}")
                self._recorded(candidate)
            else:
                jobs.append(self._job(candidate.index, func))
        return jobs

    def _recorded(self, candidate: CandidateResult) -> None:
        """Write the candidate's final result to the tuning database, now (an interruption keeps it)."""
        if self.link is not None:
            self.link.record(candidate)

    def _compile(self, executor: Executor, jobs: Sequence[CompileJob],
                 candidates: list[CandidateResult]) -> list[CompileJob]:  # fmt: skip
        """The jobs that compiled, in index order; the others' candidates get their failure."""
        by_index = {job.index: job for job in jobs}
        done: list[CompileJob] = []
        self._note(f"compiling {len(jobs)} candidates ({executor.name})")
        with Progress(len(jobs), f"autotune {self.factory.name}: compile") as bar:
            for outcome in executor.compile(jobs, self.ctx, self.options.timeout):
                self._compiled(outcome, candidates[outcome.index])
                if outcome.status == OK:
                    done.append(by_index[outcome.index])
                else:
                    self._recorded(candidates[outcome.index])
                bar.update(outcome.status)
        return sorted(done, key=lambda job: job.index)

    def _compiled(self, outcome: CompileOutcome, candidate: CandidateResult) -> None:
        candidate.compile_seconds = outcome.seconds
        candidate.status, candidate.error = outcome.status, outcome.error
        detail = f": {outcome.error}" if outcome.error else ""
        self._note(
            f"#{candidate.index} {candidate.config}: {outcome.status} in {outcome.seconds:.2f} s{detail}"
        )

    def _measure_all(self, executor: Executor, jobs: Sequence[CompileJob], candidates: list[CandidateResult],
                     best: tuple[CandidateResult, Measured] | None) -> tuple[CandidateResult, Measured] | None:  # fmt: skip
        """Measure the compiled jobs (as the executor streams them back); the best of them and `best`."""
        measurement = self._measurement()
        measurement.best = best[1].latency if best else None
        with Progress(len(jobs), f"autotune {self.factory.name}: bench") as bar:
            for index, measured in executor.benchmark_all(jobs, self.ctx, measurement):
                candidate = candidates[index]
                candidate.status, candidate.latency, candidate.error = (
                    measured.status,
                    measured.latency,
                    measured.error,
                )
                self._note(candidate.describe())
                self._recorded(candidate)
                if candidate.ok and (best is None or measured.latency < best[1].latency):
                    best = (candidate, measured)
                    measurement.best = measured.latency
                bar.update(f"best {best[1].latency:.4g} ms" if best else "")
        self.ref_latency = measurement.ref_latency
        return best

    def _measurement(self) -> Measurement:
        return Measurement(self.profile, self.options.warmup, self.options.rep, self.options.timeout,
                           self.options.early_stop_factor, self.inputs)  # fmt: skip

    def _result(self, best: tuple[CandidateResult, Measured] | None,
                candidates: list[CandidateResult]) -> AutotuneResult:  # fmt: skip
        if best is None:
            lines = "\n  ".join(c.describe() for c in candidates)
            raise AutotuneError(
                f"autotune {self.factory.name}: no candidate compiled, passed the check and ran; each one:\n  "
                f"{lines}\nrun with TILECRAFT_VERBOSE=1 for every error in full"
            )
        candidate, measured = best
        self.best_index = candidate.index
        result = AutotuneResult(candidate.latency, candidate.config, self.ref_latency, candidates=candidates)
        self._finish(result, candidate.index, measured.kernel)
        self._note(f"best #{candidate.index} {candidate.config}: {candidate.latency:.4g} ms")
        return result

    def _finish(self, result: AutotuneResult, index: int, kernel: Kernel | None) -> None:
        """Attach the best candidate's kernel (loaded here when it was measured elsewhere)."""
        if kernel is None:
            func = self._elaborate(index)
            if isinstance(func, BaseException):
                raise func
            kernel = compile_here(self._job(index, func), self.ctx)
        func = self.funcs[index]
        result.func = func if isinstance(func, PrimFunc) else None
        result.libcode = kernel.get_kernel_source()
        result.kernel = TunedKernel(kernel, result)

    # ------------------------------------------------------------------ the tuning cache

    def _key(self) -> str | None:
        from tilecraft.autotuner.keys import tuning_key

        try:
            return tuning_key(self)
        except rec.NotKeyable as err:
            self._note(f"not kept in the tuning cache: {err} has no identity that lasts across processes")
            return None

    def _reuse(self, key: str) -> AutotuneResult | None:
        """The stored tuning for `key`, with its best kernel loaded, or None (then it is tuned)."""
        from tilecraft.execution.cache import KernelCache

        found = _read_record(KernelCache(), key, self.configs)
        if found is None:
            return None
        kernel = self._stored_kernel(found)
        if kernel is None:
            return None
        result = AutotuneResult(found.latency, self.configs[found.best], found.ref_latency,
                                candidates=found.candidates, key=key, from_cache=True)  # fmt: skip
        self._finish(result, found.best, kernel)
        self._note(f"best config from the tuning cache: {result.config} ({result.latency:.4g} ms)")
        return result

    def _from_database(self, link: DatabaseLink) -> AutotuneResult | None:
        """The complete tuning the database holds, its best kernel loaded (None: tune)."""
        best = link.best_index()
        if best is None:
            return None
        stored = link.stored()
        kernel = self._stored_kernel(rec.Record(best, stored[best].latency, None, []))
        if kernel is None:
            return None
        candidates = [CandidateResult(i, c, stored[i].status if i in stored else OK,
                                      stored[i].latency if i in stored else None,
                                      stored[i].error if i in stored else "",
                                      stored[i].compile_seconds if i in stored else None)
                      for i, c in enumerate(self.configs)]  # fmt: skip
        result = AutotuneResult(stored[best].latency, self.configs[best], None, candidates=candidates,
                                from_cache=True, from_database=True)  # fmt: skip
        self._finish(result, best, kernel)
        self._note(f"best config from the tuning database {link.db.path}: {result.config} ({result.latency:.4g} ms)")
        return result

    def _stored_kernel(self, found: rec.Record) -> Kernel | None:
        """The stored best candidate compiled and, with a reference program, checked; None when it no
        longer compiles or passes (the code it depends on changed)."""
        func = self._elaborate(found.best)
        try:
            if isinstance(func, BaseException):
                raise func
            kernel = compile_here(self._job(found.best, func), self.ctx)
            if self.profile.checks:
                self._measurement().check(kernel)
        except (Exception, AssertionError) as err:  # noqa: BLE001 - any failure means: tune again
            self._note(
                f"the stored best config {self.configs[found.best]} fails now ({describe_error(err)}); re-tuning"
            )
            return None
        return kernel

    def _store(self, key: str, result: AutotuneResult) -> None:
        from tilecraft.execution.cache import KernelCache

        cache = KernelCache()
        files = rec.record_files(
            self.best_index, result.latency, result.ref_latency, self.factory.name, result.candidates
        )
        cache.evict(key)  # a re-tuning replaces the stored one (put keeps an existing entry)
        cache.put(key, files, {"function": self.factory.name})


def _read_record(cache: Any, key: str, configs: Sequence[dict[str, Any]]) -> rec.Record | None:
    entry = cache.get(key)
    if entry is None:
        return None
    try:
        found = rec.parse_record(entry.read(rec.RECORD_FILE), configs)
    except (OSError, TilecraftError):
        found = None
    if found is None:
        cache.evict(key)  # written by another version, or not a tuning record: tune and replace it
    return found
