"""Gemms whose A operand lives in registers while the warps also split the tile's columns (warps_n > 1),
so the warps sharing a row block each hold a copy of A: TileLang's fusedmoe (A loaded from global into a
fragment, Square policy over 8 warps) and its GQA backward (A the cast accumulator of a gemm whose
warps own different columns)."""

from __future__ import annotations

import numpy as np

import tilecraft.language as T

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
