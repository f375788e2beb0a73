"""Executors: where tuning candidates are compiled and measured, behind one interface.

    compile(jobs, ctx, timeout)         -> each candidate's CompileOutcome, as it is known
    benchmark_all(jobs, ctx, measurement) -> (index, Measured) for each compiled candidate, as measured

Three implement it: `InProcessExecutor` compiles and measures in the tuning process, one candidate after
another (`workers=0`, or the cache disabled); `LocalProcessExecutor` (`executor="local"`, the default,
local.py) compiles in spawned worker processes and measures in one pinned benchmark process per device;
`RayExecutor` (`executor="ray"`, ray_executor.py) compiles in Ray tasks and measures in Ray actors, one
per device of the cluster. Whatever fails inside one candidate (a crash, a hang past the timeout) is
that candidate's outcome, never the tuning's.
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from tilecraft import settings
from tilecraft.autotuner.measure import Measured
from tilecraft.autotuner.progress import say
from tilecraft.autotuner.result import COMPILE_FAILED, OK, RUN_FAILED, AutotuneError, ConfigError
from tilecraft.autotuner.worker import CompileJob, WorkerContext, describe_error
from tilecraft.jit.parallel import available_cores

if TYPE_CHECKING:
    from tilecraft.autotuner.measure import Measurement
    from tilecraft.backend.context import BackendContext
    from tilecraft.jit.kernel import Kernel

Outcome = TypeVar("Outcome")
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class CompileOutcome:
    """How compiling one job ended: `status` is OK, COMPILE_FAILED, CRASHED or TIMEOUT."""

    index: int
    status: str
    seconds: float
    error: str = ""


class Executor(ABC):
    """Compiles candidates (in any order, any parallelism) and measures them (each alone on a device)."""

    name = "executor"

    @abstractmethod
    def compile(self, jobs: Sequence[CompileJob], ctx: BackendContext,
                timeout: float | None) -> Iterator[CompileOutcome]:  # fmt: skip
        """Compile every job for `ctx`, yielding each outcome when it is known. A job that fails, crashes
        or runs past `timeout` seconds yields its outcome; it never stops the others."""

    @abstractmethod
    def benchmark(
        self, job: CompileJob, ctx: BackendContext, measure: Callable[[Kernel], Outcome]
    ) -> Outcome:
        """`measure(kernel)` for a job that compiled, run in this process; its result comes back."""

    def benchmark_all(self, jobs: Sequence[CompileJob], ctx: BackendContext,
                      measurement: Measurement) -> Iterator[tuple[int, Measured]]:  # fmt: skip
        """(index, Measured) for every job, in any order, as each is measured. The default measures
        here, one after another, through `benchmark`; `measurement.best` is kept up to date by the
        caller (for early stopping)."""
        for job in jobs:
            yield job.index, self.benchmark_guarded(job, ctx, measurement)

    def benchmark_guarded(self, job: CompileJob, ctx: BackendContext, measurement: Measurement) -> Measured:
        """`benchmark` with a failure to load the built candidate scored as RUN_FAILED."""
        try:
            return self.benchmark(job, ctx, measurement.measure)
        except AutotuneError:
            raise  # the tuning cannot go on (no inputs for any candidate)
        except Exception as err:  # noqa: BLE001 - loading the built candidate failed: skip it, say why
            return Measured(RUN_FAILED, error=f"loading the compiled kernel failed: {describe_error(err)}")

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release workers and whatever else the executor holds."""


def compile_here(job: CompileJob, ctx: BackendContext) -> Kernel:
    """The job's Kernel, compiled (or loaded from the cache) in this process."""
    from tilecraft.jit.api import compile as compile_kernel

    return compile_kernel(job.func, out_idx=job.out_idx, pass_configs=job.pass_configs,
                          compile_flags=job.compile_flags, ctx=ctx)  # fmt: skip


def requeue_once(queue: deque[CompileJob], tries: dict[int, int], job: CompileJob, note: str,
                 verbose: bool) -> bool:  # fmt: skip
    """Queue a job whose worker was lost once more (True; `note` says so when `verbose`); False the
    second time, when its outcome is final."""
    tries[job.index] = tries.get(job.index, 0) + 1
    if tries[job.index] >= 2:
        return False
    if verbose:
        say(f"autotune: #{job.index}: {note}")
    queue.append(job)
    return True


