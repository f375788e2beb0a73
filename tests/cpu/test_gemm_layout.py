"""GEMM operand tiles and block order on the CPU: where tiles live follows from what the kernel does with them
(tilecraft/cpu/transform/gemm_operands.py), the generated C shows it, and the results do not change."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.testing.filecheck import filecheck


def tiled_gemm(m, n, k, bm=96, bn=128, bk=128, dtype="float32", transpose_a=False, pipelined=True):
    a_shape = (k, m) if transpose_a else (m, k)
    as_shape = (bk, bm) if transpose_a else (bm, bk)

    @T.prim_func
    def gemm(A: T.Tensor(a_shape, dtype), B: T.Tensor((k, n), dtype), C: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared(as_shape, dtype)
            B_s = T.alloc_shared((bk, bn), dtype)
            C_l = T.alloc_fragment((bm, bn), dtype)
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=2 if pipelined else 0):
                if transpose_a:
                    T.copy(A[ko * bk, by * bm], A_s)
                else:
                    T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l, transpose_A=transpose_a)
            T.copy(C_l, C[by * bm, bx * bn])

    return gemm


def sliced_gemm(m, n, k, bm=96, bn=128, bk=128):
    """tiled_gemm(m, n, k) written otherwise: explicit slices, a serial loop, other names."""

    @T.prim_func
    def gemm(X: T.Tensor((m, k), "float32"), W: T.Tensor((k, n), "float32"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=256) as (col, row):
            xs = T.alloc_shared((bm, bk), "float32")
            ws = T.alloc_shared((bk, bn), "float32")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.fill(acc, 0.0)
            for s in T.serial(T.ceildiv(k, bk)):
                T.copy(W[s * bk : s * bk + bk, col * bn : col * bn + bn], ws)
                T.copy(X[row * bm : row * bm + bm, s * bk : s * bk + bk], xs)
                T.gemm(xs, ws, acc)
            T.copy(acc, Y[row * bm : row * bm + bm, col * bn : col * bn + bn])

    return gemm


def kernel_body(source: str) -> str:
    """The device function's body with names of parameters and tiles made uniform."""
    body = source[source.index("static void gemm_kernel0") :]
    body = body[: body.index("\n}\n")]
    for old, new in (("X", "A"), ("W", "B"), ("Y", "C"), ("xs", "A_s"), ("ws", "B_s"), ("acc", "C_l"),
                     ("col", "bx"), ("row", "by"), (r"\bs\b", "ko")):  # fmt: skip
        body = re.sub(rf"\b{old}\b" if not old.startswith("\\") else old, new, body)
    return body


def test_the_copies_write_b_panels_and_the_gemm_reads_interior_a_in_place():
    """B_s is stored as 16-column panels the matmul reads with panel stride 128 * 16; A is read from the
    tensor for row tiles inside it, through A_s (copied, zero past the edge) for the last one, whose
    matmul updates only the rows inside the tensor (C_l's others are never stored)."""
    source = tilecraft.compile(tiled_gemm(1000, 1024, 1024), target="cpu").get_kernel_source()
    checks = """
        CHECK: static void gemm_kernel0(
        CHECK: if ((((by * 96) + 96) > 1000)) {
        CHECK: A_s[
        CHECK: for (int32_t pr = 0; pr < 128; ++pr) {
        CHECK-NEXT: for (int32_t pp = 0; pp < 8; ++pp) {
        CHECK-NEXT: #pragma omp simd
        CHECK-NEXT: for (int32_t pc = 0; pc < 16; ++pc) {
        CHECK-NEXT: B_s[(int64_t)pp * 2048 + (int64_t)pr * 16 + (int64_t)pc] = B[
        CHECK: if ((((by * 96) + 96) <= 1000)) {
        CHECK-NEXT: tc_matmul_f32(96, 128, 128, A + {{.*}}, 1024, 1, B_s + 0, 16, 2048, C_l + 0, 128);
        CHECK-NEXT: } else {
        CHECK-NEXT: tc_matmul_f32(tc_min_i32(96, (1000 - (by * 96))), 128, 128, A_s + 0, 128, 1, B_s + 0, 16, 2048, C_l + 0, 128);
    """
    filecheck(source, checks)


