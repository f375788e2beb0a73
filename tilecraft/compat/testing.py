"""What `tilelang.testing` offers to TileLang's examples and tests, for tilecraft (`tilecraft.testing`).

* `main()` runs the calling test file under pytest, with the command line's extra arguments.
* `requires_cuda`, `requires_cuda_compute_version(major, minor=0, mode="ge")` and its `_ge/_gt/_le/_lt/_eq`
  forms, `requires_package(*names)`, and TileLang's ROCm/Metal requirements: decorators that skip a
  pytest test, with the reason, when the requirement is not met. As in TileLang they are evaluated when
  the test is decorated. A CUDA device is one that tilecraft's target detection finds, or the device
  emulated by `tilecraft run-tilelang --cuda-on-cpu` (with its chosen compute capability). tilecraft has
  no ROCm or Metal target, so those requirements always skip.
* `set_random_seed(seed)` seeds Python's, numpy's and (when installed) torch's generators.
* `process_func` and `regression`: TileLang's performance-regression helpers (record latencies, run a
  module's `regression_*` functions, print the results).
* `torch_assert_close(a, b, rtol, atol, max_mismatched_ratio)`: closeness that allows a small ratio of
  mismatched elements; it takes torch tensors or numpy arrays.

pytest is needed only by `main` and the `requires_*` decorators, and imported when they are used.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import inspect
import json
import operator
import os
import random
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecraft.compat import cuda_on_cpu

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "ge": operator.ge, "gt": operator.gt, "le": operator.le, "lt": operator.lt, "eq": operator.eq,
}  # fmt: skip


def _pytest() -> Any:
    try:
        import pytest
    except ImportError as err:
        raise ImportError(
            "tilecraft.testing's main() and requires_* decorators run tests with pytest, which is not "
            "installed; pip install pytest"
        ) from err
    return pytest


def main() -> None:
    """Run the calling test file's tests with pytest (extra command-line arguments are passed on)."""
    caller = inspect.getsourcefile(sys._getframe(1))
    if caller is None:
        raise RuntimeError("tilecraft.testing.main() must be called from a test file")
    sys.exit(_pytest().main([caller, *sys.argv[1:]]))


class Requirement:
    """A skip condition usable as `@requirement` on a test; `marks()` gives its pytest marks.

    `missing` returns why the requirement is not met, or None when it is.
    """

    def __init__(self, missing: Callable[[], str | None], needs: Sequence[Requirement] = ()) -> None:
        self._missing = missing
        self._needs = tuple(needs)

    def reason(self) -> str | None:
        """Why the requirement is not met (the first unmet one it needs, then its own), or None."""
        for need in self._needs:
            found = need.reason()
            if found is not None:
                return found
        return self._missing()

    def marks(self) -> list[Any]:
        reason = self.reason()
        return [_pytest().mark.skipif(reason is not None, reason=reason or "requirement met")]

    def __call__(self, func: Callable) -> Callable:
        for mark in self.marks():
            func = mark(func)
        return func


def cuda_capability() -> tuple[int, int] | None:
    """The compute capability of the CUDA device tests run on: the emulated one under --cuda-on-cpu,
    else that of the device tilecraft's detection finds; None when there is none."""
    emulated = cuda_on_cpu.capability()
    if emulated is not None:
        return emulated
    from tilecraft.backend.detection import detection_report
    from tilecraft.backend.registry import registered_backends

    registered_backends()  # the built-in backends register their target kinds when first listed
    for result in detection_report():
        if result.kind == "cuda" and result.target is not None:
            from tilecraft.cuda.target import capability

            return capability(result.target.attr("arch"))
    return None


def _no_cuda() -> str | None:
    if cuda_capability() is not None:
        return None
    return (
        "Requires CUDA: tilecraft's target detection finds no CUDA device (on a machine without one, "
        "tilecraft run-tilelang --cuda-on-cpu emulates it on the CPU)"
    )


requires_cuda = Requirement(_no_cuda)
requires_cuda_or_cdna = requires_cuda