class InProcessExecutor(Executor):
    """Compiles in this process, one job after another; the kernels are kept for the benchmark."""

    name = "in-process"

    def __init__(self) -> None:
        self._kernels: dict[int, Kernel] = {}

    def compile(self, jobs: Sequence[CompileJob], ctx: BackendContext,
                timeout: float | None) -> Iterator[CompileOutcome]:  # fmt: skip
        for job in jobs:
            start = time.perf_counter()
            try:
                self._kernels[job.index] = compile_here(job, ctx)
            except Exception as err:  # noqa: BLE001 - one candidate's failure is reported, not raised
                yield CompileOutcome(
                    job.index, COMPILE_FAILED, time.perf_counter() - start, describe_error(err)
                )
                continue
            yield CompileOutcome(job.index, OK, time.perf_counter() - start)

    def benchmark(
        self, job: CompileJob, ctx: BackendContext, measure: Callable[[Kernel], Outcome]
    ) -> Outcome:
        kernel = self._kernels.pop(job.index, None) or compile_here(job, ctx)
        return measure(kernel)

    def close(self) -> None:
        self._kernels.clear()


def settings_overrides() -> dict[str, Any]:
    """The settings this process overrides in code (`settings.override`), which a worker's environment
    does not carry."""
    return {
        s.name: settings.get(s.name, check=False)
        for s in settings.all_settings()
        if settings.REGISTRY.source(s.name) == "override"
    }


def worker_context(ctx: BackendContext, target: str | None = None) -> WorkerContext:
    """What a worker needs to rebuild `ctx` (on `target`, when a pinned device names it differently)."""
    return WorkerContext(target or str(ctx.target), None if ctx.target_host is None else str(ctx.target_host),
                         ctx.execution.name, settings_overrides())  # fmt: skip


def thread_budget(workers: int) -> dict[str, str]:
    """The environment that gives each of `workers` processes running at once its share of the cores
    for OpenMP (the threads a host-compiled kernel runs its blocks on): `OMP_NUM_THREADS` = cores // workers, at
    least 1, so that together they do not oversubscribe the machine. Empty when the user set
    `OMP_NUM_THREADS`: workers inherit it."""
    if "OMP_NUM_THREADS" in os.environ:
        return {}
    return {"OMP_NUM_THREADS": str(max(1, available_cores() // max(1, workers)))}


def worker_count(workers: int | None) -> int:
    """`workers`, else TILECRAFT_TUNE_WORKERS, else one per core; a ConfigError naming where a bad
    value came from."""
    where = "workers"
    if workers is None:
        workers, where = settings.get("TILECRAFT_TUNE_WORKERS"), "TILECRAFT_TUNE_WORKERS"
    if workers is None:
        return available_cores()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ConfigError(
            f"{where} must be a number of processes >= 0 (0: compile in this process), got {workers!r}"
        )
    return workers


def executor_name(executor: str | None) -> str:
    """`executor`, else TILECRAFT_AUTOTUNE_EXECUTOR, else "local"; a ConfigError for another name."""
    where = "executor"
    if executor is None:
        executor, where = settings.get("TILECRAFT_AUTOTUNE_EXECUTOR"), "TILECRAFT_AUTOTUNE_EXECUTOR"
    name = (executor or "local").strip().lower()
    if name not in EXECUTORS:
        raise ConfigError(
            f"{where} must be one of {', '.join(EXECUTORS)} (or an Executor object), got {executor!r}"
        )
    return name


def default_executor(workers: int | None, verbose: bool, executor: str | None = None) -> Executor:
    """The executor named `executor` (None: TILECRAFT_AUTOTUNE_EXECUTOR, else "local"); for "local",
    with `workers` compile processes (None: TILECRAFT_TUNE_WORKERS, else one per core)."""
    if executor_name(executor) == "ray":
        from tilecraft.autotuner.ray_executor import RayExecutor

        return RayExecutor(verbose=verbose)
    count = worker_count(workers)
    if count == 0:
        return InProcessExecutor()
    if settings.get("TILECRAFT_DISABLE_CACHE"):
        if verbose:
            say("autotune: the kernel cache is disabled, so candidates compile in this process (workers "
                "hand their builds over through the cache)")  # fmt: skip
        return InProcessExecutor()
    return LocalProcessExecutor(count, verbose=verbose)


from tilecraft.autotuner.local import LocalProcessExecutor, WorkerStartError  # noqa: E402 - local.py builds on the above

__all__ = [
    "CompileOutcome", "Executor", "InProcessExecutor", "LocalProcessExecutor", "WorkerStartError",
    "compile_here", "default_executor", "executor_name", "thread_budget", "worker_count",
]  # fmt: skip
