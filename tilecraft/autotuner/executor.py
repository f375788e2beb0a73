"""Executors: where tuning candidates are compiled and measured, behind one interface.

`LocalProcessExecutor` (the default) compiles in worker processes started with the `spawn` method, each
candidate alone in a one-process `ProcessPoolExecutor`, so a candidate that crashes its worker (a
compiler bug, native code gone wrong) or hangs past the timeout is killed and reported while the others
go on; the builds reach the tuning process through the disk cache. `InProcessExecutor` compiles in the
tuning process, one candidate at a time (no isolation, no timeout): for `workers=0`, and when the cache
is disabled. Both measure in the tuning process, one candidate at a time. Other executors (remote
machines) implement `compile` and `benchmark` the same way.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from tilecraft import settings
from tilecraft.autotuner.progress import say
from tilecraft.autotuner.result import COMPILE_FAILED, CRASHED, OK, TIMEOUT, AutotuneError, ConfigError
from tilecraft.autotuner.worker import FAILED, CompileJob, WorkerContext, build, describe_error, ready

if TYPE_CHECKING:
    from tilecraft.backend.context import BackendContext
    from tilecraft.jit.kernel import Kernel

Measured = TypeVar("Measured")


@dataclass(frozen=True)
class CompileOutcome:
    """How compiling one job ended: `status` is OK, COMPILE_FAILED, CRASHED or TIMEOUT."""

    index: int
    status: str
    seconds: float
    error: str = ""


class Executor(ABC):
    """Compiles candidates (in any order, any parallelism) and measures them (one at a time)."""

    name = "executor"

    @abstractmethod
    def compile(self, jobs: Sequence[CompileJob], ctx: BackendContext,
                timeout: float | None) -> Iterator[CompileOutcome]:  # fmt: skip
        """Compile every job for `ctx`, yielding each outcome when it is known. A job that fails, crashes
        or runs past `timeout` seconds yields its outcome; it never stops the others."""

    @abstractmethod
    def benchmark(
        self, job: CompileJob, ctx: BackendContext, measure: Callable[[Kernel], Measured]
    ) -> Measured:
        """`measure(kernel)` for a job that compiled, run where the kernel runs; its result comes back."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release workers and whatever else the executor holds."""


def compile_here(job: CompileJob, ctx: BackendContext) -> Kernel:
    """The job's Kernel, compiled (or loaded from the cache) in this process."""
    from tilecraft.jit.api import compile as compile_kernel

    return compile_kernel(job.func, out_idx=job.out_idx, pass_configs=job.pass_configs,
                          compile_flags=job.compile_flags, ctx=ctx)  # fmt: skip


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
        self, job: CompileJob, ctx: BackendContext, measure: Callable[[Kernel], Measured]
    ) -> Measured:
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


def _kill(pool: futures.ProcessPoolExecutor) -> None:
    """Stop the pool's worker processes now, whatever they are doing."""
    terminate = getattr(pool, "kill_workers", None)  # Python 3.14+
    if terminate is not None:
        terminate()
    else:  # before 3.14 the pool's processes are only reachable through this attribute
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


class WorkerStartError(AutotuneError):
    """A compile worker process died (or hung) before it could take a job."""


_CRASH_MESSAGE = (
    "the worker process compiling it died (a crash in a compiler or in native code); tune with workers=0 "
    "to see the crash in this process"
)
_START_MESSAGE = (
    "a compile worker process exited while starting. Worker processes are started with Python's 'spawn' "
    "method, which imports the main script again: if the script tunes (or does other work) when imported, "
    "put that code under `if __name__ == '__main__':`; or tune with workers=0 (compile in this process)"
)
START_LIMIT = 120.0  # seconds a worker may take to start (import numpy and tilecraft) on a loaded machine


