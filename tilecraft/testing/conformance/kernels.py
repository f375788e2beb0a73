"""Kernels of the usual TileLang shapes, written as a TileLang user would, for reuse across tests.

Each factory takes the problem and tile sizes as Python values (evaluated while parsing) and returns a
PrimFunc. `KERNELS` maps a name to a factory with small default sizes; conformance tests can call the
factories with their own sizes.
"""

import tilecraft.language as T
from tilecraft.testing.conformance.online_softmax import (
    attention_tiles,
    finish_rows,
    key_tiles,
    rescale_scores,
    start_rows,
)


def elementwise_add(n: int = 1000, block: int = 256, dtype: str = "float32"):
    """C = A + B over a length that is not a multiple of the tile; the tail is guarded with `if`."""

    @T.prim_func
    def elementwise_add(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return elementwise_add


def softmax(m: int = 256, n: int = 128, block_m: int = 16, dtype: str = "float16"):
    """Y = softmax(X) along rows, computed in float32."""

    @T.prim_func
    def softmax(X: T.Tensor((m, n), dtype), Y: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            x = T.alloc_fragment((block_m, n), "float32")
            row_max = T.alloc_fragment((block_m,), "float32")
            row_sum = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = T.exp(x[i, j] - row_max[i])
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_m, 0])

    return softmax


def rms_norm(m: int = 256, n: int = 128, block_m: int = 8, eps: float = 1e-6, dtype: str = "float16"):
    """Y = X / sqrt(mean(X^2) + eps) * W along rows."""

    @T.prim_func
    def rms_norm(X: T.Tensor((m, n), dtype), W: T.Tensor((n,), dtype), Y: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            x = T.alloc_fragment((block_m, n), "float32")
            sq = T.alloc_fragment((block_m, n), "float32")
            ss = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m, 0], x)
            for i, j in T.Parallel(block_m, n):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, ss, dim=1)
            for i in T.Parallel(block_m):
                ss[i] = T.rsqrt(ss[i] / n + eps)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = x[i, j] * ss[i] * W[j]
            T.copy(x, Y[bx * block_m, 0])

    return rms_norm


def layer_norm(m: int = 256, n: int = 128, block_m: int = 8, eps: float = 1e-5, dtype: str = "float32"):
    """Y = (X - mean) / sqrt(var + eps) * gamma + beta along rows."""

    @T.prim_func
    def layer_norm(
        X: T.Tensor((m, n), dtype),
        gamma: T.Tensor((n,), dtype),
        beta: T.Tensor((n,), dtype),
        Y: T.Tensor((m, n), dtype),
    ):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            x = T.alloc_fragment((block_m, n), "float32")
            centered = T.alloc_fragment((block_m, n), "float32")
            mean = T.alloc_fragment((block_m,), "float32")
            var = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m, 0], x)
            T.reduce_sum(x, mean, dim=1)
            for i in T.Parallel(block_m):
                mean[i] = mean[i] / n
            for i, j in T.Parallel(block_m, n):
                centered[i, j] = (x[i, j] - mean[i]) * (x[i, j] - mean[i])
            T.reduce_sum(centered, var, dim=1)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = (x[i, j] - mean[i]) * T.rsqrt(var[i] / n + eps) * gamma[j] + beta[j]
            T.copy(x, Y[bx * block_m, 0])

    return layer_norm


def gemm(
    m: int = 256,
    n: int = 256,
    k: int = 128,
    block_m: int = 64,
    block_n: int = 64,
    block_k: int = 32,
    transpose_a: bool = False,
    transpose_b: bool = False,
    dtype: str = "float16",
    accum_dtype: str = "float32",
    num_stages: int = 2,
    out_dtype: str | None = None,
):
    """C = op(A) @ op(B); op transposes where asked (A is stored (K, M), B is stored (N, K)). C has
    `out_dtype` (default: the accumulator's)."""
    out_dtype = out_dtype or accum_dtype
    a_shape = (k, m) if transpose_a else (m, k)
    b_shape = (n, k) if transpose_b else (k, n)
    a_tile = (block_k, block_m) if transpose_a else (block_m, block_k)
    b_tile = (block_n, block_k) if transpose_b else (block_k, block_n)

    @T.prim_func
    def gemm(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((m, n), out_dtype)):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=128) as (bx, by):
            A_shared = T.alloc_shared(a_tile, dtype)
            B_shared = T.alloc_shared(b_tile, dtype)
            C_local = T.alloc_fragment((block_m, block_n), accum_dtype)
            T.use_swizzle(panel_size=8)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=num_stages):
                if transpose_a:
                    T.copy(A[ko * block_k, by * block_m], A_shared)
                else:
                    T.copy(A[by * block_m, ko * block_k], A_shared)
                if transpose_b:
                    T.copy(B[bx * block_n, ko * block_k], B_shared)
                else:
                    T.copy(B[ko * block_k, bx * block_n], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_A=transpose_a, transpose_B=transpose_b)
            T.copy(C_local, C[by * block_m, bx * block_n])

    return gemm


