"""The `local` executor: compile workers and pinned benchmark workers, processes on this machine.

Compiling: `workers` processes started with the `spawn` method, each candidate alone in a one-process
`ProcessPoolExecutor`, so a candidate that crashes its worker (a compiler bug, native code gone wrong) or
hangs past the timeout is killed and reported while the others go on; the builds reach the tuning
process through the disk cache.

Measuring: one process per device the execution backend reports (`benchmark_devices`: one per GPU of the
target's model, each seeing only its GPU; the host once for kernels that run on it), each measuring one
candidate at a time. A measurement that does not return within twice the timeout (plus a little) has its
process killed; a candidate whose worker died or hung is measured once more, on another device when
there is one, then scored as crashed or timed out.

Threads: the processes that run at once share the cores. Each gets `OMP_NUM_THREADS` = cores // processes
(`thread_budget`; the compile workers while compiling, the benchmark workers while measuring, the two
phases never overlap), unless the user set `OMP_NUM_THREADS`, which every worker then inherits.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent import futures
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from tilecraft.autotuner import executor as executors
from tilecraft.autotuner.executor import CompileOutcome, Executor, worker_context
from tilecraft.autotuner.main_module import RefersToMain, dumps_without_main, hidden_main, reimports_safely
from tilecraft.autotuner.measure import Measured
from tilecraft.autotuner.progress import say
from tilecraft.autotuner.result import COMPILE_FAILED, CRASHED, OK, TIMEOUT, AutotuneError
from tilecraft.autotuner.worker import (
    FAILED,
    FATAL,
    CompileJob,
    WorkerContext,
    build,
    describe_error,
    measure_built,
    pin,
    ready,
)

if TYPE_CHECKING:
    from tilecraft.autotuner.measure import Measurement
    from tilecraft.backend.context import BackendContext
    from tilecraft.jit.kernel import Kernel


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
    """A worker process died (or hung) before it could take a job."""


CRASH_MESSAGE = (
    "the worker process compiling it died (a crash in a compiler or in native code), also when tried "
    "again in a fresh one; tune with workers=0 to see the crash in this process"
)
BENCH_CRASH_MESSAGE = (
    "the benchmark worker process measuring it died (a crash in the kernel or its runtime), also when "
    "measured again on another worker; tune with workers=0 to see the crash in this process"
)
_START_MESSAGE = (
    "a worker process exited while starting (its traceback is printed above). Worker processes are started "
    "with Python's 'spawn' method, which imports the main script again, and the script's top level failed "
    "there: put that code under `if __name__ == '__main__':`; or tune with workers=0 (compile in this process)"
)
START_LIMIT = 120.0  # seconds a worker may take to start (import numpy and tilecraft) on a loaded machine
BENCH_SLACK = 2.0  # seconds past twice the timeout before a measurement counts as hung


def bench_limit(timeout: float | None) -> float | None:
    """How long one measurement may take before its worker is killed: the profiler stops a benchmark
    at `timeout` between calls, and the reference program is timed too, so twice that, plus slack."""
    return None if timeout is None else 2 * timeout + BENCH_SLACK


class Slot:
    """One worker process (a one-process pool) running at most one job, with an environment of its own.

    A job's time limit counts from when the worker is ready (started and imported), so a slow start on a
    loaded machine is not charged to the first candidate; starting has its own, generous limit.
    """

    def __init__(self, context: Any, where: WorkerContext, environment: Mapping[str, str] | None = None,
                 label: str = "", hide_main: bool = False) -> None:  # fmt: skip
        self._context = context
        self._where = where
        self._environment = dict(environment or {})
        self.label = label
        self._hide_main = hide_main  # start the worker without the main script (main_module.py)
        self._pool: futures.ProcessPoolExecutor | None = None
        self._ready: futures.Future | None = None
        self._ready_at = 0.0
        self.job: CompileJob | None = None
        self.future: futures.Future | None = None
        self.submitted = 0.0

    def start(self, job: CompileJob, fn: Callable[..., Any], *args: Any) -> None:
        # the process starts in the first submit (spawn reads __main__ then)
        with hidden_main() if self._hide_main else contextlib.nullcontext():
            if self._pool is None:
                self._pool = futures.ProcessPoolExecutor(max_workers=1, mp_context=self._context, initializer=pin,
                                                         initargs=(self._environment,))  # fmt: skip
                self._ready = self._pool.submit(ready, self._where)
                self._ready.add_done_callback(self._mark_ready)
            self.job, self.submitted = job, time.perf_counter()
            self.future = self._pool.submit(fn, *args)

    def _mark_ready(self, future: futures.Future) -> None:
        self._ready_at = time.perf_counter()

    @property
    def starting(self) -> futures.Future | None:
        """The future of the worker's start while it is still starting."""
        return self._ready if self._ready is not None and not self._ready.done() else None

    def started(self) -> bool:
        return self._ready is not None and self._ready.done() and self._ready.exception() is None

    def deadline(self, limit: float | None) -> float | None:
        """When the running job (or the worker's start) is overdue; None: never."""
        if not self.started():
            return self.submitted + START_LIMIT + (limit or 0.0)
        if limit is None:
            return None
        return max(self.submitted, self._ready_at) + limit

    def overdue(self, limit: float | None) -> bool:
        deadline = self.deadline(limit)
        return deadline is not None and time.perf_counter() > deadline

    def take(self) -> tuple[CompileJob, float, Any]:
        """(job, seconds, result) of the finished job; the slot is free again. Raises what the job raised:
        BrokenProcessPool when the worker died (the slot is then reset), WorkerStartError when it died
        while starting."""
        job, seconds, future = self.job, time.perf_counter() - self.submitted, self.future
        assert job is not None and future is not None
        self.job = None
        try:
            return job, seconds, future.result()
        except BrokenProcessPool:
            started = self.started()
            self.kill()
            if not started:
                raise WorkerStartError(_START_MESSAGE) from None
            raise

    def abandon(self) -> tuple[CompileJob, float]:
        """Kill the job that ran past its time limit: (job, seconds it ran)."""
        job = self.job
        assert job is not None
        started = self.started()
        self.job = None
        self.kill()
        if not started:
            raise WorkerStartError(f"a worker process did not start within {START_LIMIT:g} s")
        return job, time.perf_counter() - self.submitted

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


