"""`tilecraft.par_compile(funcs)` and `JITFunction.par_compile(configs)`: TileLang's way to compile many
kernels at once before they are called. Each compiles in a thread of its own: the backends' toolchains
run as subprocesses, so their builds overlap, and every later call of the same kernel finds it in the
cache."""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tilecraft.jit.kernel import Kernel


def par_compile(funcs: Iterable[Any], out_idx: Any = None, execution_backend: str | None = None,
                target: Any = None, target_host: Any = None, verbose: bool | None = None,
                pass_configs: Any = None, compile_flags: Any = None, num_workers: int | None = None,
                ignore_error: bool = False) -> list[Kernel | None]:  # fmt: skip
    """Compile each PrimFunc of `funcs` as `tilecraft.compile` does, `num_workers` at a time (default:
    one per core, at most one per function). A failure raises, unless `ignore_error`: then it is a
    RuntimeWarning naming the function's index and its result is None. (`verbose` is accepted and
    ignored.)"""
    from tilecraft.jit.api import compile

    options = {"out_idx": out_idx, "execution_backend": execution_backend, "target": target,
               "target_host": target_host, "pass_configs": pass_configs, "compile_flags": compile_flags}  # fmt: skip
    given = {k: v for k, v in options.items() if v is not None}
    return compile_all([functools.partial(compile, f, **given) for f in funcs], num_workers, ignore_error)


def compile_all(jobs: list[Callable[[], Kernel]], num_workers: int | None, ignore_error: bool) -> list[Kernel | None]:
    """Run the compile jobs in threads; their results in the jobs' order."""
    if not jobs:
        return []
    workers = num_workers or min(len(jobs), available_cores())
    with ThreadPoolExecutor(workers, thread_name_prefix="tilecraft-par-compile") as pool:
        futures = [pool.submit(job) for job in jobs]
    results: list[Kernel | None] = []
    for index, future in enumerate(futures):
        try:
            results.append(future.result())
        except Exception as err:
            if not ignore_error:
                raise
            warnings.warn(f"par_compile: configuration {index} failed to compile: {err}", RuntimeWarning,
                          stacklevel=3)  # fmt: skip
            results.append(None)
    return results


def available_cores() -> int:
    """Cores this process may run on (its affinity where the OS says; else a modest 2)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else 2