class _Slot:
    """One worker process (a one-process pool) running at most one job.

    A job's time limit counts from when the worker is ready (started and imported), so a slow start on a
    loaded machine is not charged to the first candidate; starting has its own, generous limit.
    """

    def __init__(self, context: Any) -> None:
        self._context = context
        self._pool: futures.ProcessPoolExecutor | None = None
        self._ready: futures.Future | None = None
        self._ready_at = 0.0
        self.job: CompileJob | None = None
        self.future: futures.Future | None = None
        self.submitted = 0.0

    def start(self, job: CompileJob, where: WorkerContext) -> None:
        if self._pool is None:
            self._pool = futures.ProcessPoolExecutor(max_workers=1, mp_context=self._context)
            self._ready = self._pool.submit(ready)
            self._ready.add_done_callback(self._mark_ready)
        self.job, self.submitted = job, time.perf_counter()
        self.future = self._pool.submit(build, job, where)

    def _mark_ready(self, future: futures.Future) -> None:
        self._ready_at = time.perf_counter()

    @property
    def starting(self) -> futures.Future | None:
        """The future of the worker's start while it is still starting."""
        return self._ready if self._ready is not None and not self._ready.done() else None

    def _started(self) -> bool:
        return self._ready is not None and self._ready.done() and self._ready.exception() is None

    def deadline(self, timeout: float | None) -> float | None:
        """When the running job (or the worker's start) is overdue; None: never."""
        if not self._started():
            return self.submitted + START_LIMIT + (timeout or 0.0)
        if timeout is None:
            return None
        return max(self.submitted, self._ready_at) + timeout

    def finish(self) -> CompileOutcome:
        """The outcome of the finished job; the slot is free again."""
        job, seconds = self.job, time.perf_counter() - self.submitted
        assert job is not None and self.future is not None
        self.job = None
        try:
            status, seconds, error = self.future.result()
        except BrokenProcessPool:
            started = self._started()
            self.kill()
            if not started:
                raise WorkerStartError(_START_MESSAGE) from None
            return CompileOutcome(job.index, CRASHED, seconds, _CRASH_MESSAGE)
        except Exception as err:  # noqa: BLE001 - e.g. the job could not be sent to the worker (pickling)
            return CompileOutcome(job.index, COMPILE_FAILED, seconds, describe_error(err))
        return CompileOutcome(job.index, COMPILE_FAILED if status == FAILED else OK, seconds, error)

    def time_out(self, timeout: float | None) -> CompileOutcome:
        """Kill the job that ran past its time limit; its outcome."""
        job = self.job
        assert job is not None
        started = self._started()
        self.job = None
        self.kill()
        if not started:
            raise WorkerStartError(f"a compile worker process did not start within {START_LIMIT:g} s")
        message = f"compiling took longer than the timeout of {timeout:g} s; its worker was stopped"
        return CompileOutcome(job.index, TIMEOUT, time.perf_counter() - self.submitted, message)

    def kill(self) -> None:
        if self._pool is not None:
            _kill(self._pool)
            self._pool = None
            self._ready = None

    def close(self) -> None:
        if self.job is not None:
            self.kill()
        elif self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


class LocalProcessExecutor(Executor):
    """Compiles in `workers` spawned processes on this machine, one job per process at a time."""

    name = "local-process"

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"LocalProcessExecutor needs at least 1 worker, got {workers}")
        self.workers = workers
        self._context = multiprocessing.get_context("spawn")

    def compile(self, jobs: Sequence[CompileJob], ctx: BackendContext,
                timeout: float | None) -> Iterator[CompileOutcome]:  # fmt: skip
        where = WorkerContext(str(ctx.target), None if ctx.target_host is None else str(ctx.target_host),
                              ctx.execution.name, settings_overrides())  # fmt: skip
        queue = deque(jobs)
        slots = [_Slot(self._context) for _ in range(min(self.workers, len(jobs)))]
        try:
            while queue or any(s.job is not None for s in slots):
                for slot in slots:
                    if slot.job is None and queue:
                        slot.start(queue.popleft(), where)
                yield from self._wait(slots, timeout)
        finally:
            for slot in slots:
                slot.close()

    def _wait(self, slots: list[_Slot], timeout: float | None) -> Iterator[CompileOutcome]:
        busy = [s for s in slots if s.job is not None]
        deadlines = [d for d in (s.deadline(timeout) for s in busy) if d is not None]
        wait = max(0.0, min(deadlines) - time.perf_counter()) + 0.01 if deadlines else None
        # A worker becoming ready starts its job's clock: wake up for that too, to set the deadline.
        waited = [s.future for s in busy] + [s.starting for s in busy if s.starting is not None]
        futures.wait(waited, timeout=wait, return_when=futures.FIRST_COMPLETED)
        for slot in busy:
            deadline = slot.deadline(timeout)
            if slot.future.done():
                yield slot.finish()
            elif deadline is not None and time.perf_counter() > deadline:
                yield slot.time_out(timeout)

    def benchmark(
        self, job: CompileJob, ctx: BackendContext, measure: Callable[[Kernel], Measured]
    ) -> Measured:
        return measure(compile_here(job, ctx))


def available_cores() -> int:
    """Cores this process may run on (its affinity where the OS says; else a modest 2)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else 2


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


def default_executor(workers: int | None, verbose: bool) -> Executor:
    """The executor for `workers` compile processes (None: TILECRAFT_TUNE_WORKERS, else one per core)."""
    count = worker_count(workers)
    if count == 0:
        return InProcessExecutor()
    if settings.get("TILECRAFT_DISABLE_CACHE"):
        if verbose:
            say("autotune: the kernel cache is disabled, so candidates compile in this process (workers "
                "hand their builds over through the cache)")  # fmt: skip
        return InProcessExecutor()
    return LocalProcessExecutor(count)
