"""Compile a fuzz case for a backend context, run it, and say what differs from the reference."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

import tilecraft
import tilecraft.language as T
from tests.fuzz.cases import Case
from tilecraft.errors import LoweringError

_KERNELS: OrderedDict[tuple[int, str], object] = OrderedDict()
_KEEP = 48  # compiled kernels kept: replays and shrinking often ask for the same source again


class FuzzTarget:
    """A resolved backend context, with a short repr for Hypothesis' falsifying-example report (a plain
    class: Hypothesis prints a dataclass field by field, the whole context included)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx

    def __repr__(self) -> str:
        return f"FuzzTarget({self.ctx.target}, {self.ctx.execution.name})"


class CompileFailure(AssertionError):
    """A generated kernel (valid by construction) did not compile."""


class Unsupported(Exception):
    """The target rejected the case with a limit its manifest declares (`BackendModule.unsupported`)."""


def compiled(source: str, ctx):
    key = (id(ctx), source)
    if key in _KERNELS:
        _KERNELS.move_to_end(key)
        return _KERNELS[key]
    try:
        kernel = tilecraft.compile(T.parse_script(source), ctx=ctx)
    except Exception as err:  # noqa: BLE001 - any failure here is a finding; the source is the reproducer
        # A limit the backend declares in its manifest (opencl's float64 without cl_khr_fp64, say) makes
        # the case not applicable to that target; anything else is a finding.
        if isinstance(err, LoweringError) and err.unsupported in ctx.backend.unsupported:
            raise Unsupported(str(err)) from err
        raise CompileFailure(
            f"compiling for {ctx.target} failed: {type(err).__name__}: {err}\n{source}"
        ) from err
    _KERNELS[key] = kernel
    if len(_KERNELS) > _KEEP:
        _KERNELS.popitem(last=False)
    return kernel


def problems(case: Case, ctx, seed: int) -> list[str]:
    """Every mismatch of every run of `case` on `ctx`, each line prefixed with the run's sizes."""
    kernel = compiled(case.source, ctx)
    backend = ctx.execution_backend()
    found = []
    for run in case.make_runs(np.random.default_rng(seed)):
        device = [backend.to_device(a) for a in run.arrays]
        kernel(*device)
        after = [np.asarray(backend.to_host(d)) for d in device]
        found += [f"[{sizes_text(run.sizes)}] {line}" for line in run.check(after)]
    return found


def sizes_text(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


def report(case: Case, ctx, seed: int, found: list[str]) -> str:
    return (f"{case.family} kernel differs from NumPy on {ctx.target} ({ctx.execution.name}), "
            f"input seed {seed}:\n" + "\n".join(found) + "\n--- kernel source ---\n" + case.source)  # fmt: skip