def batched_gemm(
    batch: int = 4,
    m: int = 128,
    n: int = 128,
    k: int = 64,
    block_m: int = 64,
    block_n: int = 64,
    block_k: int = 32,
    dtype: str = "float16",
):
    """C[b] = A[b] @ B[b] on 3-D tensors; the batch index is a leading unit dim of each tile copy."""

    @T.prim_func
    def batched_gemm(
        A: T.Tensor((batch, m, k), dtype),
        B: T.Tensor((batch, k, n), dtype),
        C: T.Tensor((batch, m, n), dtype),
    ):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), batch, threads=128) as (bx, by, bz):
            A_shared = T.alloc_shared((block_m, block_k), dtype)
            B_shared = T.alloc_shared((block_k, block_n), dtype)
            C_local = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                T.copy(A[bz, by * block_m, ko * block_k], A_shared)
                T.copy(B[bz, ko * block_k : (ko + 1) * block_k, bx * block_n : (bx + 1) * block_n], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[bz, by * block_m, bx * block_n])

    return batched_gemm


def split_k_gemm(
    m: int = 128,
    n: int = 128,
    k: int = 256,
    block_m: int = 64,
    block_n: int = 64,
    block_k: int = 32,
    split_k: int = 4,
    dtype: str = "float16",
):
    """C += A @ B where each of `split_k` blocks sums a slice of K and adds it with T.atomic_add."""
    k_per_split = k // split_k

    @T.prim_func
    def split_k_gemm(A: T.Tensor((m, k), dtype), B: T.Tensor((k, n), dtype), C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), split_k, threads=128) as (bx, by, bz):
            A_shared = T.alloc_shared((block_m, block_k), dtype)
            B_shared = T.alloc_shared((block_k, block_n), dtype)
            C_local = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(k_per_split, block_k), num_stages=2):
                T.copy(A[by * block_m, bz * k_per_split + ko * block_k], A_shared)
                T.copy(B[bz * k_per_split + ko * block_k, bx * block_n], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.atomic_add(C[by * block_m, bx * block_n], C_local)

    return split_k_gemm


def gemv(n: int = 256, k: int = 512, block_n: int = 32, block_k: int = 64, dtype: str = "float16"):
    """y = A @ x for A of shape (N, K): each block owns `block_n` rows and walks K in tiles."""

    @T.prim_func
    def gemv(A: T.Tensor((n, k), dtype), x: T.Tensor((k,), dtype), y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block_n), threads=128) as bx:
            a = T.alloc_fragment((block_n, block_k), "float32")
            xk = T.alloc_fragment((block_k,), "float32")
            partial = T.alloc_fragment((block_n,), "float32")
            acc = T.alloc_fragment((block_n,), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                T.copy(A[bx * block_n, ko * block_k], a)
                T.copy(x[ko * block_k], xk)
                for i, j in T.Parallel(block_n, block_k):
                    a[i, j] = a[i, j] * xk[j]
                T.reduce_sum(a, partial, dim=1)
                for i in T.Parallel(block_n):
                    acc[i] += partial[i]
            T.copy(acc, y[bx * block_n])

    return gemv


def column_sum(m: int = 512, n: int = 256, block_m: int = 64, block_n: int = 64, dtype: str = "float32"):
    """out[j] = sum_i X[i, j]: row tiles accumulate into one column vector with clear=False."""

    @T.prim_func
    def column_sum(X: T.Tensor((m, n), dtype), out: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block_n), threads=128) as bx:
            tile = T.alloc_fragment((block_m, block_n), dtype)
            acc = T.alloc_fragment((block_n,), dtype)
            T.clear(acc)
            for ko in T.serial(T.ceildiv(m, block_m)):
                T.copy(X[ko * block_m, bx * block_n], tile)
                T.reduce_sum(tile, acc, dim=0, clear=False)
            T.copy(acc, out[bx * block_n])

    return column_sum


