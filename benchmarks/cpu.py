"""tilecraft's CPU backend against NumPy, side by side in one process.

    python benchmarks/cpu.py            # both environments: as set, and OPENBLAS_* unset
    python benchmarks/cpu.py --child    # one run in the current environment
    python benchmarks/cpu.py --json benchmarks/results/cpu_numpy.json   # also: the second run's figures

The JSON is a workload of the performance page (benchmarks/report.py, which then rewrites the page).

The development and CI machines set OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which slow NumPy's BLAS;
OpenBLAS reads them when it loads, so each environment runs in its own process. Every result is
checked against NumPy before it is timed; inputs are fresh random data, never zeros.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tilecraft  # noqa: E402
import tilecraft.language as T  # noqa: E402

OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def gemm_kernel(n: int, block_m: int = 96, block_n: int = 128, block_k: int = 128):
    @T.prim_func
    def gemm(A: T.Tensor((n, n), "float32"), B: T.Tensor((n, n), "float32"), C: T.Tensor((n, n), "float32")):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(n, block_m), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_m, block_k), "float32")
            B_s = T.alloc_shared((block_k, block_n), "float32")
            C_l = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(n, block_k), num_stages=2):
                T.copy(A[by * block_m, k * block_k], A_s)
                T.copy(B[k * block_k, bx * block_n], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * block_m, bx * block_n])

    return gemm


def add_kernel(n: int, block: int = 4096):
    @T.prim_func
    def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return add


def softmax_kernel(m: int, n: int, block_m: int = 4):
    @T.prim_func
    def softmax(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            x = T.alloc_fragment((block_m, n), "float32")
            mx = T.alloc_fragment((block_m,), "float32")
            sm = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m, 0], x)
            T.reduce_max(x, mx, dim=1)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = T.exp(x[i, j] - mx[i])
            T.reduce_sum(x, sm, dim=1)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = x[i, j] / sm[i]
            T.copy(x, Y[bx * block_m, 0])

    return softmax


# OpenBLAS's worker threads keep spinning for a while after a call (its THREAD_TIMEOUT, 2^28 cycles by
# default), holding cores that the next kernel's threads need: on the 2-core machine a 512^3 tilecraft
# GEMM timed right after the correctness check's NumPy matmul took 5.9 ms, and 2.4 ms half a second later.
# Every timed batch starts after this pause, on both sides, so neither is timed beside the other's idle
# spinning threads.
SETTLE_S = 0.3


def median_time(fn, repeat: int) -> float:
    time.sleep(SETTLE_S)
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def numpy_softmax(x, out):
    np.subtract(x, x.max(axis=1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)


def rel_error(out, ref) -> float:
    return float(np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref))


def check(name: str, out, ref, tol: float) -> None:
    err = rel_error(out, ref)
    if not err <= tol:
        raise SystemExit(f"{name}: relative error {err:.2e} exceeds {tol:.0e}; not timing a wrong result")


def bench_gemm(rng, n: int) -> tuple[str, float, float, str]:
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    c = np.full((n, n), np.nan, np.float32)
    kernel = tilecraft.compile(gemm_kernel(n), target="cpu")
    kernel(a, b, c)
    check(f"gemm {n}", c, a.astype(np.float64) @ b, 1e-5)
    repeat = 20 if n <= 1024 else 5
    ours = median_time(lambda: kernel(a, b, c), repeat)
    theirs = median_time(lambda: np.matmul(a, b, out=c), repeat)
    flops = 2 * n**3
    return f"GEMM f32 {n}", ours, theirs, f"{flops / ours / 1e9:.1f} vs {flops / theirs / 1e9:.1f} GFLOP/s"


def bench_add(rng, n: int = 1 << 24) -> tuple[str, float, float, str]:
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    c = np.full(n, np.nan, np.float32)
    kernel = tilecraft.compile(add_kernel(n), target="cpu")
    kernel(a, b, c)
    check("add", c, a.astype(np.float64) + b, 1e-7)
    ours = median_time(lambda: kernel(a, b, c), 20)
    theirs = median_time(lambda: np.add(a, b, out=c), 20)
    moved = 3 * 4 * n
    return (
        "add f32, 16M elements",
        ours,
        theirs,
        f"{moved / ours / 1e9:.1f} vs {moved / theirs / 1e9:.1f} GB/s",
    )


def bench_softmax(rng, m: int = 4096, n: int = 1024) -> tuple[str, float, float, str]:
    x = rng.standard_normal((m, n), dtype=np.float32)
    y = np.full((m, n), np.nan, np.float32)
    kernel = tilecraft.compile(softmax_kernel(m, n), target="cpu")
    kernel(x, y)
    ref = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    check("softmax", y, ref / ref.sum(axis=1, keepdims=True), 1e-6)
    ours = median_time(lambda: kernel(x, y), 20)
    theirs = median_time(lambda: numpy_softmax(x, y), 20)
    return f"row softmax f32 {m}x{n}", ours, theirs, ""


def numpy_blas() -> str:
    """NumPy's version and the BLAS it was built with, as far as it says."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"NumPy {np.__version__} ({blas['name']} {blas['version']})"
    except Exception:  # noqa: BLE001 - older NumPy has no mode="dicts"; the version alone then
        return f"NumPy {np.__version__}"


