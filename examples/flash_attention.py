"""Flash-attention forward (causal and non-causal): float16 Q, K, V with float32 accumulation.

    python examples/flash_attention.py [--target auto] [--small]

The kernel is TileLang's `example_mha_fwd_bshd` written with macros: each block owns `block_M` queries
of one head, walks the keys in tiles of `block_N` and keeps a running (online) softmax, so the full
(seq_len x seq_len) score matrix never exists. Runs on any target (`import tilecraft.language as T`).
Prints each variant's relative error against a float64 NumPy reference and its time; exits 1 when an
error is too large.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from _util import rel_error, timed, to_device

import tilecraft
import tilecraft.language as T

LOG2E = 1.44269504  # exp(x) == exp2(x * log2(e)); GPUs have an exp2 instruction


def flash_attention(batch, heads, seq_len, dim, is_causal, block_M=64, block_N=64, num_stages=1):
    """The kernel for one problem size (a PrimFunc); `tilecraft.compile` builds it for a target."""
    scale = (1.0 / dim) ** 0.5 * LOG2E
    shape = [batch, seq_len, heads, dim]
    dtype = "float16"
    accum_dtype = "float32"

    # Macros are inlined where they are called; plain Python values (is_causal, block sizes) are
    # evaluated while the kernel is parsed, so `if is_causal:` picks one of two kernels, not a branch.
    @T.macro
    def scores(K, Q_shared, K_shared, acc_s, k, bx, by, bz):
        T.copy(K[bz, k * block_N : (k + 1) * block_N, by, :], K_shared)
        if is_causal:
            # Start from 0 where the key may be attended to and -inf where it lies in the future.
            for i, j in T.Parallel(block_M, block_N):
                acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity(acc_s.dtype))
        else:
            T.clear(acc_s)
        T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def online_softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale, scores_sum, logsum):
        T.copy(scores_max, scores_max_prev)
        T.fill(scores_max, -T.infinity(accum_dtype))
        T.reduce_max(acc_s, scores_max, dim=1, clear=False)
        # How much the previous partial sums shrink now that the running maximum grew.
        for i in T.Parallel(block_M):
            scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
        for i, j in T.Parallel(block_M, block_N):
            acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
        T.reduce_sum(acc_s, scores_sum, dim=1)
        for i in T.Parallel(block_M):
            logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
        T.copy(acc_s, acc_s_cast)  # probabilities back to float16 for the second gemm

    @T.macro
    def accumulate(V, V_shared, acc_s_cast, acc_o, scores_scale, k, by, bz):
        for i, j in T.Parallel(block_M, dim):
            acc_o[i, j] *= scores_scale[i]
        T.copy(V[bz, k * block_N : (k + 1) * block_N, by, :], V_shared)
        T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

    @T.prim_func
    def main(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(shape, dtype),
        V: T.Tensor(shape, dtype),
        Output: T.Tensor(shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=128) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            # A causal block stops at the last key tile that any of its queries can see.
            loop_range = (
                T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                if is_causal
                else T.ceildiv(seq_len, block_N)
            )
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                scores(K, Q_shared, K_shared, acc_s, k, bx, by, bz)
                online_softmax(
                    acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale, scores_sum, logsum
                )
                accumulate(V, V_shared, acc_s_cast, acc_o, scores_scale, k, by, bz)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return main


def reference(q, k, v, is_causal: bool) -> np.ndarray:
    """softmax(Q K^T / sqrt(dim)) V in float64, laid out (batch, seq, heads, dim) like the kernel."""
    q, k, v = (x.astype(np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if is_causal:
        seq = s.shape[-1]
        s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="auto", help="target kind or alias (auto, cpu, ...)")
    parser.add_argument("--small", action="store_true", help="small sizes (for tests)")
    args = parser.parse_args()
    batch, heads, seq_len, dim = (1, 2, 128, 32) if args.small else (2, 8, 1024, 64)

    rng = np.random.default_rng()
    q, k, v = (rng.standard_normal((batch, seq_len, heads, dim)).astype(np.float16) for _ in range(3))
    ok = True
    for is_causal in (False, True):
        start = time.perf_counter()
        # out_idx=[3]: Output (parameter 3) is allocated by each call and returned.
        func = flash_attention(batch, heads, seq_len, dim, is_causal)
        kernel = tilecraft.compile(func, out_idx=[3], target=args.target)
        compile_s = time.perf_counter() - start
        inputs = to_device(kernel, q, k, v)
        out = kernel.to_host(kernel(*inputs))
        err = rel_error(out, reference(q, k, v, is_causal))
        seconds = timed(kernel, kernel, *inputs)
        # Two gemms of (seq x seq x dim) per head; a causal kernel skips about half of the work.
        flops = 4 * batch * heads * seq_len * seq_len * dim * (0.5 if is_causal else 1.0)
        name = "causal" if is_causal else "non-causal"
        print(f"flash attention ({name}) b={batch} h={heads} s={seq_len} d={dim} on {kernel.context.target}")
        print(f"  compiled in {compile_s:.2f} s; rel. error vs NumPy float64: {err:.2e}")
        print(f"  time: {seconds * 1e3:.2f} ms ({flops / seconds / 1e9:.1f} GFLOP/s)")
        ok &= err < 1e-2  # float16 inputs and output: about 1e-3 is expected
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
