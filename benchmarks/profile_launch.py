"""Where the host time of one kernel call goes, on the GPU host: each component of a call of a tiny
CUDA kernel timed alone (drained batches, as benchmarks/cuda.py), then cProfile of the Python path.

python benchmarks/profile_launch.py
"""

from __future__ import annotations

import cProfile
import ctypes
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import tilecraft  # noqa: E402
from benchmarks.cuda import _host_us_per_call, tc_tiny  # noqa: E402
from tilecraft import settings  # noqa: E402


def _raw_launch(kernel, a, b):
    """cuLaunchKernel alone, through ctypes with prebuilt arguments (ctypes adds ~0.3-1 us)."""
    handle = kernel.loaded.handle
    driver = handle.driver
    params = (ctypes.c_uint64 * 2)(a.data_ptr(), b.data_ptr())
    pointers = (ctypes.c_void_p * 2)(ctypes.addressof(params), ctypes.addressof(params) + 8)
    info = kernel.artifact.kernels[0]
    block = tuple(info.block) + (1,) * (3 - len(info.block))
    stream = torch.cuda.current_stream().cuda_stream
    args = (handle.functions[0], 1, 1, 1, *block, info.dynamic_smem, stream, ctypes.addressof(pointers), None)
    launch = driver.launch_kernel
    return lambda: launch(*args)


def main(calls: int = 5000) -> None:
    a = torch.randn(32, device="cuda")
    b = torch.empty(32, device="cuda")
    kernels = {}
    for mode in ("compiled", "python"):
        with settings.override(TILECRAFT_LAUNCHER=mode):
            kernels[mode] = tilecraft.compile(tc_tiny.func(32), out_idx=[-1])
            kernels[mode](a)
    getter = torch._C._cuda_getCurrentRawStream
    parts = {
        "whole call, compiled launcher, output allocated": lambda: kernels["compiled"](a),
        "whole call, compiled launcher, output passed in": lambda: kernels["compiled"](a, b),
        "whole call, Python path, output allocated": lambda: kernels["python"](a),
        "whole call, Python path, output passed in": lambda: kernels["python"](a, b),
        "the compiled Plan alone, output passed in": lambda: kernels["compiled"]._plan(a, b),
        "cuLaunchKernel alone (ctypes, prebuilt arguments)": _raw_launch(kernels["compiled"], a, b),
        "torch.empty_like(a)": lambda: torch.empty_like(a),
        "torch._C._cuda_getCurrentRawStream(0)": lambda: getter(0),
        "torch's a + 1.0": lambda: a + 1.0,
    }
    for label, fn in parts.items():
        print(f"{label:55s} {_host_us_per_call(fn):6.2f} us", flush=True)
    with settings.override(TILECRAFT_LAUNCHER="python"):
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(calls):
            kernels["python"](a)
        profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