def requires_cuda_compute_version(
    major_version: int, minor_version: int = 0, mode: str = "ge"
) -> Requirement:
    """Skip unless a CUDA device is present and its compute capability compares with `mode`
    ("ge", "gt", "le", "lt" or "eq") to (major_version, minor_version)."""
    if mode not in _COMPARE:
        raise ValueError(f"requires_cuda_compute_version: mode {mode!r} is not one of {', '.join(_COMPARE)}")
    wanted = (major_version, minor_version)

    def missing() -> str | None:
        have = cuda_capability() or (0, 0)
        if _COMPARE[mode](have, wanted):
            return None
        emulated = " (emulated by --cuda-on-cpu; choose another with --cuda-capability)" if (
            cuda_on_cpu.active()) else ""  # fmt: skip
        return f"Requires CUDA compute {mode} {major_version}.{minor_version}, but have {have[0]}.{have[1]}{emulated}"

    return Requirement(missing, needs=(requires_cuda,))


def requires_cuda_compute_version_ge(major_version: int, minor_version: int = 0) -> Requirement:
    return requires_cuda_compute_version(major_version, minor_version, "ge")


def requires_cuda_compute_version_gt(major_version: int, minor_version: int = 0) -> Requirement:
    return requires_cuda_compute_version(major_version, minor_version, "gt")


def requires_cuda_compute_version_le(major_version: int, minor_version: int = 0) -> Requirement:
    return requires_cuda_compute_version(major_version, minor_version, "le")


def requires_cuda_compute_version_lt(major_version: int, minor_version: int = 0) -> Requirement:
    return requires_cuda_compute_version(major_version, minor_version, "lt")


def requires_cuda_compute_version_eq(major_version: int, minor_version: int = 0) -> Requirement:
    return requires_cuda_compute_version(major_version, minor_version, "eq")


def requires_package(*names: str) -> Requirement:
    """Skip unless every named package can be imported."""

    def missing() -> str | None:
        absent = [n for n in names if not _importable(n)]
        return f"Requires package(s) {', '.join(absent)}, not installed" if absent else None

    return Requirement(missing)


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _no_target(what: str) -> Requirement:
    return Requirement(lambda: f"Requires {what}: tilecraft has no target for it (see docs/compat.md)")


requires_rocm = _no_target("ROCm")
requires_cdna = _no_target("a CDNA ROCm GPU")
requires_gfx950 = _no_target("gfx950 (CDNA4)")
requires_metal = _no_target("Metal")


def set_random_seed(seed: int = 42) -> None:
    """Seed Python's, numpy's and torch's (when installed) random generators."""
    random.seed(seed)
    np.random.seed(seed)
    if _importable("torch"):
        import torch

        torch.manual_seed(seed)  # seeds every device torch knows, CUDA included


@dataclass(frozen=True)
class PerfResult:
    """One latency recorded by `process_func`."""

    name: str
    latency: float
    case: str | None = None


_RESULTS: list[PerfResult] = []
_CURRENT_CASE: list[str | None] = [None]


def process_func(func: Callable[..., float], name: str | None = None, /, **kwargs: Any) -> None:
    """Call `func(**kwargs)`, which returns a latency, and record it under `name` (default: its module).

    A latency that is not positive is retried a few times, then reported as a warning and not recorded.
    """
    label = name or getattr(func, "__module__", "<unknown>")
    label = label.removeprefix("regression_")
    for _ in range(6):
        latency = float(func(**kwargs))
        if latency > 0:
            _RESULTS.append(PerfResult(label, latency, _CURRENT_CASE[0]))
            return
    warnings.warn(
        f"{label} reported latency {latency} <= 0; it is not recorded", RuntimeWarning, stacklevel=2
    )


RESULTS_JSON_PREFIX = "__TILELANG_PERF_RESULTS_JSON__="
"""With TL_PERF_REGRESSION_FORMAT=json, `regression` prints its results as one line: this, then JSON."""


def _only_patterns() -> list[str]:
    """TL_PERF_REGRESSION_ONLY: a JSON list or comma-separated case patterns (TileLang's variable)."""
    value = os.environ.get("TL_PERF_REGRESSION_ONLY", "").strip()
    if not value:
        return []
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value.split(",")
    parsed = [parsed] if isinstance(parsed, str) else parsed
    return [str(p).strip() for p in parsed if str(p).strip()] if isinstance(parsed, list) else []


def _selected(name: str, patterns: Sequence[str]) -> bool:
    """A case runs when a pattern matches its name, with or without the prefix, as a glob or a substring."""
    names = (name.lower(), name.removeprefix("regression_").lower())
    return not patterns or any(
        fnmatch.fnmatch(n, p.lower()) or p.lower() in n for p in patterns for n in names
    )


