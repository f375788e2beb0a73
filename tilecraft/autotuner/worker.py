"""What a compile worker process runs: lower and build one candidate into the shared disk cache.

The worker hands nothing back but a status: the tuning process then loads the candidate through the
ordinary compile path, which finds the lowering and the build in the cache. Kept free of anything but
tilecraft imports, so a worker process starts quickly.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tilecraft.ir.function import PrimFunc

OK = "ok"
FAILED = "failed"


@dataclass(frozen=True)
class CompileJob:
    """One candidate to compile: its index among the configurations, its PrimFunc and compile options."""

    index: int
    func: PrimFunc
    out_idx: tuple[int, ...] | None = None
    pass_configs: Mapping[str, Any] | None = None
    compile_flags: tuple[str, ...] | None = None


@dataclass(frozen=True)
class WorkerContext:
    """What a worker needs to rebuild the tuning process's backend context and settings."""

    target: str
    target_host: str | None
    execution_backend: str
    settings: Mapping[str, Any]


def describe_error(err: BaseException) -> str:
    """`Type: message`, and the innermost frame when the error is not one tilecraft raises on purpose."""
    from tilecraft.errors import TilecraftError

    text = f"{type(err).__name__}: {err}"
    if not isinstance(err, TilecraftError):
        frames = traceback.extract_tb(err.__traceback__)
        if frames:
            last = frames[-1]
            text += f" (at {last.filename}:{last.lineno})"
    return text


def ready(where: WorkerContext | None = None) -> int:
    """Started and imported: the worker's process id. With `where`, also the backend context made and
    its execution backend probed once, so that no candidate's timeout pays for a worker's start."""
    if where is not None:
        from tilecraft import settings
        from tilecraft.backend.context import create_backend_context
        from tilecraft.jit import lower  # noqa: F401 - the lowering stack, imported once here

        with settings.override(**where.settings):
            ctx = create_backend_context(where.target, where.target_host, where.execution_backend)
            ctx.execution_backend().available()
    return os.getpid()


def build(job: CompileJob, where: WorkerContext) -> tuple[str, float, str]:
    """(status, seconds, error): lower and build `job` for the context `where` describes."""
    from tilecraft import settings
    from tilecraft.backend.context import create_backend_context
    from tilecraft.jit.lower import lower_artifact

    start = time.perf_counter()
    try:
        with settings.override(**where.settings):
            ctx = create_backend_context(where.target, where.target_host, where.execution_backend)
            artifact = lower_artifact(job.func, ctx, job.pass_configs, job.compile_flags)
            ctx.execution_backend().build(artifact, ctx)
    except Exception as err:  # noqa: BLE001 - a failing candidate is reported, never fatal to the worker
        return FAILED, time.perf_counter() - start, describe_error(err)
    return OK, time.perf_counter() - start, ""


# ---------------------------------------------------------------------- benchmark workers

FATAL = "fatal"  # the tuning itself cannot go on (no inputs can be made): raised in the tuning process

_measurements: dict[str, Any] = {}  # digest of a pickled Measurement -> the one this worker keeps


def pin(environment: Mapping[str, str]) -> None:
    """A worker's initializer: its own environment (a benchmark worker's device, every worker's OpenMP
    thread budget), set before any runtime starts (OpenMP's is read when a kernel's library loads it)."""
    os.environ.update(environment)


def _measurement(spec: bytes, best: float | None) -> Any:
    """The Measurement `spec` pickles, kept across candidates: the reference program is timed, and
    cached inputs are made, once per worker."""
    import hashlib
    import pickle

    digest = hashlib.sha256(spec).hexdigest()
    measurement = _measurements.get(digest)
    if measurement is None:
        _measurements.clear()  # one tuning at a time per worker
        measurement = _measurements[digest] = pickle.loads(spec)
    measurement.best = best
    return measurement


def measure_built(job: CompileJob, where: WorkerContext, spec: bytes,
                  best: float | None) -> tuple[str, float | None, str, float | None]:  # fmt: skip
    """(status, latency, error, reference latency): load `job` (built, in the cache) and measure it as
    the pickled Measurement `spec` says; `best` is the best latency so far (for early stopping)."""
    from tilecraft import settings
    from tilecraft.autotuner.result import RUN_FAILED, AutotuneError
    from tilecraft.backend.context import create_backend_context
    from tilecraft.jit.api import compile as compile_kernel

    with settings.override(**where.settings):
        measurement = _measurement(spec, best)
        try:
            ctx = create_backend_context(where.target, where.target_host, where.execution_backend)
            kernel = compile_kernel(job.func, out_idx=job.out_idx, pass_configs=job.pass_configs,
                                    compile_flags=job.compile_flags, ctx=ctx)  # fmt: skip
        except Exception as err:  # noqa: BLE001 - loading failed: this candidate is skipped, say why
            return RUN_FAILED, None, f"loading the compiled kernel failed: {describe_error(err)}", None
        try:
            measured = measurement.measure(kernel)
        except AutotuneError as err:
            return FATAL, None, str(err), None
    return measured.status, measured.latency, measured.error, measurement.ref_latency


# ---------------------------------------------------------------------- builds that travel

Entry = tuple[str, dict[str, bytes], dict[str, Any]]  # a cache entry: key, files, metadata


def _entry(cache: Any, key: str) -> Entry | None:
    found = cache.get(key)
    if found is None:
        return None
    return key, {name: found.read(name) for name in found.files}, dict(found.meta)


def build_portable(job: CompileJob, where: WorkerContext) -> tuple[tuple[str, float, str], list[Entry]]:
    """`build`, and the cache entries it made (the lowering and the build) as plain data, for a process
    on another machine to install (`install`): how a remote executor moves artifacts."""
    from tilecraft import settings
    from tilecraft.backend.context import create_backend_context
    from tilecraft.execution.cache import KernelCache
    from tilecraft.jit.lower import artifact_key, lower_artifact

    start = time.perf_counter()
    try:
        with settings.override(**where.settings):
            ctx = create_backend_context(where.target, where.target_host, where.execution_backend)
            artifact = lower_artifact(job.func, ctx, job.pass_configs, job.compile_flags)
            built = ctx.execution_backend().build(artifact, ctx)
            cache = KernelCache()
            keys = (artifact_key(job.func, ctx, job.pass_configs, job.compile_flags), built.key)
            entries = [e for e in (_entry(cache, k) for k in keys) if e is not None]
    except Exception as err:  # noqa: BLE001 - a failing candidate is reported, never fatal to the worker
        return (FAILED, time.perf_counter() - start, describe_error(err)), []
    return (OK, time.perf_counter() - start, ""), entries


def install(entries: list[Entry], where: WorkerContext) -> None:
    """Put built candidates' cache entries into this machine's cache (those it lacks)."""
    from tilecraft import settings
    from tilecraft.execution.cache import KernelCache

    with settings.override(**where.settings):
        cache = KernelCache()
        for key, files, meta in entries:
            if cache.get(key) is None:
                cache.put(key, files, meta)