def wait_any(slots: Sequence[Slot], limit: float | None) -> None:
    """Sleep until a busy slot finishes, starts (its job's clock starts), or one is overdue."""
    busy = [s for s in slots if s.job is not None]
    deadlines = [d for d in (s.deadline(limit) for s in busy) if d is not None]
    wait = max(0.0, min(deadlines) - time.perf_counter()) + 0.01 if deadlines else None
    waited = [s.future for s in busy] + [s.starting for s in busy if s.starting is not None]
    futures.wait(waited, timeout=wait, return_when=futures.FIRST_COMPLETED)


class LocalProcessExecutor(Executor):
    """Compiles in `workers` spawned processes on this machine, one job per process at a time; measures
    in one pinned process per device (`measure_in_workers=False`: in the tuning process)."""

    name = "local-process"

    def __init__(self, workers: int, measure_in_workers: bool = True, verbose: bool = False) -> None:
        if workers < 1:
            raise ValueError(f"LocalProcessExecutor needs at least 1 worker, got {workers}")
        self.workers = workers
        self.measure_in_workers = measure_in_workers
        self.verbose = verbose
        self._context = multiprocessing.get_context("spawn")
        # A plain script (tuning outside `if __name__ == "__main__":`) would tune again in every worker
        # that imports it: its workers start without it (main_module.py).
        self._hide_main = not reimports_safely()

    # ------------------------------------------------------------------ compiling

    def compile(self, jobs: Sequence[CompileJob], ctx: BackendContext,
                timeout: float | None) -> Iterator[CompileOutcome]:  # fmt: skip
        where = worker_context(ctx)
        queue = deque(jobs)
        tries: dict[int, int] = {}
        count = min(self.workers, len(jobs))
        budget = executors.thread_budget(count)
        slots = [Slot(self._context, where, budget, hide_main=self._hide_main) for _ in range(count)]
        try:
            while queue or any(s.job is not None for s in slots):
                for slot in slots:
                    # the others start once the first is up, so a worker that cannot start fails once
                    if slot.job is None and queue and (slot is slots[0] or slots[0].started()):
                        job = queue.popleft()
                        slot.start(job, build, job, where)
                wait_any(slots, timeout)
                for slot in slots:
                    outcome = self._compile_done(slot, timeout, tries, queue)
                    if outcome is not None:
                        yield outcome
        finally:
            for slot in slots:
                slot.close()

    def _compile_done(self, slot: Slot, timeout: float | None, tries: dict[int, int],
                      queue: deque[CompileJob]) -> CompileOutcome | None:  # fmt: skip
        """The outcome of the slot's job if it is over (None: still running, or queued to try again)."""
        job = slot.job
        if job is None:
            return None
        if slot.future.done():
            try:
                _, _, (status, seconds, error) = slot.take()
            except BrokenProcessPool:
                return self._retry_or(queue, tries, job, CRASHED, CRASH_MESSAGE)
            except WorkerStartError:
                raise
            except Exception as err:  # noqa: BLE001 - e.g. the job could not be sent to the worker (pickling)
                return CompileOutcome(job.index, COMPILE_FAILED, 0.0, describe_error(err))
            return CompileOutcome(job.index, COMPILE_FAILED if status == FAILED else OK, seconds, error)
        if slot.overdue(timeout):
            _, seconds = slot.abandon()
            # Not tried again: the same compiler on the same code hangs again.
            message = f"compiling took longer than the timeout of {timeout:g} s; its worker was stopped"
            return CompileOutcome(job.index, TIMEOUT, seconds, message)
        return None

    def _retry_or(self, queue: deque[CompileJob], tries: dict[int, int], job: CompileJob, status: str,
                  message: str) -> CompileOutcome | None:  # fmt: skip
        """A job whose worker died: queued once more (None), or its outcome the second time."""
        if executors.requeue_once(queue, tries, job, "its worker died; trying it once more in a fresh worker",
                                  self.verbose):  # fmt: skip
            return None
        return CompileOutcome(job.index, status, 0.0, message)

    def benchmark(self, job: CompileJob, ctx: BackendContext, measure: Callable[[Kernel], Any]) -> Any:
        return measure(executors.compile_here(job, ctx))

    # ------------------------------------------------------------------ measuring

    def benchmark_all(self, jobs: Sequence[CompileJob], ctx: BackendContext,
                      measurement: Measurement) -> Iterator[tuple[int, Measured]]:  # fmt: skip
        spec = self._portable(measurement) if self.measure_in_workers else None
        if spec is None or not jobs:
            yield from super().benchmark_all(jobs, ctx, measurement)
            return
        devices = ctx.execution_backend().benchmark_devices(ctx.target)
        devices = devices[: max(1, min(len(devices), len(jobs)))]
        where = worker_context(ctx)
        budget = executors.thread_budget(len(devices))
        slots = [Slot(self._context, where, {**budget, **d.environment}, f"device {i}", self._hide_main)
                 for i, d in enumerate(devices)]  # fmt: skip
        if self.verbose:
            say(f"autotune: measuring on {len(slots)} benchmark worker(s): {devices[0].name}")
        try:
            yield from BenchLoop(slots, jobs, where, spec, measurement, self.verbose).run()
        finally:
            for slot in slots:
                slot.close()

    def _portable(self, measurement: Measurement) -> bytes | None:
        if self._hide_main:
            try:
                return measurement.portable(dumps_without_main)
            except RefersToMain as err:
                # workers started without the main script cannot load its ref_prog: measured here
                if self.verbose:
                    say(f"autotune: the profile options cannot go to a benchmark worker ({err}), so "
                        "candidates are measured in the tuning process")  # fmt: skip
                return None
            except Exception:  # noqa: BLE001, S110 - what cannot be pickled at all is reported below
                pass
        try:
            return measurement.portable()
        except Exception as err:  # noqa: BLE001 - pickle raises several types for what cannot travel
            warnings.warn(
                f"autotune: the profile options cannot be sent to a benchmark worker ({type(err).__name__}: {err}), "
                "so candidates are measured in the tuning process, where a kernel that hangs or crashes "
                "stops the tuning; give ref_prog / supply_prog / manual_check_prog as module-level functions",
                RuntimeWarning, stacklevel=4,
            )  # fmt: skip
            return None