def write_json(path: str, rows: list[tuple[str, float, float, str]], command: str) -> None:
    """The rows as benchmarks/report.py's workload `cpu-numpy`: one record each, times in ms."""
    from tilecraft.execution.cc.toolchain import compiler
    from tilecraft.runtime.devices import host_device

    cc = compiler()
    threads = "OpenMP" if cc.openmp else "no OpenMP"
    device = f"{os.cpu_count()} cores of {host_device().name}, {cc.version}, {threads}, {numpy_blas()}"
    date = datetime.date.today().isoformat()
    records = []
    for name, ours, theirs, _ in rows:
        record = dict(date=date, device=device, command=command, case=name, tilecraft=round(ours * 1e3, 3),
                      peer=round(theirs * 1e3, 3), peer_name="NumPy", unit="ms")  # fmt: skip
        if name.startswith("GEMM"):
            record.update(series="GEMM f32", size=int(name.rsplit(" ", 1)[1]))
        records.append(record)
    workload = dict(
        workload="cpu-numpy", section="cpu", title="CPU backend against NumPy (float32)",
        about=("The CPU target (C through the system compiler, blocks on OpenMP threads) against NumPy: medians "
               "of 5 to 20 runs, each result checked against NumPy before it is timed."),
        source=f"`{command}`, the run with OPENBLAS_* unset", records=records,
    )  # fmt: skip
    Path(path).write_text(json.dumps(workload, indent=1) + "\n")
    print(f"wrote {path}")


def child(json_path: str | None = None, command: str = "") -> None:
    rng = np.random.default_rng(0)
    env = ", ".join(f"{v}={os.environ.get(v, '(unset)')}" for v in OPENBLAS_VARS)
    print(f"environment: {env}")
    print(f"{'benchmark':<27}{'tilecraft ms':>14}{'numpy ms':>12}{'ratio':>8}  detail")
    rows = [bench_gemm(rng, n) for n in (512, 1024, 2048)] + [bench_add(rng), bench_softmax(rng)]
    for name, ours, theirs, detail in rows:
        print(f"{name:<27}{ours * 1e3:>14.3f}{theirs * 1e3:>12.3f}{theirs / ours:>7.2f}x  {detail}")
    print("ratio = numpy time / tilecraft time (above 1: tilecraft is faster)")
    if json_path:
        write_json(json_path, rows, command)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true", help="run once in the current environment")
    parser.add_argument(
        "--json", help="write the figures of the run with OPENBLAS_* unset here (report.py's format)"
    )
    parser.add_argument("--command", default="python benchmarks/cpu.py", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.json, args.command)
        return
    unset = {k: v for k, v in os.environ.items() if k not in OPENBLAS_VARS}
    for label, env in (("environment as set", dict(os.environ)), ("OPENBLAS_* unset", unset)):
        print(f"== {label}", flush=True)
        extra = ["--json", args.json, "--command", " ".join(["python benchmarks/cpu.py", *sys.argv[1:]])] if (
            args.json and env is unset) else []  # fmt: skip
        subprocess.run([sys.executable, __file__, "--child", *extra], env=env, check=True)


if __name__ == "__main__":
    main()
