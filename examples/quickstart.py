"""tilecraft quick start: a GEMM and a row softmax on the auto-detected target.

    python examples/quickstart.py

Prints the target, each kernel's relative error against a float64 NumPy reference, and its time.
"""

from __future__ import annotations

import time

import numpy as np

import tilecraft
import tilecraft.language as T


@tilecraft.jit(out_idx=[-1])
def matmul(M, N, K, block_M=64, block_N=64, block_K=32, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


@tilecraft.jit
def softmax(X, block_M: int = 8):
    M, N = T.const("M, N")
    X: T.Tensor((M, N), "float32")
    Y = T.empty((M, N), "float32")
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        x = T.alloc_fragment((block_M, N), "float32")
        row_max = T.alloc_fragment((block_M,), "float32")
        row_sum = T.alloc_fragment((block_M,), "float32")
        T.copy(X[bx * block_M, 0], x)
        T.reduce_max(x, row_max, dim=1)
        for i, j in T.Parallel(block_M, N):
            x[i, j] = T.exp(x[i, j] - row_max[i])
        T.reduce_sum(x, row_sum, dim=1)
        for i, j in T.Parallel(block_M, N):
            x[i, j] = x[i, j] / row_sum[i]
        T.copy(x, Y[bx * block_M, 0])
    return Y


def rel_error(out, ref) -> float:
    return float(np.linalg.norm(np.asarray(out, np.float64) - ref) / np.linalg.norm(ref))


def timed(kernel, fn, *args, repeat: int = 10) -> float:
    """Seconds per call; launches may be asynchronous (GPUs), so wait for them before reading the clock."""
    fn(*args)
    kernel.synchronize()
    start = time.perf_counter()
    for _ in range(repeat):
        fn(*args)
    kernel.synchronize()
    return (time.perf_counter() - start) / repeat


def main() -> None:
    rng = np.random.default_rng(0)
    m, n, k = 1000, 1000, 1000
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    start = time.perf_counter()
    kernel = matmul(m, n, k)
    print(f"target: {kernel.context.target} (execution backend: {kernel.context.execution.name})")
    print(f"gemm {m}x{n}x{k}: compiled in {time.perf_counter() - start:.2f} s")
    # Inputs go where the kernel runs (a copy to the GPU on a GPU target; the same arrays on the CPU).
    a_dev, b_dev = kernel.to_device(a), kernel.to_device(b)
    c = kernel.to_host(kernel(a_dev, b_dev))
    seconds = timed(kernel, kernel, a_dev, b_dev)
    print(f"  rel. error vs NumPy float64: {rel_error(c, a.astype(np.float64) @ b):.2e}")
    print(f"  time: {seconds * 1e3:.2f} ms ({2 * m * n * k / seconds / 1e9:.1f} GFLOP/s)")

    x = rng.standard_normal((4096, 512), dtype=np.float32)
    x_dev = kernel.to_device(x)
    y = kernel.to_host(softmax(x_dev))
    ref = np.exp(x - x.max(axis=1, keepdims=True))
    ref = ref / ref.sum(axis=1, keepdims=True)
    seconds = timed(kernel, softmax, x_dev)
    print("softmax 4096x512:")
    print(f"  rel. error vs NumPy float64: {rel_error(y, ref):.2e}")
    print(f"  time: {seconds * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
