"""Where the host time of one kernel call goes, on the GPU host: each component of a call of a tiny
CUDA kernel timed alone (drained batches, as benchmarks/cuda.py), then cProfile of the Python path.

python benchmarks/profile_launch.py
"""

from __future__ import annotations

import cProfile
import ctypes
import dataclasses
import pstats
import subprocess
import sys
import tempfile
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
    # the lambda keeps the argument arrays alive: the launch reads them through raw addresses
    return lambda keep=(params, pointers): launch(*args)


# cuLaunchKernel called from C in a loop (the driver's own cost, no Python at all), and a no-op with
# cuLaunchKernel's signature (the compiled launcher's cost without the driver).
_LOOP_C = r"""
#include <stdint.h>
#include <time.h>
typedef int (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                        void **, void **);
int tc_noop_launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned smem, void *stream, void **params, void **extra) {
    return 0;
}
double tc_launch_loop_us(void *address, void *function, unsigned bx, void *stream, void **params, int n) {
    launch_t launch = (launch_t)address;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) launch(function, 1, 1, 1, bx, 1, 1, 0, stream, params, 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / n;
}
"""


def _loop_library() -> ctypes.CDLL:
    tmp = Path(tempfile.mkdtemp(prefix="tc-launch-loop-"))
    (tmp / "loop.c").write_text(_LOOP_C)
    subprocess.run(
        ["cc", "-O2", "-shared", "-fPIC", str(tmp / "loop.c"), "-o", str(tmp / "loop.so")], check=True
    )
    lib = ctypes.CDLL(str(tmp / "loop.so"))
    lib.tc_launch_loop_us.restype = ctypes.c_double
    lib.tc_launch_loop_us.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
                                                              ctypes.c_int]  # fmt: skip
    return lib


def _driver_floor_us(lib: ctypes.CDLL, kernel, a, b, batch: int = 100, batches: int = 100) -> float:
    """cuLaunchKernel from C, batches of `batch` launches with the device drained between them (as
    _host_us_per_call); the median batch."""
    handle = kernel.loaded.handle
    params = (ctypes.c_uint64 * 2)(a.data_ptr(), b.data_ptr())
    pointers = (ctypes.c_void_p * 2)(ctypes.addressof(params), ctypes.addressof(params) + 8)
    address = ctypes.cast(handle.driver.launch_kernel, ctypes.c_void_p).value
    stream = torch.cuda.current_stream().cuda_stream
    samples = []
    for _ in range(batches):
        torch.cuda.synchronize()
        samples.append(lib.tc_launch_loop_us(address, handle.functions[0], 32, stream, pointers, batch))
    return sorted(samples)[len(samples) // 2]


def _plan_without_driver(lib: ctypes.CDLL, kernel, allocating: bool):
    """The kernel's compiled-launcher Plan with cuLaunchKernel replaced by a no-op: its own cost."""
    from tilecraft.execution.native.plan import build_plan
    from tilecraft.runtime.plan import LaunchPlan

    loaded = kernel.loaded
    launch = kernel._backend.native_launch(loaded)
    noop = ctypes.cast(lib.tc_noop_launch, ctypes.c_void_p).value
    miss = object()
    rules = LaunchPlan.build(loaded.built.artifact, (1,) if allocating else ())
    plan = build_plan(rules, dataclasses.replace(launch, address=noop), miss)

    def call(*args):
        if plan(*args) is miss:
            raise RuntimeError("the no-op plan declined the call")

    return call


def main(calls: int = 5000) -> None:
    a = torch.randn(32, device="cuda")
    b = torch.empty(32, device="cuda")
    kernels = {}
    for mode in ("compiled", "python"):
        with settings.override(TILECRAFT_LAUNCHER=mode):
            kernels[mode] = tilecraft.compile(tc_tiny.func(32), out_idx=[-1])
            kernels[mode](a)
    getter = torch._C._cuda_getCurrentRawStream
    lib = _loop_library()
    print(
        f"{'cuLaunchKernel from C, in a loop (the driver floor)':55s} "
        f"{_driver_floor_us(lib, kernels['compiled'], a, b):6.2f} us",
        flush=True,
    )
    noop_allocating = _plan_without_driver(lib, kernels["compiled"], True)
    noop_given = _plan_without_driver(lib, kernels["compiled"], False)
    parts = {
        "whole call, compiled launcher, output allocated": lambda: kernels["compiled"](a),
        "whole call, compiled launcher, output passed in": lambda: kernels["compiled"](a, b),
        "whole call, Python path, output allocated": lambda: kernels["python"](a),
        "whole call, Python path, output passed in": lambda: kernels["python"](a, b),
        "the compiled Plan alone, output passed in": lambda: kernels["compiled"]._plan(a, b),
        "cuLaunchKernel alone (ctypes, prebuilt arguments)": _raw_launch(kernels["compiled"], a, b),
        "the Plan with a no-op launch, output allocated": lambda: noop_allocating(a),
        "the Plan with a no-op launch, output passed in": lambda: noop_given(a, b),
        "torch.empty_like(a)": lambda: torch.empty_like(a),
        "a.data_ptr(); a.is_contiguous(); a.get_device(); a.shape; a.dtype": lambda: (
            a.data_ptr(),
            a.is_contiguous(),
            a.get_device(),
            a.shape,
            a.dtype,
        ),
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
