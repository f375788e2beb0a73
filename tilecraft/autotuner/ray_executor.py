"""The `ray` executor: compile tasks on the cluster's CPUs, timing on actors, artifacts in the object store.

    executor="ray" (or TILECRAFT_AUTOTUNE_EXECUTOR=ray); connect first with ray.init(address=...)

Compiling: one Ray task per candidate (`num_cpus=1`), all submitted at once; Ray runs as many at a time
as the cluster has cores. A task streams three items: that it started (its timeout counts from there,
not from when it queued or its worker started), its status, fetched here, and the cache entries it built
(the lowering and the device build), left in the object store. Measuring: one actor per GPU of the cluster (`num_gpus=1`; Ray gives each its own
device) when the execution backend times on one (`benchmark_resource`), else one actor (`num_cpus=1`);
each actor takes a candidate's entries straight from the object store into its node's cache, loads
the kernel and measures it. Outcomes stream back as they finish.

Failures: a task or actor that dies (a crash, a killed worker, a node that left the cluster) loses only
its candidate, which is run once more (Ray places it), then scored as crashed; a compile past the
timeout is cancelled (its worker killed) and scored as timed out; a measurement past twice the timeout
has its actor killed and replaced, and the candidate is measured once more on another actor.

When Ray is not initialized, a local instance is started (`ray.init()`), and a line says so.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tilecraft.autotuner import executor as executors
from tilecraft.autotuner.executor import CompileOutcome, Executor, worker_context
from tilecraft.autotuner.local import BENCH_CRASH_MESSAGE, BENCH_SLACK, START_LIMIT, bench_limit
from tilecraft.autotuner.measure import Measured
from tilecraft.autotuner.progress import say
from tilecraft.autotuner.result import COMPILE_FAILED, CRASHED, OK, RUN_FAILED, TIMEOUT, AutotuneError
from tilecraft.autotuner.worker import (
    FAILED,
    FATAL,
    CompileJob,
    WorkerContext,
    build_portable,
    describe_error,
    install,
    measure_built,
    ready,
)

if TYPE_CHECKING:
    from tilecraft.autotuner.measure import Measurement
    from tilecraft.backend.context import BackendContext
    from tilecraft.jit.kernel import Kernel

_STALLED = (
    f"no Ray task started within {START_LIMIT:g} s: does the cluster have a free core, and can its workers "
    "import tilecraft and the kernel's modules (ray.init(runtime_env=...))?"
)
INSTALL_HINT = "pip install 'tilecraft[ray]' (or pip install 'ray>=2.9')"
RAY_CRASH_MESSAGE = (
    "the Ray worker compiling it died (a crash in a compiler or in native code, a killed worker, or its "
    "node left the cluster), also when run again"
)


def task_error(err: Any) -> str:
    """What a Ray task raised, as the candidate's error (Ray's own first line names only the task)."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):
        return describe_error(cause)
    lines = [line for line in str(err).splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__


def send_by_value(module: Any) -> None:
    """Send `module`'s functions to Ray's workers by value (a tuning spec that is not importable there)."""
    import_ray().cloudpickle.register_pickle_by_value(module)


def import_ray() -> Any:
    """The `ray` module; an AutotuneError saying what to install when it is missing."""
    try:
        import ray
    except ImportError as err:
        raise AutotuneError(f"executor='ray' needs Ray, which is not installed ({err}): {INSTALL_HINT}") from None
    return ray


def connect(ray: Any, verbose: bool) -> float:
    """Seconds it took to make Ray ready: 0 when the user connected already; else a local instance is
    started and a line on stderr says so."""
    if ray.is_initialized():
        return 0.0
    start = time.perf_counter()
    say("autotune: Ray is not initialized, so a local Ray instance is started on this machine (ray.init(), "
        "its workers importing from this process's sys.path); call ray.init(address=...) before tuning to "
        "use a cluster")  # fmt: skip
    path = os.pathsep.join(p for p in sys.path if p)
    ray.init(log_to_driver=verbose, runtime_env={"env_vars": {"PYTHONPATH": path}})
    return time.perf_counter() - start


def _bench_actor(ray: Any) -> Any:
    class BenchActor:
        """A process that measures candidates one at a time (on its own GPU when it holds one)."""

        def ready(self, where: WorkerContext) -> int:
            return ready(where)

        def measure(self, job: CompileJob, where: WorkerContext, spec: bytes, best: float | None,
                    entries: list) -> tuple:  # fmt: skip
            install(entries, where)  # Ray resolved the entries' reference from the object store
            return measure_built(job, where, spec, best)

    return ray.remote(max_restarts=0, max_task_retries=0)(BenchActor)


class RayExecutor(Executor):
    """Compiles in Ray tasks and measures in Ray actors (see the module's docstring). `actors`: timing
    actors (default: one per GPU of the cluster when the kernels run on one, else 1)."""

    name = "ray"

    def __init__(self, verbose: bool = False, actors: int | None = None) -> None:
        self.ray = import_ray()
        self.verbose = verbose
        self.actors = actors
        self.startup_seconds = connect(self.ray, verbose)
        self.first_task_seconds: float | None = None
        self._entries: dict[int, Any] = {}  # candidate index -> ObjectRef of its built cache entries
        self._compile_task = self.ray.remote(num_cpus=1, max_retries=0)(_compile_stream).options(
            num_returns="streaming")
        self._ready_task = self.ray.remote(num_cpus=1, max_retries=0)(ready)
        self._actor_class = _bench_actor(self.ray)

    # ------------------------------------------------------------------ compiling

    def _first_task(self, where: WorkerContext) -> None:
        """Run one task that starts a worker (importing tilecraft, making the backend context): its round
        trip is `first_task_seconds`, Ray's latency to a first result."""
        if self.first_task_seconds is not None:
            return
        start = time.perf_counter()
        done, _ = self.ray.wait([self._ready_task.remote(where)], num_returns=1, timeout=START_LIMIT)
        if not done:
            raise AutotuneError(_STALLED)
        self.ray.get(done[0])
        self.first_task_seconds = time.perf_counter() - start
        if self.verbose:
            say(f"autotune: Ray ready (start-up {self.startup_seconds:.2f} s, first task "
                f"{self.first_task_seconds:.2f} s)")  # fmt: skip

    def compile(self, jobs: Sequence[CompileJob], ctx: BackendContext,
                timeout: float | None) -> Iterator[CompileOutcome]:  # fmt: skip
        if not jobs:
            return
        where = worker_context(ctx)
        self._first_task(where)
        queue, tries = deque(jobs), {}
        running: dict[Any, _Task] = {}  # the task's stream -> its state
        self._progress = time.perf_counter()
        try:
            while queue or running:
                while queue:  # Ray queues what the cluster cannot run yet
                    job = queue.popleft()
                    stream = self._compile_task.remote(self.ray.cloudpickle.dumps(job), where)
                    running[stream] = _Task(job, time.perf_counter())
                yield from self._compile_wait(running, queue, tries, timeout)
        finally:
            for stream in running:
                self.ray.cancel(stream, force=True)

    def _compile_wait(self, running: dict[Any, _Task], queue: deque, tries: dict[int, int],
                      timeout: float | None) -> Iterator[CompileOutcome]:  # fmt: skip
        deadlines = [d for d in (t.deadline(timeout) for t in running.values()) if d is not None]
        if not any(t.started for t in running.values()):
            deadlines.append(self._progress + START_LIMIT)  # nothing runs: is the cluster stuck?
        wait = max(0.0, min(deadlines) - time.perf_counter()) + 0.01 if deadlines else None
        ready, _ = self.ray.wait(list(running), num_returns=1, timeout=wait)
        stalled = not any(t.started for t in running.values()) and time.perf_counter() > self._progress + START_LIMIT
        if not ready and stalled:
            raise AutotuneError(_STALLED)
        for stream in ready:
            self._progress = time.perf_counter()
            outcome = self._advance(stream, running[stream], queue, tries)
            if outcome is not None or running[stream].over:
                del running[stream]
            if outcome is not None:
                yield outcome
        for stream, task in list(running.items()):
            deadline = task.deadline(timeout)
            if deadline is not None and time.perf_counter() > deadline:
                del running[stream]
                self.ray.cancel(stream, force=True)
                yield self._overdue(task, timeout)

    @staticmethod
    def _overdue(task: _Task, timeout: float | None) -> CompileOutcome:
        message = f"compiling took longer than the timeout of {timeout:g} s; its Ray task was cancelled"
        return CompileOutcome(task.job.index, TIMEOUT, time.perf_counter() - task.started, message)

    def _advance(self, stream: Any, task: _Task, queue: deque, tries: dict[int, int]) -> CompileOutcome | None:
        """Read the task's next item: its start, or its status and artifacts (the outcome)."""
        errors = self.ray.exceptions
        job = task.job
        try:
            if task.started is None:
                self.ray.get(next(stream))
                task.started = time.perf_counter()
                return None
            status, seconds, error = self.ray.get(next(stream))
            entries = next(stream)
        except errors.RayTaskError as err:  # raised in the task, outside the build (reading the job, say)
            task.over = True
            return CompileOutcome(job.index, COMPILE_FAILED, task.elapsed(), task_error(err))
        except errors.RayError as err:  # the worker or its node died
            task.over = True
            note = f"its Ray worker was lost ({type(err).__name__}); running it once more"
            if executors.requeue_once(queue, tries, job, note, self.verbose):
                return None
            return CompileOutcome(job.index, CRASHED, task.elapsed(), RAY_CRASH_MESSAGE)
        task.over = True
        if status == OK:
            self._entries[job.index] = entries
        return CompileOutcome(job.index, COMPILE_FAILED if status == FAILED else OK, seconds, error)

    # ------------------------------------------------------------------ measuring

    def benchmark(
        self, job: CompileJob, ctx: BackendContext, measure: Callable[[Kernel], Any]
    ) -> Any:
        entries = self._entries.get(job.index)
        if entries is not None:
            install(self.ray.get(entries), worker_context(ctx))
        return measure(executors.compile_here(job, ctx))

    def benchmark_all(self, jobs: Sequence[CompileJob], ctx: BackendContext,
                      measurement: Measurement) -> Iterator[tuple[int, Measured]]:  # fmt: skip
        if not jobs:
            return
        try:
            spec = measurement.portable(self.ray.cloudpickle.dumps)
        except Exception as err:  # noqa: BLE001 - pickle raises several types for what cannot travel
            raise AutotuneError(
                f"executor='ray': the profile options cannot be sent to a timing actor ({type(err).__name__}: "
                f"{err}); give ref_prog / supply_prog / manual_check_prog that Ray's cloudpickle can send"
            ) from None
        resource = ctx.execution_backend().benchmark_resource
        where = worker_context(ctx)
        pool = ActorPool(self, resource, self._actor_count(resource, len(jobs)), where)
        if self.verbose:
            say(f"autotune: measuring on {len(pool.actors)} Ray actor(s), each holding one {resource or 'core'}")
        try:
            yield from pool.run(jobs, where, spec, measurement)
        finally:
            pool.close()

    def _actor_count(self, resource: str | None, jobs: int) -> int:
        if self.actors is not None:
            return max(1, min(self.actors, jobs))
        if resource is None:
            return 1
        have = int(self.ray.cluster_resources().get(resource, 0))
        if have < 1:
            raise AutotuneError(
                f"executor='ray': the kernels are timed on a {resource}, and the Ray cluster has none "
                f"(its resources: {self.ray.cluster_resources()}); start Ray on machines with one"
            )
        return min(have, jobs)

    def entries_ref(self, index: int) -> Any:
        return self._entries.get(index, [])

    def close(self) -> None:
        self._entries.clear()


STARTED = "started"


def _compile_stream(job: bytes, where: WorkerContext) -> Iterator[Any]:
    """A compile task's items: that it started (its timeout counts from here, not from its worker's
    start), then the status, then the built cache entries (left in the object store). The job arrives
    pickled and is read here: reading it is part of the candidate's work."""
    ready(where)  # a fresh worker's one-time start, not the candidate's
    yield STARTED
    status, entries = build_portable(pickle.loads(job), where)
    yield status
    yield entries


@dataclass
class _Task:
    """A running compile task."""

    job: CompileJob
    submitted: float
    started: float | None = None
    over: bool = False

    def deadline(self, timeout: float | None) -> float | None:
        """When the running task is overdue; None while it waits for a core (or without a timeout)."""
        if self.started is None or timeout is None:
            return None
        return self.started + timeout

    def elapsed(self) -> float:
        return time.perf_counter() - (self.started or self.submitted)


class ActorPool:
    """Timing actors, each measuring one candidate at a time; a lost or hung actor is replaced."""

    def __init__(self, executor: RayExecutor, resource: str | None, count: int, where: WorkerContext) -> None:
        self.executor = executor
        self.where = where
        self.ray = executor.ray
        self.options = {"num_gpus": 1} if resource == "GPU" else (
            {"resources": {resource: 1}} if resource else {"num_cpus": 1})  # fmt: skip
        self.actors: list[Any] = []
        self.starting: dict[Any, int] = {}  # ready() ref -> slot, while the actor's process starts
        self.ready_at: dict[int, float] = {}  # slot -> when its actor was ready
        for slot in range(count):
            self.actors.append(None)
            self._start(slot)

    def _start(self, slot: int) -> None:
        actor = self.executor._actor_class.options(**self.options).remote()
        self.actors[slot] = actor
        self.ready_at.pop(slot, None)
        self.starting[actor.ready.remote(self.where)] = slot

    def run(self, jobs: Sequence[CompileJob], where: WorkerContext, spec: bytes,
            measurement: Measurement) -> Iterator[tuple[int, Measured]]:  # fmt: skip
        queue = deque(jobs)
        lost_on: dict[int, int] = {}  # candidate index -> the actor slot it was lost on
        running: dict[Any, tuple[CompileJob, int, float]] = {}  # result ref -> (job, slot, submitted)
        limit = bench_limit(measurement.timeout)
        while queue or running:
            self._feed(queue, running, lost_on, where, spec, measurement)
            if not running:
                raise AutotuneError("executor='ray': no timing actor is left to measure the remaining candidates")
            yield from self._wait(running, queue, lost_on, measurement, limit)

    def _feed(self, queue: deque, running: dict, lost_on: dict[int, int], where: WorkerContext, spec: bytes,
              measurement: Measurement) -> None:  # fmt: skip
        busy = {slot for (_, slot, _) in running.values()}
        for slot, actor in enumerate(self.actors):
            if slot in busy or actor is None:
                continue
            for job in list(queue):
                if len(self.actors) == 1 or lost_on.get(job.index) != slot:
                    queue.remove(job)
                    ref = actor.measure.remote(job, where, spec, measurement.best,
                                               self.executor.entries_ref(job.index))  # fmt: skip
                    running[ref] = (job, slot, time.perf_counter())
                    break

    def _deadline(self, slot: int, submitted: float, limit: float | None) -> float | None:
        """When the slot's measurement is overdue: its clock starts when the actor is ready."""
        if slot not in self.ready_at:  # the actor's process is still starting (importing tilecraft)
            return submitted + START_LIMIT + (limit or 0.0)
        return None if limit is None else max(submitted, self.ready_at[slot]) + limit

    def _mark_ready(self, done: list) -> None:
        for ref in done:
            slot = self.starting.pop(ref, None)
            if slot is not None:
                self.ready_at[slot] = time.perf_counter()

    def _wait(self, running: dict, queue: deque, lost_on: dict[int, int], measurement: Measurement,
              limit: float | None) -> Iterator[tuple[int, Measured]]:  # fmt: skip
        deadlines = [d for d in (self._deadline(s, t, limit) for (_, s, t) in running.values()) if d is not None]
        wait = max(0.0, min(deadlines) - time.perf_counter()) + 0.01 if deadlines else None
        # An actor becoming ready starts its job's clock: wake up for that too.
        done, _ = self.ray.wait([*running, *self.starting], num_returns=1, timeout=wait)
        self._mark_ready(done)
        for ref in done:
            if ref not in running:
                continue
            job, slot, _ = running.pop(ref)
            result = self._result(ref, job, slot, queue, lost_on, measurement)
            if result is not None:
                yield result
        for ref, (job, slot, submitted) in list(running.items()):
            deadline = self._deadline(slot, submitted, limit)
            if deadline is not None and time.perf_counter() > deadline:
                del running[ref]
                message = (f"measuring it did not finish within {limit:g} s (twice the timeout, plus "
                           f"{BENCH_SLACK:g} s), also when measured again; its actor was stopped")  # fmt: skip
                result = self._lost(job, slot, queue, lost_on, TIMEOUT, message)
                if result is not None:
                    yield result

    def _result(self, ref: Any, job: CompileJob, slot: int, queue: deque, lost_on: dict[int, int],
                measurement: Measurement) -> tuple[int, Measured] | None:  # fmt: skip
        try:
            status, latency, error, ref_latency = self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as err:  # raised outside the measurement (reading the job)
            return job.index, Measured(RUN_FAILED, error=task_error(err))
        except self.ray.exceptions.RayError:  # the actor's process or node died
            return self._lost(job, slot, queue, lost_on, CRASHED, BENCH_CRASH_MESSAGE)
        if status == FATAL:
            raise AutotuneError(error)
        if measurement.ref_latency is None:
            measurement.ref_latency = ref_latency
        return job.index, Measured(status, latency, error)

    def _lost(self, job: CompileJob, slot: int, queue: deque, lost_on: dict[int, int], status: str,
              message: str) -> tuple[int, Measured] | None:  # fmt: skip
        """Replace the slot's actor; measure the job once more elsewhere, or score it `status`."""
        self.ray.kill(self.actors[slot], no_restart=True)
        if slot in self.ready_at:
            self._start(slot)
        else:  # it never started (no room for it on the cluster, say): go on without it
            self.actors[slot] = None
            self.starting = {r: s for r, s in self.starting.items() if s != slot}
        if job.index in lost_on:
            return job.index, Measured(status, error=message)
        if self.executor.verbose:
            say(f"autotune: #{job.index}: its timing actor was lost ({status}); measuring it once more")
        lost_on[job.index] = slot
        queue.appendleft(job)
        return None

    def close(self) -> None:
        for actor in self.actors:
            if actor is not None:
                self.ray.kill(actor, no_restart=True)
