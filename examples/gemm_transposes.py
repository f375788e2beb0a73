"""GEMM with every transpose combination, on float16, bfloat16 and float32 inputs, at ragged sizes.

    python examples/gemm_transposes.py [--target auto] [--small]

C = op(A) @ op(B) with float32 accumulation and a float32 result, where op transposes the operand when
asked: a transposed A is stored (K, M), a transposed B is stored (N, K) (B stored (N, K) is the usual
layout of a linear layer's weight). M, N and K are not multiples of the tile sizes, so the edge tiles
exercise `T.copy`'s predicates: loads past an edge read zero and stores past it are skipped. Runs on
any target (`import tilecraft.language as T`). Prints the relative error against a float64 NumPy
reference and the time of each of the 12 kernels; exits 1 when an error is too large.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

import ml_dtypes
import numpy as np
from _util import rel_error, timed, to_device

import tilecraft
import tilecraft.language as T

NUMPY_DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}


def gemm(M, N, K, trans_A, trans_B, dtype, block_M=64, block_N=64, block_K=32, accum_dtype="float32"):
    """The kernel for one shape, transpose pair and input dtype (a PrimFunc)."""
    # Python values decide the shapes before parsing: each combination is its own kernel.
    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)
    A_tile = (block_K, block_M) if trans_A else (block_M, block_K)
    B_tile = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def main(A: T.Tensor(A_shape, dtype), B: T.Tensor(B_shape, dtype), C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared(A_tile, dtype)
            B_shared = T.alloc_shared(B_tile, dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                # A Python `if` on a Python value is resolved while parsing: no branch in the kernel.
                if trans_A:
                    T.copy(A[ko * block_K, by * block_M], A_shared)
                else:
                    T.copy(A[by * block_M, ko * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, ko * block_K], B_shared)
                else:
                    T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_A=trans_A, transpose_B=trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="auto", help="target kind or alias (auto, cpu, ...)")
    parser.add_argument("--small", action="store_true", help="small sizes (for tests)")
    args = parser.parse_args()
    M, N, K = (77, 45, 53) if args.small else (1021, 763, 517)

    rng = np.random.default_rng()
    ok = True
    print(f"C[{M}x{N}] = op(A) @ op(B), K={K}, float32 accumulation")
    for dtype, trans_A, trans_B in itertools.product(NUMPY_DTYPES, (False, True), (False, True)):
        np_dtype = NUMPY_DTYPES[dtype]
        a = rng.standard_normal((K, M) if trans_A else (M, K)).astype(np_dtype)
        b = rng.standard_normal((N, K) if trans_B else (K, N)).astype(np_dtype)
        # The reference uses the inputs as rounded to `dtype`, so the error measures the kernel alone.
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        ref = (a64.T if trans_A else a64) @ (b64.T if trans_B else b64)

        start = time.perf_counter()
        kernel = tilecraft.compile(gemm(M, N, K, trans_A, trans_B, dtype), out_idx=[-1], target=args.target)
        compile_s = time.perf_counter() - start
        inputs = to_device(kernel, a, b)
        c = kernel.to_host(kernel(*inputs))
        err = rel_error(c, ref)
        seconds = timed(kernel, kernel, *inputs)
        ops = f"{'A^T' if trans_A else 'A  '} @ {'B^T' if trans_B else 'B  '}"
        print(
            f"  {dtype:>8} {ops}: rel. error {err:.2e}, {seconds * 1e3:7.2f} ms "
            f"({2 * M * N * K / seconds / 1e9:5.1f} GFLOP/s), compiled in {compile_s:.2f} s"
        )
        ok &= err < 1e-5  # float32 accumulation of exactly representable products
    print(f"target: {kernel.context.target} (execution backend: {kernel.context.execution.name})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