class BenchLoop:
    """Hands compiled jobs to benchmark slots, one at a time each, and yields their measurements."""

    def __init__(self, slots: list[Slot], jobs: Sequence[CompileJob], where: WorkerContext, spec: bytes,
                 measurement: Measurement, verbose: bool) -> None:  # fmt: skip
        self.slots = slots
        self.queue = deque(jobs)
        self.where = where
        self.spec = spec
        self.measurement = measurement
        self.verbose = verbose
        self.limit = bench_limit(measurement.timeout)
        self.failed_on: dict[int, Slot] = {}

    def run(self) -> Iterator[tuple[int, Measured]]:
        while self.queue or any(s.job is not None for s in self.slots):
            for slot in self.slots:
                if slot.job is None:
                    self._feed(slot)
            wait_any(self.slots, self.limit)
            for slot in self.slots:
                done = self._done(slot)
                if done is not None:
                    yield done

    def _feed(self, slot: Slot) -> None:
        """Start the next job this slot may take (a retried job goes to another slot when there is one)."""
        for job in list(self.queue):
            if len(self.slots) == 1 or self.failed_on.get(job.index) is not slot:
                self.queue.remove(job)
                slot.start(job, measure_built, job, self.where, self.spec, self.measurement.best)
                return

    def _done(self, slot: Slot) -> tuple[int, Measured] | None:
        if slot.job is None:
            return None
        job = slot.job
        if slot.future.done():
            try:
                _, _, (status, latency, error, ref_latency) = slot.take()
            except BrokenProcessPool:
                return self._lost(job, slot, CRASHED, BENCH_CRASH_MESSAGE)
            if status == FATAL:
                raise AutotuneError(error)
            if self.measurement.ref_latency is None:
                self.measurement.ref_latency = ref_latency
            return job.index, Measured(status, latency, error)
        if slot.overdue(self.limit):
            slot.abandon()
            message = (f"measuring it did not finish within {self.limit:g} s (twice the timeout, plus "
                       f"{BENCH_SLACK:g} s), also when measured again; its worker was stopped")  # fmt: skip
            return self._lost(job, slot, TIMEOUT, message)
        return None

    def _lost(self, job: CompileJob, slot: Slot, status: str, message: str) -> tuple[int, Measured] | None:
        """A measurement lost with its worker: measured once more elsewhere, then scored `status`."""
        if job.index in self.failed_on:
            return job.index, Measured(status, error=message)
        if self.verbose:
            say(f"autotune: #{job.index}: its benchmark worker ({slot.label}) was lost ({status}); "
                "measuring it once more")  # fmt: skip
        self.failed_on[job.index] = slot
        self.queue.appendleft(job)
        return None
