"""Helpers the examples share: moving arrays to where a kernel runs, timing, relative error."""

from __future__ import annotations

import time

import numpy as np


def to_device(kernel, *arrays):
    """Copies of numpy arrays where `kernel` reads them (the GPU for a GPU target, as is on the CPU)."""
    moved = tuple(kernel.to_device(a) for a in arrays)
    return moved[0] if len(moved) == 1 else moved


def timed(kernel, fn, *args, repeat: int = 5, **kwargs) -> float:
    """Median seconds per call after one warm-up call; waits for asynchronous (GPU) launches."""
    fn(*args, **kwargs)
    kernel.synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args, **kwargs)
        kernel.synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def rel_error(out, ref) -> float:
    return float(np.linalg.norm(np.asarray(out, np.float64) - ref) / np.linalg.norm(ref))
