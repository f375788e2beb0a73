"""Debugging a kernel on the CPU: bounds checks, T.print, the IR after every pass, the generated C.

    python examples/debugging.py [--target cpu] [--small]

CPU-only (`from tilecraft.cpu import language as T`): the CPU target runs each block as one thread of
plain C, which makes it the place to debug a kernel before running it on an accelerator.

1. A kernel with an off-by-one read runs "fine" without checks (it reads past the array). Compiled
   with `pass_configs={tilecraft.PassConfigKey.BOUNDS_CHECK: True}`, the call raises an error naming
   the buffer, the kernel's file and line, and the source line. The fixed kernel passes the check and
   is compared with a float64 NumPy reference (time printed); the script exits 1 if it is wrong.
2. `T.print` prints a scalar or a tile from inside the kernel, prefixed with the block index.
3. `TILECRAFT_DUMP_IR=<dir>` writes the IR after each pass of the target's pipeline; here it is set
   for one compile with `tilecraft.settings.override` (from a shell: `TILECRAFT_DUMP_IR=/tmp/ir python ...`).
4. `kernel.get_kernel_source()` / `kernel.get_host_source()` return the generated C.
5. A barrier that only some threads reach is rejected when lowering, with the kernel line.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import tilecraft
from tilecraft import settings
from tilecraft.cpu import language as T
from tilecraft.errors import LoweringError, TilecraftError

CHECKED = {tilecraft.PassConfigKey.BOUNDS_CHECK: True}  # the same as {"tilecraft.bounds_check": True}


def pair_mean(n, block=64, fixed=True):
    """Y[i] = (X[i] + X[i + 1]) / 2, with X[n] taken as X[n - 1] when fixed, read past the end when not.

    A serial loop: the language guards T.Parallel loads of a tensor past its edge (they read zero), so the
    bug the checks catch here is one it does not guard."""

    @T.prim_func
    def pair_mean(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.serial(block):
                if bx * block + i < n:
                    if fixed:
                        Y[bx * block + i] = (X[bx * block + i] + X[T.min(bx * block + i + 1, n - 1)]) * 0.5
                    else:
                        Y[bx * block + i] = (X[bx * block + i] + X[bx * block + i + 1]) * 0.5  # X[n]!

    return pair_mean


def row_stats(m, n, block_M=4):
    """Row maxima of a small matrix, printing a tile and a value from block 0 along the way."""

    @T.prim_func
    def row_stats(X: T.Tensor((m, n), "float32"), out: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, block_M), threads=128) as bx:
            tile = T.alloc_fragment((block_M, n), "float32")
            row_max = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], tile)
            T.reduce_max(tile, row_max, dim=1)
            if bx == 0:  # one block is enough to look at; every block would print otherwise
                T.print(row_max, msg="row maxima of block 0")
                T.print(tile[0, n - 1], msg="last element of row 0")
            T.copy(row_max, out[bx * block_M])

    return row_stats


def per_thread(n=128):
    """TileLang-for-GPU style per-thread code runs on the CPU (as loops over the block's threads between
    barriers), but a barrier that only some threads reach has no such order: it is rejected."""

    @T.prim_func
    def per_thread(X: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n) as _:
            tx = T.get_thread_binding()
            s = T.alloc_shared((n,), "float32")
            if tx < n // 2:
                s[tx] = X[tx]
                T.sync_threads()
                X[tx] = s[n // 2 - 1 - tx]

    return per_thread


def flush_c_stdout() -> None:
    """T.print writes through C's stdio, which buffers when stdout is a pipe; flush it to keep order."""
    ctypes.CDLL(None).fflush(None)


def timed(fn, *args, repeat: int = 10) -> float:
    """Median seconds per call after one warm-up call (which also starts the worker threads)."""
    fn(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def rel_error(out, ref) -> float:
    return float(np.linalg.norm(np.asarray(out, np.float64) - ref) / np.linalg.norm(ref))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cpu", help="a CPU target (cpu, c, 'c -isa=avx2', auto)")
    parser.add_argument("--small", action="store_true", help="small sizes (for tests)")
    args = parser.parse_args()
    n = 1000 if args.small else 1_000_003
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    ok = True

    print("1. bounds checks")
    buggy = tilecraft.compile(pair_mean(n, fixed=False), target=args.target, pass_configs=CHECKED)
    try:
        buggy(x, np.empty_like(x))
        print("   the buggy kernel was not caught")
        ok = False
    except TilecraftError as err:  # OutOfBoundsError on the CPU target
        print(f"   {type(err).__name__}: {err}")
    fixed = tilecraft.compile(pair_mean(n, fixed=True), target=args.target, pass_configs=CHECKED)
    y = np.empty_like(x)
    fixed(x, y)
    x64 = x.astype(np.float64)
    ref = (x64 + np.append(x64[1:], x64[-1])) * 0.5
    err = rel_error(y, ref)
    print(f"   the fixed kernel passes the checks: rel. error vs NumPy float64 {err:.2e}")
    ok &= err < 1e-6
    checked_s = timed(fixed, x, y)
    print(f"   time with checks: {checked_s * 1e3:.3f} ms")

    print("2. T.print")
    m, cols = 6, 5
    stats = tilecraft.compile(row_stats(m, cols), target=args.target)
    xs = rng.standard_normal((m, cols)).astype(np.float32)
    sys.stdout.flush()
    maxima = np.empty(m, np.float32)
    stats(xs, maxima)
    flush_c_stdout()
    print(f"   NumPy says the row maxima of block 0 are {np.round(xs[:4].max(axis=1), 6).tolist()}")
    ok &= bool(np.array_equal(maxima, xs.max(axis=1)))

    print("3. TILECRAFT_DUMP_IR")
    with tempfile.TemporaryDirectory() as tmp:
        # The dump is written while lowering; a kernel found in the cache is not lowered again, so
        # disable the cache for this compile.
        with settings.override(TILECRAFT_DUMP_IR=tmp, TILECRAFT_DISABLE_CACHE=True):
            unchecked = tilecraft.compile(pair_mean(n, fixed=True), target=args.target)
        for path in sorted(Path(tmp).iterdir()):
            print(f"   {path.name:32} {len(path.read_text().splitlines()):4d} lines")
    # Checks cost time: every access tests its offset. Leave them off outside debugging.
    print(f"   the same kernel without checks: {timed(unchecked, x, y) * 1e3:.3f} ms")

    print("4. generated C: the device function of the unchecked kernel (the shared header is left out)")
    source = unchecked.get_kernel_source()
    body = source[source.index("static void pair_mean") :]
    print("   " + body[: body.index("\n}\n") + 2].replace("\n", "\n   "))

    print("5. a barrier some threads skip, on the CPU target")
    try:
        tilecraft.compile(per_thread(), target=args.target)
        ok = False
    except LoweringError as err:
        print("   LoweringError: " + str(err).replace("\n", "\n   "))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