def _print_results() -> None:
    if os.environ.get("TL_PERF_REGRESSION_FORMAT", "text").strip().lower() == "json":
        rows = [
            {"name": r.name, "latency": r.latency, **({"case": r.case} if r.case else {})} for r in _RESULTS
        ]
        print(RESULTS_JSON_PREFIX + json.dumps(rows, separators=(",", ":")), flush=True)
        return
    for result in _RESULTS:
        print(f"{result.name}: {result.latency}")


def regression(prefixes: Sequence[str] = ("regression_",), verbose: bool = True) -> list[PerfResult]:
    """Run every function of the calling module whose name starts with one of `prefixes` (sorted by
    name), then print each recorded latency as `name: latency`; returns the results.

    As in TileLang, TL_PERF_REGRESSION_ONLY selects cases (glob or substring patterns) and
    TL_PERF_REGRESSION_FORMAT=json prints the results as one `RESULTS_JSON_PREFIX` line."""
    caller = sys._getframe(1).f_globals
    patterns = _only_patterns()
    cases = sorted(
        (k, v)
        for k, v in caller.items()
        if callable(v) and k.startswith(tuple(prefixes)) and _selected(k, patterns)
    )
    _RESULTS.clear()
    for i, (name, fn) in enumerate(cases, 1):
        _CURRENT_CASE[0] = name.removeprefix("regression_")
        start = time.perf_counter()
        try:
            fn()
        finally:
            _CURRENT_CASE[0] = None
        if verbose:
            print(f"[{i}/{len(cases)}] {name} ({time.perf_counter() - start:.2f}s)", flush=True)
    _print_results()
    return list(_RESULTS)


def _as_float64(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor: bfloat16 and float8 have no numpy dtype, so widen in torch
        x = x.detach().cpu()
        return (x.double() if x.is_floating_point() else x.long()).numpy().astype(np.float64)
    return np.asarray(x).astype(np.float64)


def torch_assert_close(
    tensor_a: Any,
    tensor_b: Any,
    rtol: float = 1e-2,
    atol: float = 1e-3,
    max_mismatched_ratio: float = 0.001,
    verbose: bool = False,
    equal_nan: bool = True,
    check_dtype: bool = True,
    base_name: str = "LHS",
    ref_name: str = "RHS",
    **ignored: Any,
) -> bool:
    """Assert that at most `max_mismatched_ratio` of the elements differ by more than atol + rtol * |b|.

    Takes torch tensors or numpy arrays; the AssertionError says how many differ and where the first is.
    (TileLang's device/layout/stride checks are accepted and ignored: arrays are compared by value.)
    """
    if check_dtype and getattr(tensor_a, "dtype", None) != getattr(tensor_b, "dtype", None):
        raise AssertionError(
            f"dtypes differ: {base_name} is {tensor_a.dtype}, {ref_name} is {tensor_b.dtype}"
        )
    a, b = _as_float64(tensor_a), _as_float64(tensor_b)
    if a.shape != b.shape:
        raise AssertionError(f"shapes differ: {base_name} is {a.shape}, {ref_name} is {b.shape}")
    bad = ~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    count, allowed = int(bad.sum()), int(a.size * max_mismatched_ratio)
    if verbose:
        print(f"mismatched elements: {count} / {a.size} (allowed: {allowed})")
    if count <= allowed:
        return True
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    raise AssertionError(
        f"{count} of {a.size} elements differ beyond atol={atol}, rtol={rtol} (at most {allowed} may); "
        f"first at index {list(first)}: {base_name}={a[first]}, {ref_name}={b[first]}; greatest absolute "
        f"difference {np.nanmax(np.abs(a - b))}"
    )


__all__ = [
    "PerfResult", "Requirement", "cuda_capability", "main", "process_func", "regression",
    "requires_cdna", "requires_cuda", "requires_cuda_compute_version", "requires_cuda_compute_version_eq",
    "requires_cuda_compute_version_ge", "requires_cuda_compute_version_gt", "requires_cuda_compute_version_le",
    "requires_cuda_compute_version_lt", "requires_cuda_or_cdna", "requires_gfx950", "requires_metal",
    "requires_package", "requires_rocm", "set_random_seed", "torch_assert_close",
]  # fmt: skip
