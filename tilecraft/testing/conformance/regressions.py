"""Kernels of the shapes TileLang's examples use that the compiler once refused or miscompiled, with
their float64 references; the pass tests (tests/transform) and the conformance cases (cases.py) share
them."""

from __future__ import annotations

import math

import numpy as np

import tilecraft.language as T

# ---------------------------------------------------------------- (1, n) fragments in pipelined loops


def online_softmax(m: int = 4, n: int = 512, block_n: int = 256):
    """TileLang's online_softmax example, reduced: a (1, block_n) row, two T.Pipelined passes, and
    (1,)-shaped fragments filled, reduced into and updated by T.Parallel(1)."""
    scale = 1.44269504

    @T.prim_func
    def online_softmax(X: T.Tensor((m, n), "float16"), Y: T.Tensor((m, n), "float16")):
        with T.Kernel(m, threads=128) as i_m:
            x = T.alloc_fragment((1, block_n), "float16")
            y = T.alloc_fragment((1, block_n), "float16")
            lse = T.alloc_fragment((1,), "float32")
            max_x = T.alloc_fragment((1,), "float16")
            exp_x = T.alloc_fragment((1, block_n), "float32")
            sum_exp_x = T.alloc_fragment((1,), "float32")
            T.fill(lse, -T.infinity("float32"))
            for i_n in T.Pipelined(T.ceildiv(n, block_n)):
                T.copy(X[i_m, i_n * block_n], x)
                T.reduce_max(x, max_x, dim=1, clear=True)
                for i, j in T.Parallel(1, block_n):
                    exp_x[i, j] = T.exp2(x[i, j] * scale - max_x[i] * scale)
                T.reduce_sum(exp_x, sum_exp_x, dim=1, clear=True)
                for i in T.Parallel(1):
                    lse[i] = max_x[i] * scale + T.log2(T.exp2(lse[i] - max_x[i] * scale) + sum_exp_x[i])
            for i_n in T.Pipelined(T.ceildiv(n, block_n)):
                T.copy(X[i_m, i_n * block_n], x)
                for i, j in T.Parallel(1, block_n):
                    y[i, j] = T.exp2(x[i, j] * scale - lse[i])
                T.copy(y, Y[i_m, i_n * block_n])

    return online_softmax


# ---------------------------------------------------------------- fragment reads across threads


