"""Where the host time of one kernel call goes: cProfile over many calls of a tiny CUDA kernel.

python benchmarks/profile_launch.py
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from benchmarks.cuda import tc_tiny  # noqa: E402


def main(calls: int = 5000) -> None:
    a = torch.randn(32, device="cuda")
    b = torch.empty(32, device="cuda")
    kernel = tc_tiny()
    for label, fn in (("outputs allocated", lambda: kernel(a)), ("all arrays given", lambda: kernel(a, b))):
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        print(f"{label}: {(time.perf_counter() - start) / calls * 1e6:.2f} us per call")
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        kernel(a)
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
