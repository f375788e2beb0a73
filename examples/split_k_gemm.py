"""Split-K GEMM: blocks that share an output tile add their partial sums with T.atomic_add.

    python examples/split_k_gemm.py [--target auto] [--small]

C += A @ B for float16 A and B and a float32 C, when M and N are small and K is long: a plain tiling
would give few blocks, so the grid gets a third dim that cuts K into `split_k` slices. Each block
computes one output tile over its slice and adds it into C atomically, because `split_k` blocks (run
in parallel) update the same elements. C starts from random values here to show that the kernel
accumulates into it. Runs on any target (`import tilecraft.language as T`). Prints the relative error
against a float64 NumPy reference and the time for a few `split_k` values; exits 1 when an error is
too large.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from _util import rel_error, timed, to_device

import tilecraft
import tilecraft.language as T


def split_k_gemm(M, N, K, split_k, block_M=64, block_N=64, block_K=32, dtype="float16"):
    """The kernel for one shape and split (a PrimFunc)."""
    if K % (split_k * block_K):
        raise ValueError(f"K={K} must be a multiple of split_k * block_K = {split_k * block_K}")
    k_per_split = K // split_k

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=128) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            # Block (bx, by, bz) covers K from bz * k_per_split to (bz + 1) * k_per_split.
            for ko in T.Pipelined(k_per_split // block_K, num_stages=2):
                T.copy(A[by * block_M, bz * k_per_split + ko * block_K], A_shared)
                T.copy(B[bz * k_per_split + ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            # Element-wise atomic C[...] += C_local[...] over the tile; elements past M or N are skipped.
            T.atomic_add(C[by * block_M, bx * block_N], C_local)

    return main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="auto", help="target kind or alias (auto, cpu, ...)")
    parser.add_argument("--small", action="store_true", help="small sizes (for tests)")
    args = parser.parse_args()
    M, N, K = (72, 40, 512) if args.small else (250, 190, 8192)  # M and N are ragged on purpose

    rng = np.random.default_rng()
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    ref = c0.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    ok = True
    print(f"C[{M}x{N}] += A[{M}x{K}] @ B[{K}x{N}], float16 inputs, float32 accumulation")
    for split_k in (1, 4, 8):
        start = time.perf_counter()
        kernel = tilecraft.compile(split_k_gemm(M, N, K, split_k), target=args.target)
        compile_s = time.perf_counter() - start
        a_dev, b_dev, c_dev = to_device(kernel, a, b, c0.copy())
        kernel(a_dev, b_dev, c_dev)  # no out_idx: C is an input and an output, updated in place
        err = rel_error(kernel.to_host(c_dev), ref)
        # Each timed call adds A @ B into C once more; only the time matters here.
        seconds = timed(kernel, kernel, a_dev, b_dev, c_dev)
        blocks = -(-M // 64) * -(-N // 64) * split_k
        print(
            f"  split_k={split_k} ({blocks:3d} blocks): rel. error {err:.2e}, {seconds * 1e3:.2f} ms "
            f"({2 * M * N * K / seconds / 1e9:.1f} GFLOP/s), compiled in {compile_s:.2f} s"
        )
        ok &= err < 1e-5
    print(f"target: {kernel.context.target} (execution backend: {kernel.context.execution.name})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
