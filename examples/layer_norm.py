"""Layer norm in the eager style: shapes come from the arrays (T.const), the output from T.empty.

    python examples/layer_norm.py [--target auto] [--small]

Y = (X - mean) / sqrt(var + eps) * gamma + beta along each row. The kernel body is the jitted function
itself: `M, N = T.const("M, N")` are compile-time symbols taken from the arguments' shapes, and
`Y = T.empty(...)` is allocated by the call and returned. A call compiles once per distinct (M, N)
and Python parameters, then reuses the kernel. Each block normalizes `block_M` whole rows in float32,
whatever the storage dtype. Runs on any target (`import tilecraft.language as T`). Prints the relative
error against a float64 NumPy reference and the time; exits 1 when an error is too large.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from _util import rel_error, timed, to_device

import tilecraft
import tilecraft.language as T


# Usually written with `@tilecraft.jit` above the def; here main() applies it with the --target option.
def layer_norm(X, gamma, beta, eps: float = 1e-5, dtype: str = "float32", block_M: int = 8):
    M, N = T.const("M, N")  # bound from X's shape at each call; a new (M, N) compiles a new kernel
    X: T.Tensor((M, N), dtype)
    gamma: T.Tensor((N,), dtype)
    beta: T.Tensor((N,), dtype)
    Y = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        x = T.alloc_fragment((block_M, N), "float32")
        sq = T.alloc_fragment((block_M, N), "float32")
        mean = T.alloc_fragment((block_M,), "float32")
        rstd = T.alloc_fragment((block_M,), "float32")
        # Rows past M (the last block when M % block_M != 0) load as zero and are never stored.
        T.copy(X[bx * block_M, 0], x)
        T.reduce_sum(x, mean, dim=1)
        for i in T.Parallel(block_M):
            mean[i] = mean[i] / N
        # Two passes (mean, then the mean of squared deviations) are more accurate than E[x^2] - E[x]^2.
        for i, j in T.Parallel(block_M, N):
            sq[i, j] = (x[i, j] - mean[i]) * (x[i, j] - mean[i])
        T.reduce_sum(sq, rstd, dim=1)
        for i in T.Parallel(block_M):
            rstd[i] = T.rsqrt(rstd[i] / N + eps)
        for i, j in T.Parallel(block_M, N):
            x[i, j] = (x[i, j] - mean[i]) * rstd[i] * gamma[j] + beta[j]
        T.copy(x, Y[bx * block_M, 0])
    return Y


def reference(x, gamma, beta, eps: float) -> np.ndarray:
    x, gamma, beta = (a.astype(np.float64) for a in (x, gamma, beta))
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="auto", help="target kind or alias (auto, cpu, ...)")
    parser.add_argument("--small", action="store_true", help="small sizes (for tests)")
    args = parser.parse_args()
    M, N = (100, 96) if args.small else (8190, 1024)  # M is not a multiple of block_M
    eps = 1e-5
    norm = tilecraft.jit(layer_norm, target=args.target)

    rng = np.random.default_rng()
    ok = True
    # float16 input shows the same kernel body specialized to another storage dtype (a Python parameter).
    for dtype, np_dtype, tolerance in (("float32", np.float32, 1e-5), ("float16", np.float16, 2e-3)):
        # Mean and scale far from 0 and 1, so a kernel that skipped a step would be visibly wrong.
        x = (rng.standard_normal((M, N)) * 3.0 + 5.0).astype(np_dtype)
        gamma = rng.uniform(0.5, 1.5, N).astype(np_dtype)
        beta = rng.standard_normal(N).astype(np_dtype)
        start = time.perf_counter()
        # norm.compile(...) returns the Kernel that calls with these shapes use; here it also tells
        # where the inputs must live (the GPU for a GPU target).
        kernel = norm.compile(M=M, N=N, eps=eps, dtype=dtype)
        inputs = to_device(kernel, x, gamma, beta)
        y = kernel.to_host(norm(*inputs, eps, dtype))  # eager call: the compiled kernel is reused
        first_s = time.perf_counter() - start
        err = rel_error(y, reference(x, gamma, beta, eps))
        seconds = timed(kernel, norm, *inputs, eps, dtype)
        print(f"layer norm {M}x{N} {dtype} on {kernel.context.target}")
        print(f"  first call (compile + run) {first_s:.2f} s; rel. error vs NumPy float64: {err:.2e}")
        print(f"  time: {seconds * 1e3:.3f} ms ({x.nbytes * 2 / seconds / 1e9:.1f} GB/s read + written)")
        ok &= err < tolerance
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
