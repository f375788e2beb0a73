"""Autotuning at scale: one GEMM over >= 64 configurations, with the `local` or the `ray` executor.

    python benchmarks/tune_scaleout.py --executor local            # CUDA GEMM 4096^3 fp16, 64 configs
    python benchmarks/tune_scaleout.py --executor ray --json out.json
    python benchmarks/tune_scaleout.py --target c --size 128       # the CPU target, small shapes

Reports: the tuning's wall time; the compile phase's wall time and the sum of the candidates' compile
times, whose ratio is the compile parallelism achieved; the timing phase's wall time; the best config;
for Ray, its start-up (ray.init, when this script starts it) and first-task latency. The issue's target
(docs/autotuning.md, "Executors"): wall <= 1.5 x (mean compile time x configs / cores + timing time).

Every compile is cold (a fresh, empty kernel cache for the run) and every candidate is checked against
a float32 NumPy/torch reference before it is timed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tilecraft.language as T  # noqa: E402
from tilecraft.autotuner import AutoTuner, Executor  # noqa: E402
from tilecraft.autotuner.executor import available_cores, default_executor  # noqa: E402
from tilecraft.backend.detection import detect_target  # noqa: E402


def gemm(M, N, K, dtype, block_M=64, block_N=64, block_K=32, threads=128, stages=2):
    @T.prim_func
    def matmul(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_l = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * block_M, bx * block_N])

    return matmul


class Factory:
    """gemm at fixed shapes (a picklable callable, so Ray can send it)."""

    def __init__(self, M: int, N: int, K: int, dtype: str) -> None:
        self.M, self.N, self.K, self.dtype = M, N, K, dtype

    def __call__(self, block_M=64, block_N=64, block_K=32, threads=128, stages=2):
        return gemm(self.M, self.N, self.K, self.dtype, block_M, block_N, block_K, threads, stages)


class Supply:
    """A and B for every candidate (fresh random numbers), as torch GPU tensors when `torch` is set."""

    def __init__(self, M: int, N: int, K: int, dtype: str, torch: bool) -> None:
        self.M, self.N, self.K, self.dtype, self.torch = M, N, K, dtype, torch

    def __call__(self, params):
        rng = np.random.default_rng()
        a = rng.standard_normal((self.M, self.K)).astype(self.dtype)
        b = rng.standard_normal((self.K, self.N)).astype(self.dtype)
        if self.torch:
            import torch

            return [torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()]
        return [a, b]


def reference(a, b):
    if hasattr(a, "float"):  # torch
        return (a.float() @ b.float()).to(a.dtype)
    return (a.astype(np.float32) @ b.astype(np.float32)).astype(a.dtype)


def configs(gpu: bool, count: int) -> list[dict]:
    if gpu:
        space = itertools.product((64, 128, 256), (64, 128, 256), (32, 64), (128, 256), (2, 3))
    else:
        space = itertools.product((16, 32, 64), (16, 32, 64), (16, 32), (64, 128), (1, 2))
    names = ("block_M", "block_N", "block_K", "threads", "stages")
    out = [dict(zip(names, c)) for c in space]
    if count > len(out):
        raise SystemExit(f"--configs {count}: this space has {len(out)}")
    return out[:count]


def on_host(target) -> bool:
    """Whether `target` is the CPU ("cuda ..." starts with "c" too, so compare the kind)."""
    return str(target).split()[0] in ("c", "cpu")


class Timed(Executor):
    """Wraps an executor and times its compile and timing phases."""

    def __init__(self, inner: Executor) -> None:
        self.inner, self.name = inner, inner.name
        self.compile_wall = self.compile_sum = self.bench_wall = 0.0
        self.compile_times: list[float] = []

    def compile(self, jobs, ctx, timeout):
        start = time.perf_counter()
        for outcome in self.inner.compile(jobs, ctx, timeout):
            self.compile_times.append(outcome.seconds)
            yield outcome
        self.compile_wall = time.perf_counter() - start

    def benchmark(self, job, ctx, measure):
        return self.inner.benchmark(job, ctx, measure)

    def benchmark_all(self, jobs, ctx, measurement):
        start = time.perf_counter()
        yield from self.inner.benchmark_all(jobs, ctx, measurement)
        self.bench_wall = time.perf_counter() - start

    def close(self):
        self.inner.close()


def run(args: argparse.Namespace) -> dict:
    gpu = not on_host(args.target)
    dtype = args.dtype or ("float16" if gpu else "float32")
    n = args.size
    space = configs(gpu, args.configs)
    start = time.perf_counter()
    inner = default_executor(args.workers, args.verbose, args.executor)
    made = time.perf_counter() - start
    executor = Timed(inner)
    tuner = (
        AutoTuner.from_kernel(Factory(n, n, n, dtype), space)
        .set_compile_args(out_idx=[-1], target=args.target, verbose=args.verbose)
        .set_profile_args(supply_prog=Supply(n, n, n, dtype, gpu), ref_prog=reference, rtol=2e-2, atol=2e-2)
    )
    start = time.perf_counter()
    try:
        result = tuner.run(warmup=args.warmup, rep=args.rep, timeout=args.timeout, executor=executor, retune=True)
    finally:
        executor.close()
    wall = time.perf_counter() - start
    return report(args, result, executor, wall, made, dtype)


def report(args, result, executor: Timed, wall: float, made: float, dtype: str) -> dict:
    cores = available_cores()
    times = [t for t in executor.compile_times if t > 0]
    mean_compile = sum(times) / len(times) if times else 0.0
    bound = 1.5 * (mean_compile * len(result.candidates) / cores + executor.bench_wall)
    inner = executor.inner
    return {
        "executor": args.executor, "target": str(args.target), "dtype": dtype, "size": args.size,
        "configs": len(result.candidates), "cores": cores, "wall_s": round(wall, 3),
        "compile_wall_s": round(executor.compile_wall, 3), "compile_sum_s": round(sum(times), 3),
        "compile_parallelism": round(sum(times) / executor.compile_wall, 2) if executor.compile_wall else None,
        "mean_compile_s": round(mean_compile, 3), "timing_wall_s": round(executor.bench_wall, 3),
        "target_wall_s": round(bound, 3), "target_met": wall <= bound,
        "statuses": dict(Counter(c.status for c in result.candidates)),
        "best_config": result.config, "best_ms": result.latency,
        "executor_setup_s": round(made, 3),
        "ray_startup_s": getattr(inner, "startup_seconds", None),
        "ray_first_task_s": getattr(inner, "first_task_seconds", None),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", choices=("local", "ray"), default="local")
    parser.add_argument("--target", default="auto", help="tilecraft target (default: auto; 'c' for the CPU)")
    parser.add_argument("--size", type=int, default=None, help="M = N = K (default 4096 on a GPU, 128 on the CPU)")
    parser.add_argument("--dtype", default=None, help="default float16 on a GPU, float32 on the CPU")
    parser.add_argument("--configs", type=int, default=64, help="how many configurations (default 64)")
    parser.add_argument("--workers", type=int, default=None, help="local compile processes (default: one per core)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rep", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH ('-': stdout)")
    args = parser.parse_args()
    if args.target == "auto":
        args.target = str(detect_target())
    if args.size is None:
        args.size = 128 if on_host(args.target) else 4096
    with tempfile.TemporaryDirectory(prefix="tune-scaleout-cache-") as cache:
        os.environ["TILECRAFT_CACHE_DIR"] = cache  # cold compiles; workers inherit it
        figures = run(args)
    for name, value in figures.items():
        print(f"{name:>20}: {value}")
    if args.json:
        text = json.dumps(figures, indent=2, default=str)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
