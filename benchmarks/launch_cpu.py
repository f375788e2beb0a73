"""Host time per call of a tiny CPU (`c` target) kernel: the Python launch path against the compiled
launcher, with the output allocated and passed in, for numpy arrays and torch CPU tensors.

    python benchmarks/launch_cpu.py [--json out.json]

Each figure is the median, over alternating rounds (python, compiled, python, ...), of the per-call
mean of a batch of calls; the kernel itself (100 float32 multiplies, one block, no OpenMP region)
runs in every call and is measured alone through its packed entry ("kernel alone").
Also: the compiled launcher's build time (a fresh cache) and its load time in a warm process.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import tilecraft  # noqa: E402
import tilecraft.language as T  # noqa: E402
from tilecraft import settings  # noqa: E402

N = 100


def tiny():
    n = T.dynamic("n")

    @T.prim_func
    def scale(X: T.Tensor((n,), "float32"), alpha: T.float32, Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=1) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    Y[bx * 128 + i] = X[bx * 128 + i] * alpha

    return scale


def per_call_us(fn, batch: int = 2000) -> float:
    start = time.perf_counter()
    for _ in range(batch):
        fn()
    return (time.perf_counter() - start) / batch * 1e6


def side_by_side(fns: dict, rounds: int = 7) -> dict:
    samples: dict = {name: [] for name in fns}
    for fn in fns.values():
        per_call_us(fn, 500)  # warm
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(per_call_us(fn))
    return {name: statistics.median(s) for name, s in samples.items()}


def kernel_alone_us(kernel, x, y) -> float:
    """The kernel's own time: its packed entry called through ctypes (which adds about 1 us itself)."""
    lib = kernel.loaded.handle[0]
    packed = getattr(lib, f"{kernel.artifact.function_name}_packed")
    packed.argtypes, packed.restype = [ctypes.c_void_p], ctypes.c_int32
    values = [ctypes.c_void_p(x.ctypes.data), ctypes.c_float(2.0), ctypes.c_void_p(y.ctypes.data), ctypes.c_int32(N)]
    pointers = (ctypes.c_void_p * 4)(*(ctypes.addressof(v) for v in values))
    assert packed(pointers) == 0
    np.testing.assert_allclose(y, x * 2.0, rtol=1e-6)
    return min(per_call_us(lambda: packed(pointers), 5000) for _ in range(3))


def build_and_load_ms() -> dict:
    code = ("import time; from tilecraft.execution import native, cache; t = time.perf_counter(); "
            "assert native.launcher_module() is not None; print((time.perf_counter() - t) * 1e3)")  # fmt: skip
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "TILECRAFT_CACHE_DIR": cache, "TILECRAFT_LAUNCHER": "compiled",
               "PYTHONPATH": str(Path(__file__).resolve().parents[1])}  # fmt: skip
        run = lambda: float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,  # noqa: E731
                                           text=True).stdout)  # fmt: skip
        cold = run()
        warm = statistics.median(run() for _ in range(3))
    return {"cold_build_and_load_ms": cold, "warm_load_ms": warm}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    try:
        import torch  # before the kernels' first calls, as a torch program has it
    except ImportError:
        torch = None
    func = tiny()
    kernels = {}
    for mode in ("python", "compiled"):
        with settings.override(TILECRAFT_LAUNCHER=mode):
            kernels[mode] = tilecraft.compile(func, out_idx=[-1], target="c")
            kernels[mode]._plan = kernels[mode]._native_plan()
    assert kernels["compiled"]._plan, "the compiled launcher is not available here"
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    arrays = {"numpy": (x, np.empty_like(x))}
    if torch is not None:
        arrays["torch"] = (torch.from_numpy(x.copy()), torch.empty(N))
    results: dict = {}
    for library, (a, out) in arrays.items():
        for k in kernels.values():
            np.testing.assert_allclose(np.asarray(k(a, 2.0)), x * 2.0, rtol=1e-6)
        for form, call in (("allocated", lambda k, a=a: k(a, 2.0)), ("given", lambda k, a=a, o=out: k(a, 2.0, o))):
            times = side_by_side({mode: (lambda k=k, call=call: call(k)) for mode, k in kernels.items()})
            results[f"{library}_{form}"] = times
            print(f"{library:5s} output {form:9s}: python {times['python']:6.2f} us   compiled "
                  f"{times['compiled']:6.2f} us   ({times['python'] / times['compiled']:.1f}x)", flush=True)
    results["kernel_alone_us"] = kernel_alone_us(kernels["python"], x, np.empty_like(x))
    print(f"kernel alone (its packed entry through ctypes): {results['kernel_alone_us']:.2f} us")
    results.update(build_and_load_ms())
    print(f"launcher build + load in a fresh cache: {results['cold_build_and_load_ms']:.0f} ms; "
          f"load in a warm process (imports excluded): {results['warm_load_ms']:.1f} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