def flash_attention(
    batch: int = 1,
    heads: int = 2,
    seq_len: int = 256,
    dim: int = 64,
    is_causal: bool = True,
    block_m: int = 64,
    block_n: int = 64,
    num_stages: int = 1,
    threads: int = 128,
):
    """Flash-attention forward with online softmax (TileLang's example_mha_fwd_bshd, macros and all)."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, seq_len, heads, dim]
    dtype = "float16"
    accum_dtype = "float"
    rescale = rescale_scores(block_m, block_n, scale)
    tiles = attention_tiles(block_m, block_n, dim, dtype, accum_dtype)
    start = start_rows(accum_dtype)
    trip_count = key_tiles(seq_len, block_m, block_n, is_causal)
    finish = finish_rows(block_m, dim)

    @T.macro
    def MMA0(K, Q_shared, K_shared, acc_s, k, bx, by, bz):
        T.copy(K[bz, k * block_n : (k + 1) * block_n, by, :], K_shared)
        if is_causal:
            for i, j in T.Parallel(block_m, block_n):
                acc_s[i, j] = T.if_then_else(bx * block_m + i >= k * block_n + j, 0, -T.infinity(acc_s.dtype))
        else:
            T.clear(acc_s)
        T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def MMA1(V, V_shared, acc_s_cast, acc_o, k, by, bz):
        T.copy(V[bz, k * block_n : (k + 1) * block_n, by, :], V_shared)
        T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def Softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale, scores_sum, logsum):
        T.copy(scores_max, scores_max_prev)
        T.fill(scores_max, -T.infinity(accum_dtype))
        T.reduce_max(acc_s, scores_max, dim=1, clear=False)
        rescale(acc_s, scores_max, scores_max_prev, scores_scale, scores_sum, logsum)
        T.copy(acc_s, acc_s_cast)

    @T.macro
    def Rescale(acc_o, scores_scale):
        for i, j in T.Parallel(block_m, dim):
            acc_o[i, j] *= scores_scale[i]

    @T.prim_func
    def flash_attention(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(shape, dtype),
        V: T.Tensor(shape, dtype),
        Output: T.Tensor(shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_m), heads, batch, threads=threads) as (bx, by, bz):
            (Q_shared, K_shared, V_shared, O_shared, acc_s, acc_s_cast, acc_o,
             scores_max, scores_max_prev, scores_scale, scores_sum, logsum) = tiles()  # fmt: skip

            T.copy(Q[bz, bx * block_m : (bx + 1) * block_m, by, :], Q_shared)
            start(acc_o, logsum, scores_max)
            for k in T.Pipelined(trip_count(bx), num_stages=num_stages):
                MMA0(K, Q_shared, K_shared, acc_s, k, bx, by, bz)
                Softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale, scores_sum, logsum)
                Rescale(acc_o, scores_scale)
                MMA1(V, V_shared, acc_s_cast, acc_o, k, by, bz)
            finish(acc_o, logsum, O_shared)
            T.copy(O_shared, Output[bz, bx * block_m : (bx + 1) * block_m, by, :])

    return flash_attention


def transpose(m: int = 256, n: int = 128, block: int = 32, dtype: str = "float32"):
    """B = A^T through a shared-memory tile."""

    @T.prim_func
    def transpose(A: T.Tensor((m, n), dtype), B: T.Tensor((n, m), dtype)):
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=128) as (bx, by):
            tile = T.alloc_shared((block, block), dtype)
            tile_t = T.alloc_shared((block, block), dtype)
            T.copy(A[by * block, bx * block], tile)
            for i, j in T.Parallel(block, block):
                tile_t[i, j] = tile[j, i]
            T.copy(tile_t, B[bx * block, by * block])

    return transpose


def cumsum(m: int = 128, n: int = 64, block_m: int = 32, reverse: bool = False, dtype: str = "float32"):
    """Y = inclusive prefix sum of X along rows (from the end of each row when `reverse`)."""

    @T.prim_func
    def cumsum(X: T.Tensor((m, n), dtype), Y: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            tile = T.alloc_shared((block_m, n), dtype)
            T.copy(X[bx * block_m, 0], tile)
            T.cumsum(tile, dim=1, reverse=reverse)
            T.copy(tile, Y[bx * block_m, 0])

    return cumsum


KERNELS = {
    "elementwise_add": elementwise_add,
    "softmax": softmax,
    "rms_norm": rms_norm,
    "layer_norm": layer_norm,
    "gemm": gemm,
    "gemm_transpose_a": lambda: gemm(transpose_a=True),
    "gemm_transpose_b": lambda: gemm(transpose_b=True),
    "gemm_transpose_ab": lambda: gemm(transpose_a=True, transpose_b=True),
    "batched_gemm": batched_gemm,
    "split_k_gemm": split_k_gemm,
    "gemv": gemv,
    "column_sum": column_sum,
    "flash_attention": flash_attention,
    "flash_attention_noncausal": lambda: flash_attention(is_causal=False),
    "transpose": transpose,
    "cumsum": cumsum,
    "cumsum_reverse": lambda: cumsum(reverse=True),
}
