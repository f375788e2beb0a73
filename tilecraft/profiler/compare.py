"""Comparing a kernel's outputs with a reference's, allowing a small fraction of mismatched elements."""

from __future__ import annotations

import numpy as np


def mismatch_report(
    actual: np.ndarray, expected: np.ndarray, atol: float, rtol: float, max_mismatched_ratio: float, what: str
) -> str | None:
    """None when `actual` matches `expected`; else why not, with the worst element.

    An element matches when |actual - expected| <= atol + rtol * |expected| (NaN matches NaN); the arrays
    match when at most `max_mismatched_ratio` of their elements do not.
    """
    if actual.shape != expected.shape:
        return f"{what}: shape {actual.shape} differs from the reference's {expected.shape}"
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    bad = int(close.size - np.count_nonzero(close))
    if bad <= max_mismatched_ratio * close.size:
        return None
    error = np.where(close, 0.0, np.nan_to_num(np.abs(a - e), nan=np.inf))
    worst = np.unravel_index(int(np.argmax(error)), error.shape) if error.size else ()
    return (
        f"{what}: {bad} of {close.size} elements ({bad / close.size:.2%}) differ from the reference by more "
        f"than atol={atol} + rtol={rtol} * |reference| (allowed: {max_mismatched_ratio:.2%}); worst at index "
        f"{tuple(int(i) for i in worst)}: {float(a[worst]):.6g} vs reference {float(e[worst]):.6g}"
    )
