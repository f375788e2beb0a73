"""Compile and run one conformance case on one backend context, with the kit's rule for lowering errors.

A kernel a backend cannot lower is a skip only when the `LoweringError` reports a limit the backend's
manifest declares (`BackendModule.unsupported`, matched by the error's `unsupported` key); any other
error fails, so a newly broken op shows as a failure, not as one more skip. `check_case` raises (for
pytest, which shows the traceback); `run_case` returns a `Verdict` (for `tilecraft backend check`). Both
take the same path, so the two report the same verdicts.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tilecraft.errors import LoweringError, TilecraftError

if TYPE_CHECKING:
    from tilecraft.backend import BackendContext
    from tilecraft.testing.conformance.cases import Case

PASS, FAIL, SKIP = "pass", "fail", "skip"


class Unsupported(Exception):
    """The kernel meets a limit its backend declares: not applicable there, so a skip."""

    def __init__(self, key: str, reason: str, error: LoweringError, backend: str) -> None:
        self.key = key
        self.error = error
        super().__init__(f"declared unsupported by {backend} ({key}: {reason}): {error.message}")


class UndeclaredLimit(TilecraftError):
    """A LoweringError names a limit (`unsupported=`) that its backend's manifest does not declare."""


def declared(err: LoweringError, ctx: BackendContext) -> Exception:
    """What a LoweringError means for the kit: `Unsupported` for a declared limit, `UndeclaredLimit` for a
    limit the manifest does not declare, else the error itself (a failure)."""
    key = err.unsupported
    if key is None:
        return err
    reason = ctx.backend.unsupported.get(key)
    if reason is not None:
        return Unsupported(key, reason, err, ctx.backend.name)
    declared_keys = ", ".join(ctx.backend.unsupported) or "none"
    return UndeclaredLimit(
        f"{err}\nthis error reports limit {key!r}, which backend {ctx.backend.name!r} does not declare "
        f"(declared: {declared_keys}); declare it in the manifest's `unsupported` with the reason if the "
        "backend really lacks it, or lower the kernel"
    )


def compile_kernel(func: Any, ctx: BackendContext, **kwargs: Any):
    """`tilecraft.compile(func, ctx=ctx, **kwargs)`; a LoweringError is raised as `declared` says."""
    import tilecraft

    try:
        return tilecraft.compile(func, ctx=ctx, **kwargs)
    except LoweringError as err:
        raise declared(err, ctx) from err


def expect(condition: bool, message: str) -> None:
    """Raise AssertionError(message) unless `condition`; unlike `assert`, also under `python -O`."""
    if not condition:
        raise AssertionError(message)


def within(out: Any, ref: np.ndarray, tol: float, what: str) -> None:
    """The relative error of `out` against the float64 `ref` is at most `tol`."""
    err = rel_error(out, ref)
    expect(err <= tol, f"{what}: relative error {err:.3e} > {tol:.1e}")


def rel_error(out: Any, ref: np.ndarray) -> float:
    """||out - ref|| / ||ref|| in float64; infinite when `out` holds a NaN (a poisoned output not written)."""
    out = np.asarray(out, dtype=np.float64)
    if np.isnan(out).any():
        return float("inf")
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


def check_case(case: Case, ctx: BackendContext, pass_configs: Mapping[str, Any] | None = None) -> None:
    """Compile `case` for `ctx`, run it on fresh inputs (outputs poisoned) and compare every output with
    the float64 reference; raises `Unsupported`, `AssertionError` or the error that stopped it."""
    kwargs = {"pass_configs": dict(pass_configs)} if pass_configs else {}
    kernel = compile_kernel(case.build(), ctx, **kwargs)
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    backend = ctx.execution_backend()
    arrays = case.inputs(rng)
    expected = case.reference([a.copy() for a in arrays])
    device = [backend.to_device(a) for a in arrays]
    kernel(*device)
    for index, ref in expected.items():
        within(backend.to_host(device[index]), ref, case.tol, f"{case.name}: output {index}")


@dataclass(frozen=True)
class Verdict:
    """What one check found: pass, fail or skip, and why (empty for a pass)."""

    status: str
    reason: str = ""


def verdict_of(check: Callable[[], object]) -> Verdict:
    """Run `check()`; a return is a pass, `Unsupported` a skip, anything else a failure with its reason."""
    try:
        check()
    except Unsupported as err:
        return Verdict(SKIP, str(err))
    except AssertionError as err:
        return Verdict(FAIL, str(err) or "assertion failed")
    except Exception as err:  # noqa: BLE001 - every error is the verdict's reason
        return Verdict(FAIL, f"{type(err).__name__}: {err}")
    return Verdict(PASS)


def run_case(case: Case, ctx: BackendContext, pass_configs: Mapping[str, Any] | None = None) -> Verdict:
    """`check_case` as a Verdict."""
    return verdict_of(lambda: check_case(case, ctx, pass_configs))