def decode_scores(heads: int = 64, seqlen: int = 100, dim: int = 32, block_n: int = 32):
    """TileLang's flash-decoding example (varlen logits), reduced: a gemm, the running row maximum and
    row sum, then a loop over (heads, kv blocks) that reads the row vectors `m[h]` and `total[h]` and writes
    shared memory: no fragment is indexed by both of its variables."""
    cols = math.ceil(seqlen / block_n)
    scale = (1.0 / dim) ** 0.5 * 1.44269504

    @T.prim_func
    def decode_scores(
        Q: T.Tensor((heads, dim), "float16"),
        K: T.Tensor((seqlen, dim), "float16"),
        S: T.Tensor((heads, cols), "float32"),
        L: T.Tensor((heads,), "float32"),
    ):
        with T.Kernel(1, threads=128):
            q_s = T.alloc_shared((heads, dim), "float16")
            k_s = T.alloc_shared((block_n, dim), "float16")
            acc = T.alloc_fragment((heads, block_n), "float32")
            m = T.alloc_fragment((heads,), "float32")
            m_prev = T.alloc_fragment((heads,), "float32")
            scale_prev = T.alloc_fragment((heads,), "float32")
            row_sum = T.alloc_fragment((heads,), "float32")
            total = T.alloc_fragment((heads,), "float32")
            s_all = T.alloc_shared((heads, cols), "float32")
            T.copy(Q, q_s)
            T.fill(m, -T.infinity("float32"))
            T.fill(total, 0.0)
            for k in T.Pipelined(cols, num_stages=1):
                T.copy(K[k * block_n, 0], k_s)
                T.clear(acc)
                T.gemm(q_s, k_s, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(heads, block_n):
                    acc[i, j] = T.if_then_else(k * block_n + j < seqlen, acc[i, j], -T.infinity("float32"))
                T.copy(m, m_prev)
                T.reduce_max(acc, m, dim=1, clear=False)
                T.copy(m, s_all[:, k])
                for i in T.Parallel(heads):
                    scale_prev[i] = T.exp2((m_prev[i] - m[i]) * scale)
                for i, j in T.Parallel(heads, block_n):
                    acc[i, j] = T.exp2((acc[i, j] - m[i]) * scale)
                T.reduce_sum(acc, row_sum, dim=1)
                for i in T.Parallel(heads):
                    total[i] = total[i] * scale_prev[i] + row_sum[i]
            for h, c in T.Parallel(heads, cols):
                s_all[h, c] = T.exp2((s_all[h, c] - m[h]) * scale) / total[h]
            T.copy(s_all, S)
            T.copy(total, L)

    return decode_scores


def decode_reference(q, k, block_n: int = 32):
    s = q.astype(np.float64) @ k.astype(np.float64).T / math.sqrt(q.shape[1])
    m = s.max(1)
    total = np.exp(s - m[:, None]).sum(1)
    cols = math.ceil(k.shape[0] / block_n)
    running = np.maximum.accumulate(
        np.stack([s[:, c * block_n : (c + 1) * block_n].max(1) for c in range(cols)], 1), 1
    )
    return np.exp(running - m[:, None]) / total[:, None], total


def remote_reads(m: int = 32, n: int = 64):
    """Reads no layout can make local: a row maximum of one tile read across a tile laid out otherwise,
    a fixed column, a mirrored row, a shifted column, and reads outside any loop (a store's value, an
    `if` condition, a loop bound, a serial loop's body)."""

    @T.prim_func
    def remote_reads(
        X: T.Tensor((m, n), "float32"),
        W: T.Tensor((n, m), "float32"),
        Y: T.Tensor((m, n), "float32"),
        Z: T.Tensor((m, n), "float32"),
        R: T.Tensor((4,), "float32"),
    ):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((m, n), "float32")
            w = T.alloc_fragment((m, n), "float32")
            row_max = T.alloc_fragment((m,), "float32")
            y = T.alloc_fragment((m, n), "float32")
            T.copy(X, x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(m, n):
                w[i, j] = W[j, i]
            for i, j in T.Parallel(m, n):
                y[i, j] = w[i, j] - row_max[i] + x[i, 0] + x[m - 1 - i, j]
            T.copy(y, Y)
            for i, j in T.Parallel(m, n):
                Z[i, j] = x[i, (j + 1) % n]
            R[0] = row_max[3]
            if row_max[5] > 0.0:
                R[1] = x[7, 9]
            else:
                R[1] = -x[7, 9]
            for k in T.serial(T.cast(row_max[0] > -100.0, "int32") * 2):
                R[2 + k] = row_max[k]

    return remote_reads


def remote_reference(x, w):
    mx = x.max(1)
    y = w.T - mx[:, None] + x[:, :1] + x[::-1, :]
    r = [mx[3], x[7, 9] if mx[5] > 0 else -x[7, 9], mx[0], mx[1]]
    return y, np.roll(x, -1, axis=1), np.array(r, np.float32)


def column_block_reads(m: int = 32, n: int = 64):
    """Row sums of squares read 4 columns at a time in a serial loop (example_mhc_pre's sqrsum), from a
    fragment in the default layout: which threads hold a block of 4 columns changes with the block, so
    the fragment is read through shared memory, copied there once before the loop (the loop does not
    write it), not once per block."""

    @T.prim_func
    def column_block_reads(X: T.Tensor((m, n), "float32"), S: T.Tensor((m, 4), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((m, n), "float32")
            part = T.alloc_fragment((m, 4), "float32")
            T.copy(X, x)
            T.clear(part)
            for jj in T.serial(n // 4):
                for i, j in T.Parallel(m, 4):
                    part[i, j] += x[i, jj * 4 + j] * x[i, jj * 4 + j]
            T.copy(part, S)

    return column_block_reads


def column_block_reference(x):
    x = np.asarray(x, np.float64)
    return (x * x).reshape(x.shape[0], -1, 4).sum(1)


# ---------------------------------------------------------------- fragments wider than their loops


def sink_logsumexp(heads: int = 3, m: int = 100, n: int = 64, bm: int = 32, wide: int = 64):
    """TileLang's attention-sink forward, reduced: `sinks = T.alloc_fragment([wide])`, wider than the
    `T.Parallel(bm)` loop that fills it with `Sinks[by]`, read beside a row reduction's result. Per row:
    log(sum_j exp(x_j) + exp(sink)). A GPU backend once refused it (the loop wrote elements its threads did not
    hold under the fragment's own layout)."""

    @T.prim_func
    def sink_logsumexp(
        Sinks: T.Tensor((heads,), "float32"),
        X: T.Tensor((heads, m, n), "float32"),
        Y: T.Tensor((heads, m), "float32"),
    ):
        with T.Kernel(T.ceildiv(m, bm), heads, threads=128) as (bx, by):
            x = T.alloc_fragment((bm, n), "float32")
            top = T.alloc_fragment((bm,), "float32")
            total = T.alloc_fragment((bm,), "float32")
            sinks = T.alloc_fragment((wide,), "float32")
            T.copy(X[by, bx * bm, 0], x)
            for i in T.Parallel(bm):
                sinks[i] = Sinks[by]
            T.reduce_max(x, top, dim=1)
            for i in T.Parallel(bm):
                top[i] = T.max(top[i], sinks[i])
            for i, j in T.Parallel(bm, n):
                x[i, j] = T.exp(x[i, j] - top[i])
            T.reduce_sum(x, total, dim=1)
            for i in T.Parallel(bm):
                total[i] = T.log(total[i] + T.exp(sinks[i] - top[i])) + top[i]
            T.copy(total, Y[by, bx * bm])

    return sink_logsumexp


def sink_logsumexp_reference(sinks, x):
    x, s = np.asarray(x, np.float64), np.asarray(sinks, np.float64)
    return np.log(np.exp(x).sum(2) + np.exp(s)[:, None])


def head_of_a_wide_fragment(n: int = 64, part: int = 32):
    """Loops over the first `part` elements of an `n`-element fragment laid out before them (by a copy
    of all of it): they iterate its layout, and write and read only what each thread holds."""

    @T.prim_func
    def head_of_a_wide_fragment(W: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=128):
            wide = T.alloc_fragment((n,), "float32")
            T.copy(W, wide)
            for i in T.Parallel(part):
                wide[i] = wide[i] * 2.0
            T.copy(wide, Y)

    return head_of_a_wide_fragment


# ---------------------------------------------------------------- T.Parallel tiles past a tensor's edge


def ragged_gemm_store(m: int = 100, n: int = 96, k: int = 64, bm: int = 64, bn: int = 64, bk: int = 32):
    """TileLang's grouped-gemm epilogue, reduced: whole 64x64 tiles stored from a T.Parallel nest over a
    100x96 result (the last tiles run past both edges), reading A past its edge too."""

    @T.prim_func
    def ragged_gemm_store(
        A: T.Tensor((m, k), "float32"), B: T.Tensor((k, n), "float32"), C: T.Tensor((m, n), "float32")
    ):
        with T.Kernel(T.ceildiv(m, bm), T.ceildiv(n, bn), threads=128) as (bx, by):
            a = T.alloc_shared((bm, bk), "float32")
            b = T.alloc_shared((bk, bn), "float32")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for kk in T.Pipelined(T.ceildiv(k, bk)):
                T.copy(A[bx * bm, kk * bk], a)
                T.copy(B[kk * bk, by * bn], b)
                T.gemm(a, b, acc)
            for i, j in T.Parallel(bm, bn):
                C[bx * bm + i, by * bn + j] = acc[i, j] + A[bx * bm + i, by * bn + j]

    return ragged_gemm_store


def ragged_gemm_inputs(rng) -> list[np.ndarray]:
    a = rng.standard_normal((100, 64)).astype(np.float32)
    b = rng.standard_normal((64, 96)).astype(np.float32)
    return [a, b, np.full((100, 96), np.nan, np.float32)]


def ragged_gemm_reference(a, b) -> np.ndarray:
    """A @ B plus A's columns where the tile's column is inside A (zero past A's edge)."""
    shifted = np.zeros((a.shape[0], b.shape[1]))
    shifted[:, : a.shape[1]] = a
    return a.astype(np.float64) @ b + shifted


# ---------------------------------------------------------------- while loops


def collatz(n: int = 64):
    """A data-dependent trip count per element: the steps of the Collatz sequence from A[i] to 1."""

    @T.prim_func
    def collatz(A: T.Tensor((n,), "int32"), steps: T.Tensor((n,), "int32")):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                x = T.alloc_var("int32")
                c = T.alloc_var("int32")
                x = A[bx * 32 + i]
                c = 0
                while x != 1:
                    if x % 2 == 0:
                        x = x // 2
                    else:
                        x = 3 * x + 1
                    c += 1
                steps[bx * 32 + i] = c

    return collatz


def collatz_steps(x: int) -> int:
    steps = 0
    while x != 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
    return steps


def walk_tiles(n_tiles: int = 6, block: int = 64):
    """TileLang's stream-K shape, reduced: a block walks tiles [bounds[0], bounds[1]) through shared
    memory, each tile reversed (so threads read what others wrote)."""

    @T.prim_func
    def walk_tiles(
        A: T.Tensor((n_tiles * block,), "float32"),
        B: T.Tensor((n_tiles * block,), "float32"),
        bounds: T.Tensor((2,), "int32"),
    ):
        with T.Kernel(1, threads=block):
            tile = T.alloc_shared((block,), "float32")
            t = T.alloc_var("int32")
            t = bounds[0]
            while t < bounds[1]:
                T.copy(A[t * block], tile)
                for i in T.Parallel(block):
                    B[t * block + i] = tile[block - 1 - i] * 2.0
                t = t + 1

    return walk_tiles


# ---------------------------------------------------------------- bit patterns through T.reinterpret


def power_of_two_scale(m: int = 70, n: int = 96, block_m: int = 32):
    """TileLang's deepseek_v4 act_quant with `round_scale`: each row's scale is the power of two at or
    above amax / 448, found from the float's exponent bits (`T.reinterpret` both ways), and the row is
    divided by it. Ragged rows; the scales are exact, so the reference is exact."""

    @T.prim_func
    def power_of_two_scale(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32"),
                           S: T.Tensor((m,), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            x = T.alloc_fragment((block_m, n), "float32")
            amax = T.alloc_fragment((block_m,), "float32")
            scale = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m, 0], x)
            T.reduce_absmax(x, amax, dim=1)
            for i in T.Parallel(block_m):
                bits = T.reinterpret(T.max(amax[i], 1e-4) * (1.0 / 448.0), "uint32")
                exponent = T.Cast(
                    "int32", ((bits >> 23) & 0xFF) - 127 + T.if_then_else(bits & 0x7FFFFF != 0, 1, 0)
                )
                scale[i] = T.reinterpret((exponent + 127) << 23, "float32")
            for i, j in T.Parallel(block_m, n):
                Y[bx * block_m + i, j] = x[i, j] / scale[i]
            for i in T.Parallel(block_m):
                S[bx * block_m + i] = scale[i]

    return power_of_two_scale


def power_of_two_scale_reference(a):
    amax = np.maximum(np.abs(a[0]).max(axis=1), np.float32(1e-4)).astype(np.float32)
    scale = np.exp2(np.ceil(np.log2((amax * np.float32(1.0 / 448.0)).astype(np.float64))))
    return {1: a[0].astype(np.float64) / scale[:, None], 2: scale}


# ---------------------------------------------------------------- loops with a step


def stepped_loops(m: int = 37, n: int = 53, block_m: int = 32):
    """Loops with a constant step (TileLang's `range(0, n, 2)`, `range(stop, 0, -2)`): even columns up,
    odd ones down from a bound read at run time, every fifth column after both, and a loop whose step
    points away from its stop, which must not run. Ragged rows."""

    @T.prim_func
    def stepped_loops(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32"),
                      last_odd: T.Tensor((1,), "int32")):  # fmt: skip
        with T.Kernel(T.ceildiv(m, block_m), threads=block_m) as bx:
            for i in T.Parallel(block_m):
                row = bx * block_m + i
                if row < m:
                    for j in range(0, n, 2):
                        Y[row, j] = X[row, j] * 2.0
                    for j in range(last_odd[0], 0, -2):
                        Y[row, j] = X[row, j] - 1.0
                    for j in T.serial(0, n, 5):
                        Y[row, j] = Y[row, j] + 100.0
                    for j in range(n, 0, 3):  # noqa: B007 - never runs
                        Y[row, 0] = -1.0

    return stepped_loops


def stepped_loops_inputs(rng, m: int = 37, n: int = 53) -> list:
    x = rng.standard_normal((m, n)).astype(np.float32)
    return [x, np.full((m, n), np.nan, np.float32), np.array([n - 1 if (n - 1) % 2 else n - 2], np.int32)]


def stepped_loops_reference(a):
    x = a[0].astype(np.float64)
    y = np.empty_like(x)
    y[:, 0::2] = x[:, 0::2] * 2.0
    y[:, 1::2] = x[:, 1::2] - 1.0
    y[:, 0::5] += 100.0
    return {1: y}


# ---------------------------------------------------------------- T.copy between two elements


def element_copies(m: int = 70, n: int = 50, block_m: int = 32, block_n: int = 16):
    """`T.copy(A[i, j], B[i, j])` with both operands start indices copies one element (TileLang's rule):
    one per iteration of a T.Parallel nest (converting float32 to float16), and an index read into a
    local before a gather. Ragged in both dims."""

    @T.prim_func
    def element_copies(A: T.Tensor((m, n), "float32"), idx: T.Tensor((4,), "int32"),
                       B: T.Tensor((m, n), "float16"), C: T.Tensor((4,), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=128) as (bx, by):
            for i, j in T.Parallel(block_m, block_n):
                if by * block_m + i < m and bx * block_n + j < n:
                    T.copy(A[by * block_m + i, bx * block_n + j], B[by * block_m + i, bx * block_n + j])
            if bx == 0 and by == 0:
                index = T.alloc_local((1,), "int32")
                for p in T.serial(4):
                    T.copy(idx[p], index[0])
                    C[p] = A[index[0], 3]

    return element_copies


def element_copies_inputs(rng, m: int = 70, n: int = 50) -> list:
    a = rng.standard_normal((m, n)).astype(np.float32)
    idx = np.array([5, m - 1, 0, 33], np.int32)
    return [a, idx, np.full((m, n), np.nan, np.float16), np.full(4, np.nan, np.float32)]


def element_copies_reference(a):
    return {2: a[0].astype(np.float16).astype(np.float64), 3: a[0][a[1], 3].astype(np.float64)}
