"""Dynamic shapes: one compiled kernel serves every number of rows (T.dynamic); scalar parameters.

    python examples/dynamic_shapes.py [--target auto] [--small]

A linear layer Y = alpha * X @ W^T + bias where the number of rows M (tokens, say) is a run-time
value: `M = T.dynamic("M")` makes M an argument of the compiled code, bound from X's shape at each
call, so calls with any M reuse the same binary. N and K stay compile-time constants, which lets the
backend pick tile shapes for them. `alpha` is a scalar parameter, passed as a plain Python float.
Runs on any target (`import tilecraft.language as T`). Prints, for several M, the relative error
against a float64 NumPy reference and the time; exits 1 when an error is too large.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ArgumentError


def linear_kernel(N, K, block_M=32, block_N=64, block_K=64, dtype="float32"):
    """The kernel for fixed N and K and any M (a PrimFunc)."""
    M = T.dynamic("M")  # a symbolic dim: the generated code takes it as an argument

    @T.prim_func
    def linear(
        X: T.Tensor((M, K), dtype),
        W: T.Tensor((N, K), dtype),  # stored (out_features, in_features), like a torch Linear weight
        bias: T.Tensor((N,), dtype),
        alpha: T.float32,  # a scalar parameter
        Y: T.Tensor((M, N), dtype),
    ):
        # The grid depends on M; tile shapes must not, so the edge tile is handled by T.copy's predicates.
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            X_shared = T.alloc_shared((block_M, block_K), dtype)
            W_shared = T.alloc_shared((block_N, block_K), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(X[by * block_M, ko * block_K], X_shared)
                T.copy(W[bx * block_N, ko * block_K], W_shared)
                T.gemm(X_shared, W_shared, acc, transpose_B=True)
            for i, j in T.Parallel(block_M, block_N):
                acc[i, j] = alpha * acc[i, j] + bias[bx * block_N + j]
            T.copy(acc, Y[by * block_M, bx * block_N])

    return linear


def rel_error(out, ref) -> float:
    return float(np.linalg.norm(np.asarray(out, np.float64) - ref) / np.linalg.norm(ref))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="auto", help="target kind or alias (auto, cpu, ...)")
    parser.add_argument("--small", action="store_true", help="small sizes (for tests)")
    args = parser.parse_args()
    N, K = (96, 80) if args.small else (768, 512)  # N is not a multiple of block_N
    rows = (1, 7, 33, 100) if args.small else (1, 7, 64, 333, 2048)

    start = time.perf_counter()
    # out_idx=[-1]: Y, the last parameter, is allocated by each call (its shape (M, N) follows X's M).
    kernel = tilecraft.compile(linear_kernel(N, K), out_idx=[-1], target=args.target)
    compile_s = time.perf_counter() - start
    print(f"linear N={N} K={K} on {kernel.context.target}: compiled once in {compile_s:.2f} s")
    # M is not a parameter of the kernel but an argument of its launch, bound from X's shape.
    print(f"  symbolic dims bound at each call: {', '.join(v.name for v in kernel.artifact.symbolic_dims)}")
    entry = [line for line in (kernel.get_host_source() or "").splitlines() if "_entry(" in line]
    if entry:  # the CPU target's host entry takes it after the tensors and scalars
        print(f"  host entry: {entry[0].rstrip(' {')}")

    rng = np.random.default_rng()
    w = rng.standard_normal((N, K)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    w_dev, bias_dev = kernel.to_device(w), kernel.to_device(bias)  # where the kernel runs (GPU or host)
    alpha = 0.5
    ok = True
    for m in rows:
        x = rng.standard_normal((m, K)).astype(np.float32)
        x_dev = kernel.to_device(x)
        start = time.perf_counter()
        y = kernel(x_dev, w_dev, bias_dev, alpha)  # inputs in parameter order; Y comes back (m, N)
        kernel.synchronize()
        seconds = time.perf_counter() - start  # no compile here: the same binary for every m
        y = kernel.to_host(y)
        ref = alpha * (x.astype(np.float64) @ w.T.astype(np.float64)) + bias
        err = rel_error(y, ref)
        print(f"  M={m:5d}: Y{y.shape}, rel. error {err:.2e}, first call {seconds * 1e3:.2f} ms")
        ok &= y.shape == (m, N) and err < 1e-5

    # Shapes are still checked on every call: static dims must match, and a symbolic dim must agree
    # across the parameters that use it.
    try:
        kernel(kernel.to_device(rng.standard_normal((4, K + 1)).astype(np.float32)), w_dev, bias_dev, alpha)
    except ArgumentError as err:
        print(f"  a wrong K is rejected before launch: {err}")
    else:
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
