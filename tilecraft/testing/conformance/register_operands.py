"""Gemms whose A operand lives in registers while the warps also split the tile's columns (warps_n > 1),
so the warps sharing a row block each hold a copy of A: TileLang's fusedmoe (A loaded from global into a
fragment, Square policy over 8 warps) and its GQA backward (A the cast accumulator of a gemm whose
warps own different columns)."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T
from tilecraft.testing.conformance.tf32 import tf32_product

MOE = (200, 64, 128)  # tokens (ragged for 128-row tiles), hidden, expert
BLOCK = 128


def fragment_a_from_global():
    """gate = silu(X @ Wg^T) * (X @ Wu^T) with X in a fragment (example_fusedmoe_tilelang.py:58-64)."""
    tokens, hidden, expert = MOE

    @T.prim_func
    def moe_gate_up(
        X: T.Tensor((tokens, hidden), "float16"),
        Wg: T.Tensor((expert, hidden), "float16"),
        Wu: T.Tensor((expert, hidden), "float16"),
        Y: T.Tensor((tokens, expert), "float32"),
    ):
        with T.Kernel(T.ceildiv(tokens, BLOCK), threads=256) as bx:
            x = T.alloc_fragment((BLOCK, 32), "float16")
            wg = T.alloc_shared((expert, 32), "float16")
            wu = T.alloc_shared((expert, 32), "float16")
            gate = T.alloc_fragment((BLOCK, expert), "float32")
            up = T.alloc_fragment((BLOCK, expert), "float32")
            T.clear(gate)
            T.clear(up)
            for k in T.Pipelined(T.ceildiv(hidden, 32), num_stages=1):
                T.copy(X[bx * BLOCK, k * 32], x)
                T.copy(Wg[0, k * 32], wg)
                T.copy(Wu[0, k * 32], wu)
                T.gemm(x, wg, gate, transpose_B=True)
                T.gemm(x, wu, up, transpose_B=True)
            for i, j in T.Parallel(BLOCK, expert):
                gate[i, j] = gate[i, j] / (1.0 + T.exp(-gate[i, j])) * up[i, j]
            T.copy(gate, Y[bx * BLOCK, 0])

    return moe_gate_up


def moe_inputs(rng) -> list[np.ndarray]:
    tokens, hidden, expert = MOE
    x = rng.standard_normal((tokens, hidden)).astype(np.float16)
    wg, wu = ((rng.standard_normal((expert, hidden)) / 8).astype(np.float16) for _ in range(2))
    return [x, wg, wu, np.full((tokens, expert), np.nan, np.float32)]


def moe_reference(arrays) -> dict[int, np.ndarray]:
    x, wg, wu = (np.asarray(a, np.float64) for a in arrays[:3])
    gate, up = x @ wg.T, x @ wu.T
    return {3: gate / (1 + np.exp(-gate)) * up}


GQA = (64, 32, 64)  # block_M, block_N, dim (example_gqa_bwd.py with threads=256)


def fragment_a_from_accumulator():
    """dv = cast(K @ Q^T) @ dO with 8 warps, FullRow (example_gqa_bwd.py:211-222): the first gemm's
    accumulator is split over 2 warp columns, the second reads whole rows of it."""
    m, n, d = GQA

    @T.prim_func
    def p_times_v(
        K: T.Tensor((m, d), "float16"),
        Q: T.Tensor((n, d), "float16"),
        dO: T.Tensor((n, d), "float16"),
        dV: T.Tensor((m, d), "float32"),
    ):
        with T.Kernel(1, threads=256):
            k_s = T.alloc_shared((m, d), "float16")
            q_s = T.alloc_shared((n, d), "float16")
            do_s = T.alloc_shared((n, d), "float16")
            s = T.alloc_fragment((m, n), "float32")
            p = T.alloc_fragment((m, n), "float16")
            dv = T.alloc_fragment((m, d), "float32")
            T.copy(K, k_s)
            T.copy(Q, q_s)
            T.copy(dO, do_s)
            T.clear(s)
            T.gemm(k_s, q_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(m, n):
                s[i, j] = s[i, j] * 0.5
            T.copy(s, p)
            T.clear(dv)
            T.gemm(p, do_s, dv, policy=T.GemmWarpPolicy.FullRow)
            T.copy(dv, dV)

    return p_times_v


def gqa_inputs(rng) -> list[np.ndarray]:
    m, n, d = GQA
    k, q, do = ((rng.standard_normal(shape) / 4).astype(np.float16) for shape in ((m, d), (n, d), (n, d)))
    return [k, q, do, np.full((m, d), np.nan, np.float32)]


def gqa_reference(arrays) -> dict[int, np.ndarray]:
    k, q, do = (np.asarray(a, np.float64) for a in arrays[:3])
    p = (k @ q.T * 0.5).astype(np.float16).astype(np.float64)
    return {3: p @ do}


FMA_A = (100, 48, 40, 72)  # rows (ragged for 32-row tiles), block_S, DK, block_DV
FMA_BLOCK = 32


def float32_fragment_a():
    """dh = (scale * Q)^T @ dO per block of rows, float32 throughout (example_chunk_delta_bwd.py:323-344):
    A is a float32 fragment written transposed by a T.Parallel nest, so the gemm takes the FMA path
    with A in registers; K (block_S) and the tile shapes are not powers of two."""
    rows, block_s, dk, block_dv = FMA_A
    del block_s

    @T.prim_func
    def q_t_times_do(
        Q: T.Tensor((rows, dk), "float32"),
        dO: T.Tensor((rows, block_dv), "float32"),
        dH: T.Tensor((T.ceildiv(rows, FMA_BLOCK), dk, block_dv), "float32"),
    ):
        with T.Kernel(T.ceildiv(rows, FMA_BLOCK), threads=128) as bx:
            q_s = T.alloc_shared((FMA_BLOCK, dk), "float32")
            q = T.alloc_fragment((FMA_BLOCK, dk), "float32")
            q_t = T.alloc_fragment((dk, FMA_BLOCK), "float32")
            do_t = T.alloc_shared((block_dv, FMA_BLOCK), "float32")
            dh = T.alloc_fragment((dk, block_dv), "float32")
            T.copy(Q[bx * FMA_BLOCK, 0], q_s)
            T.copy(q_s, q)
            for i, j in T.Parallel(FMA_BLOCK, dk):
                q[i, j] = q[i, j] * 0.5
            for i, j in T.Parallel(FMA_BLOCK, dk):
                q_t[j, i] = q[i, j]
            for v, i in T.Parallel(block_dv, FMA_BLOCK):
                do_t[v, i] = T.if_then_else(bx * FMA_BLOCK + i < rows, dO[bx * FMA_BLOCK + i, v], 0.0)
            T.clear(dh)
            T.gemm(q_t, do_t, dh, transpose_B=True)
            T.copy(dh, dH[bx, 0, 0])

    return q_t_times_do


def float32_fragment_a_inputs(rng) -> list[np.ndarray]:
    rows, _, dk, block_dv = FMA_A
    q = rng.standard_normal((rows, dk)).astype(np.float32)
    do = rng.standard_normal((rows, block_dv)).astype(np.float32)
    return [q, do, np.full((-(-rows // FMA_BLOCK), dk, block_dv), np.nan, np.float32)]


def float32_fragment_a_reference(arrays) -> dict[int, np.ndarray]:
    rows, _, dk, block_dv = FMA_A
    q, do = (np.asarray(a, np.float64) for a in arrays[:2])
    blocks = -(-rows // FMA_BLOCK)
    pad = blocks * FMA_BLOCK - rows
    q = np.pad(q * 0.5, ((0, pad), (0, 0))).reshape(blocks, FMA_BLOCK, dk)
    do = np.pad(do, ((0, pad), (0, 0))).reshape(blocks, FMA_BLOCK, block_dv)
    return {2: np.einsum("bsk,bsv->bkv", q, do)}


MHC = (70, 96, 24, 32)  # tokens (ragged), hidden, outputs, hidden block


def tf32_fragment_a_accumulating():
    """out += cast(x) @ fn^T over hidden blocks with a tfloat32 fragment A (example_mhc_pre.py:160-179):
    the accumulator keeps its value across the pipelined loop (clear_accum=False)."""
    tokens, hidden, outputs, block = MHC
    token_block = 32

    @T.prim_func
    def mhc_gemm(
        X: T.Tensor((tokens, hidden), "bfloat16"),
        Fn: T.Tensor((outputs, hidden), T.tfloat32),
        Out: T.Tensor((tokens, outputs), "float32"),
    ):
        with T.Kernel(T.ceildiv(tokens, token_block), threads=128) as px:
            out = T.alloc_fragment((token_block, 32), "float32")
            T.clear(out)
            for pz in T.Pipelined(hidden // block, num_stages=2):
                x_s = T.alloc_shared((token_block, block), "bfloat16")
                fn_s = T.alloc_shared((32, block), T.tfloat32)
                T.copy(X[px * token_block, pz * block], x_s)
                T.copy(Fn[0, pz * block], fn_s)
                x16 = T.alloc_fragment((token_block, block), "bfloat16")
                T.copy(x_s, x16)
                x = T.alloc_fragment((token_block, block), T.tfloat32)
                T.copy(x16, x)
                T.gemm(x, fn_s, out, transpose_B=True, clear_accum=False)
            for i, j in T.Parallel(token_block, 32):
                if px * token_block + i < tokens and j < outputs:
                    Out[px * token_block + i, j] = out[i, j]

    return mhc_gemm


def tf32_fragment_a_inputs(rng) -> list[np.ndarray]:
    import ml_dtypes

    tokens, hidden, outputs, _ = MHC
    x = rng.standard_normal((tokens, hidden)).astype(ml_dtypes.bfloat16)
    fn = (rng.standard_normal((outputs, hidden)) / 8).astype(np.float32)
    return [x, fn, np.full((tokens, outputs), np.nan, np.float32)]


def tf32_fragment_a_reference(arrays) -> dict[int, np.ndarray]:
    """The gemm of the operands rounded to tf32 (x is bfloat16, so exact in tf32)."""
    x, fn = np.asarray(arrays[0], np.float32), np.asarray(arrays[1], np.float32)
    return {2: tf32_product(x, fn.T)}


MHC_SQRSUM = (70, 512, 24, 256)  # tokens (ragged), hidden, outputs, hidden block


def tf32_gemm_with_row_sums():
    """example_mhc_pre.py's mhc_pre_gemm_sqrsum_tilelang as written (lines 134-195): the tiles allocated
    inside T.Pipelined, the row sums of squares read from the tfloat32 fragment 4 columns at a time
    (`x_frag[i, jj * 4 + j]` in a serial loop over the blocks), then the TF32 gemm of that fragment."""
    tokens, hidden, outputs, block = MHC_SQRSUM
    token_block = 32

    @T.prim_func
    def mhc_gemm_sqrsum(
        X: T.Tensor((tokens, hidden), "bfloat16"),
        Fn: T.Tensor((outputs, hidden), T.tfloat32),
        Out: T.Tensor((tokens, outputs), "float32"),
        Sqrsum: T.Tensor((tokens,), "float32"),
    ):
        with T.Kernel(T.ceildiv(tokens, token_block), threads=128) as px:
            out_frag = T.alloc_fragment((token_block, 32), "float32")
            sqrsum_part = T.alloc_fragment((token_block, 4), "float32")
            T.clear(out_frag)
            T.clear(sqrsum_part)
            for pz in T.Pipelined(hidden // block, num_stages=2):
                x_smem_16 = T.alloc_shared((token_block, block), "bfloat16")
                fn_smem = T.alloc_shared((32, block), T.tfloat32)
                T.copy(X[px * token_block, pz * block], x_smem_16)
                T.copy(Fn[0, pz * block], fn_smem)
                x_frag_16 = T.alloc_fragment((token_block, block), "bfloat16")
                T.copy(x_smem_16, x_frag_16)
                x_frag = T.alloc_fragment((token_block, block), T.tfloat32)
                T.copy(x_frag_16, x_frag)
                for jj in T.serial(block // 4):
                    for i, j in T.Parallel(token_block, 4):
                        sqrsum_part[i, j] += x_frag[i, jj * 4 + j] * x_frag[i, jj * 4 + j]
                T.gemm(x_frag, fn_smem, out_frag, transpose_B=True, clear_accum=False)
            sqrsum_l = T.alloc_fragment(token_block, "float32")
            T.reduce_sum(sqrsum_part, sqrsum_l)
            for i in T.Parallel(token_block):
                if px * token_block + i < tokens:
                    Sqrsum[px * token_block + i] = sqrsum_l[i]
            for i, j in T.Parallel(token_block, 32):
                if px * token_block + i < tokens and j < outputs:
                    Out[px * token_block + i, j] = out_frag[i, j]

    return mhc_gemm_sqrsum


def tf32_gemm_with_row_sums_inputs(rng) -> list[np.ndarray]:
    import ml_dtypes

    tokens, hidden, outputs, _ = MHC_SQRSUM
    x = rng.standard_normal((tokens, hidden)).astype(ml_dtypes.bfloat16)
    fn = (rng.standard_normal((outputs, hidden)) / 8).astype(np.float32)
    return [x, fn, np.full((tokens, outputs), np.nan, np.float32), np.full(tokens, np.nan, np.float32)]


def tf32_gemm_with_row_sums_reference(arrays) -> dict[int, np.ndarray]:
    x, fn = np.asarray(arrays[0], np.float32), np.asarray(arrays[1], np.float32)
    x64 = x.astype(np.float64)
    return {2: tf32_product(x, fn.T), 3: (x64 * x64).sum(1)}


HEAD192 = (128, 32, 192)  # block_M, block_N, QK head dim (example_gqa_bwd.py's D_HEAD_QK = 192)


def head_192_gemms(with_dq: bool):
    """dk = cast(K @ Q^T) @ Q (N = 192 from a register A) and, `with_dq`, dq = cast(K @ Q^T)^T @ K (M = 32,
    N = 192, A transposed from shared memory): extents that are not powers of two, laid out as the next
    one on tensor cores (example_gqa_bwd.py:301-329). Without dq the block takes wgmma on sm_90a; with it
    the shared K tile is read by mma.sync too."""
    m, n, d = HEAD192

    @T.prim_func
    def head_192(
        K: T.Tensor((m, d), "float16"),
        Q: T.Tensor((n, d), "float16"),
        dK: T.Tensor((m, d), "float32"),
        dQ: T.Tensor((n, d), "float32"),
    ):
        with T.Kernel(1, threads=256):
            k_s = T.alloc_shared((m, d), "float16")
            q_s = T.alloc_shared((n, d), "float16")
            p_s = T.alloc_shared((m, n), "float16")
            s = T.alloc_fragment((m, n), "float32")
            p = T.alloc_fragment((m, n), "float16")
            dk = T.alloc_fragment((m, d), "float32")
            dq = T.alloc_fragment((n, d), "float32")
            T.copy(K, k_s)
            T.copy(Q, q_s)
            T.clear(s)
            T.gemm(k_s, q_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(m, n):
                s[i, j] = s[i, j] * 0.25
            T.copy(s, p)
            T.clear(dk)
            T.gemm(p, q_s, dk, policy=T.GemmWarpPolicy.FullRow)
            T.copy(dk, dK)
            T.clear(dq)
            if with_dq:
                T.copy(p, p_s)
                T.gemm(p_s, k_s, dq, transpose_A=True)
            T.copy(dq, dQ)

    return head_192


def head_192_inputs(rng) -> list[np.ndarray]:
    m, n, d = HEAD192
    k, q = ((rng.standard_normal(shape) / 4).astype(np.float16) for shape in ((m, d), (n, d)))
    return [k, q, np.full((m, d), np.nan, np.float32), np.full((n, d), np.nan, np.float32)]


def head_192_reference(with_dq: bool):
    def reference(arrays) -> dict[int, np.ndarray]:
        k, q = (np.asarray(a, np.float64) for a in arrays[:2])
        p = (k @ q.T * 0.25).astype(np.float16).astype(np.float64)
        return {2: p @ q, 3: p.T @ k if with_dq else np.zeros((q.shape[0], k.shape[1]))}

    return reference