def test_a_differently_written_gemm_of_the_same_shape_gets_the_same_code():
    """Slices instead of corner indices, T.serial instead of T.Pipelined, other names and copy order."""
    ours = tilecraft.compile(tiled_gemm(512, 512, 512), target="cpu").get_kernel_source()
    theirs = tilecraft.compile(sliced_gemm(512, 512, 512), target="cpu").get_kernel_source()
    mine, other = decisions(kernel_body(ours)), decisions(kernel_body(theirs))
    assert mine and mine == other


def decisions(body: str) -> list[str]:
    """What the layout decisions show in a kernel: its loops, the tiles its stores write and how, and the
    matmul calls (index sums may list their terms in another order; the copies run in the kernel's order,
    so the lines are sorted)."""
    lines = [line.strip() for line in body.splitlines()]
    keep = [line.split(" = ")[0] if " = " in line else line for line in lines]
    return sorted(line for line in keep if line.startswith(("for (", "tc_matmul", "A_s[", "B_s[", "C_l[")))


def test_a_tile_that_crosses_no_edge_needs_no_a_copy():
    """With tiles that divide the tensor the A tile is never written: neither copied nor allocated."""
    source = tilecraft.compile(tiled_gemm(384, 256, 256), target="cpu").get_kernel_source()
    assert "A_s" not in source, source[source.index("static void gemm_kernel0") :]


@pytest.mark.parametrize(
    "m, n, k, dtype, transpose_a",
    [
        (1000, 1000, 1000, "float32", False),  # edges in m, n and k: A_s and the predicated panel copy
        (200, 256, 300, "float32", True),  # A transposed, read in place through its strides
        (130, 136, 100, "float64", False),  # 8-column panels of doubles
        (100, 72, 64, "float16", False),  # staged operands: no panels, no A in place
    ],
)
def test_results_match_numpy(m, n, k, dtype, transpose_a):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((k, m) if transpose_a else (m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = np.full((m, n), np.nan, dtype)
    kernel = tilecraft.compile(tiled_gemm(m, n, k, bm=48, bn=64, bk=64, dtype=dtype, transpose_a=transpose_a),
                               target="cpu")  # fmt: skip
    kernel(a, b, c)
    ref = (a.T if transpose_a else a).astype(np.float64) @ b.astype(np.float64)
    tol = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-12}[dtype]
    assert np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref) < tol


@pytest.mark.parametrize("grid", [(5, 7, 2), (3, 2, 1), (9, 1, 1), (1, 6, 1)])
def test_every_block_runs_once_in_the_strip_order(grid):
    """The host walks the grid in strips of rows of by (docs/cpu.md): each block still runs exactly once,
    with its own indices."""
    g0, g1, g2 = grid

    @T.prim_func
    def mark(Out: T.Tensor((g2, g1, g0, 3), "int32"), Count: T.Tensor((1,), "int32")):
        with T.Kernel(g0, g1, g2, threads=32) as (bx, by, bz):
            Out[bz, by, bx, 0] = bx
            Out[bz, by, bx, 1] = by
            Out[bz, by, bx, 2] = bz
            T.atomic_add(Count[0], 1)

    out = np.full((g2, g1, g0, 3), -1, np.int32)
    count = np.zeros(1, np.int32)
    tilecraft.compile(mark, target="cpu")(out, count)
    z, y, x = np.meshgrid(np.arange(g2), np.arange(g1), np.arange(g0), indexing="ij")
    assert (out[..., 0] == x).all() and (out[..., 1] == y).all() and (out[..., 2] == z).all()
    assert count[0] == g0 * g1 * g2
