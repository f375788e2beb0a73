"""tc::gemm_ss_tf32 / gemm_rs_tf32 (include/tc_cuda.h) run on the host: the templates' own text, compiled with
g++, with `mma.sync.m16n8k8 .tf32` replaced by a recorder. Every thread of the block runs the gemm; the
recorded operand registers of each warp-wide instruction are assembled into its 16x8 and 8x8 tiles by the
PTX ISA's fragment tables (restated below), multiplied, and scattered to the accumulator registers. The
shared tiles are written with the compiler's swizzle32 layout (tilecraft/cuda/shared_layout.py), the
register A operand with mma_operand_a_tf32, and C read back with mma_accumulator: so the templates, the
layouts the compiler imposes and the ISA agree, for every transpose pair and several warp grids."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tilecraft.cuda.intrinsics.mma_layouts import mma_accumulator_coords, mma_operand_a_tf32_coords
from tilecraft.cuda.shared_layout import swizzle32

HEADER = Path(__file__).resolve().parents[2] / "tilecraft" / "cuda" / "include" / "tc_cuda.h"

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to compile the host emulation")

# ---------------------------------------------------------------- the ISA, restated
# PTX ISA, "Matrix Fragments for mma.m16n8k8", .tf32 A and B, .f32 C/D; groupID = lane >> 2,
# threadID_in_group = lane % 4.


def isa_a(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of a_i (i = 0..3) in the 16x8 A tile."""
    return lane // 4 + 8 * (i & 1), lane % 4 + 4 * (i >> 1)


def isa_b(lane: int, i: int) -> tuple[int, int]:
    """(k, n) of b_i (i = 0..1) in the 8x8 B tile."""
    return lane % 4 + 4 * i, lane // 4


def isa_c(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of c_i (i = 0..3) in the 16x8 accumulator tile."""
    return lane // 4 + 8 * (i >> 1), (lane % 4) * 2 + (i & 1)


def tf32(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32: round to 10 mantissa bits, to nearest, ties away from zero."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32)
    return rounded.view(np.float32)


# ---------------------------------------------------------------- the host program

PRELUDE = r"""
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>
#define TC_DEVICE static inline
#define __host__
#define __device__
struct TcDim { int x; };
static TcDim threadIdx;
static float* tc_c_base;
struct TcCall { uint32_t a[4], b[2]; long c; };
static std::vector<TcCall> tc_calls;
static uint32_t tc_f2tf32(float x) {  // cvt.rna.tf32.f32 on the host
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    return (bits + 0x1000u) & 0xffffe000u;
}
static void tc_mma_1688_tf32(float* c, const uint32_t* a, const uint32_t* b) {
    TcCall call;
    std::memcpy(call.a, a, sizeof call.a);
    std::memcpy(call.b, b, sizeof call.b);
    call.c = c - tc_c_base;
    tc_calls.push_back(call);
}
"""

MAIN = r"""
int main() {
    static float A[(M_ * K_ > RS_REGS * THREADS) ? M_ * K_ : RS_REGS * THREADS], B[K_ * N_], C[CREGS];
    for (int i = 0; i < (RS ? RS_REGS * THREADS : M_ * K_); ++i) std::scanf("%f", &A[i]);
    for (int i = 0; i < K_ * N_; ++i) std::scanf("%f", &B[i]);
    for (int t = 0; t < THREADS; ++t) {
        threadIdx.x = t;
        tc_c_base = C;
        tc_calls.clear();
        CALL;
        std::printf("thread %d %zu\n", t, tc_calls.size());
        for (const TcCall& k : tc_calls)
            std::printf("%u %u %u %u %u %u %ld\n", k.a[0], k.a[1], k.a[2], k.a[3], k.b[0], k.b[1], k.c);
    }
}
"""


def _between(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i)]


def _templates() -> str:
    """The TF32 part of the device header: its swizzle and the two gemm templates."""
    text = HEADER.read_text()
    swizzle = _between(text, "// The shared-memory layout of TF32 gemm operand tiles", "namespace tc {")
    gemms = _between(text, "TF32 operands: mma.sync m16n8k8", "// -------------------------------------------------"
                     "----------------- float8 operands")  # fmt: skip
    return swizzle + "namespace tc {\n// " + gemms + "}\n"


def _run(tmp_path: Path, defines: dict, call: str, a_values: np.ndarray, b_values: np.ndarray) -> str:
    source = tmp_path / "emulate.cpp"
    head = "".join(f"#define {k} {v}\n" for k, v in defines.items())
    source.write_text(PRELUDE + _templates() + head + f"#define CALL {call}\n" + MAIN)
    exe = tmp_path / "emulate"
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(exe), str(source)], check=True, capture_output=True)
    data = " ".join(f"{v:.9e}" for v in np.concatenate([a_values.ravel(), b_values.ravel()]))
    return subprocess.run([str(exe)], input=data, capture_output=True, text=True, check=True).stdout


def _replay(output: str, threads: int, cregs: int) -> np.ndarray:
    """Each thread's accumulator registers after the recorded instructions, per the ISA tables."""
    per_thread: list[list[list[int]]] = []
    lines = iter(output.splitlines())
    for line in lines:
        count = int(re.match(r"thread \d+ (\d+)", line).group(1))
        per_thread.append([[int(x) for x in next(lines).split()] for _ in range(count)])
    c = np.zeros((threads, cregs), np.float64)
    for warp in range(threads // 32):
        lanes = per_thread[warp * 32 : warp * 32 + 32]
        for step in range(len(lanes[0])):
            a, b = np.zeros((16, 8)), np.zeros((8, 8))
            calls = [recorded[step] for recorded in lanes]
            for lane, call in enumerate(calls):
                regs = np.array(call[:6], np.uint32).view(np.float32)
                for i in range(4):
                    a[isa_a(lane, i)] = regs[i]
                for i in range(2):
                    b[isa_b(lane, i)] = regs[4 + i]
            d = a @ b
            for lane, call in enumerate(calls):
                for i in range(4):
                    c[warp * 32 + lane, call[6] + i] += d[isa_c(lane, i)]
    return c


CONFIGS = [
    # m, n, k, warps_m, warps_n
    (32, 32, 32, 2, 2),
    (16, 32, 16, 1, 4),
    (64, 32, 24, 2, 2),
    (32, 64, 8, 1, 2),
]


@pytest.mark.parametrize("trans_a, trans_b", [(False, True), (False, False), (True, False), (True, True)])
@pytest.mark.parametrize("m, n, k, warps_m, warps_n", CONFIGS)
def test_gemm_ss_tf32_matches_rounded_product(tmp_path, m, n, k, warps_m, warps_n, trans_a, trans_b):
    """C = tf32(op(A)) @ tf32(op(B)) with A and B in swizzled shared tiles, C in the mma layout."""
    rng = np.random.default_rng(m * 7 + n * 3 + k + trans_a * 2 + trans_b)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    a_stored, b_stored = (a.T if trans_a else a), (b.T if trans_b else b)
    threads = 32 * warps_m * warps_n
    cregs = (m // warps_m // 16) * (n // warps_n // 8) * 4
    defines = {"M_": m, "N_": n, "K_": k, "THREADS": threads, "CREGS": cregs, "RS": 0, "RS_REGS": 0}
    flags = f"{str(trans_a).lower()}, {str(trans_b).lower()}"
    call = f"tc::gemm_ss_tf32<{m}, {n}, {k}, {warps_m}, {warps_n}, {flags}>(A, B, C)"
    out = _run(tmp_path, defines, call, _swizzled(a_stored), _swizzled(b_stored))
    c = _replay(out, threads, cregs)
    _check(c, tf32(a).astype(np.float64) @ tf32(b).astype(np.float64), m, n, warps_m, warps_n)


@pytest.mark.parametrize("trans_b", [True, False])
@pytest.mark.parametrize("m, n, k, warps_m, warps_n", CONFIGS)
def test_gemm_rs_tf32_matches_rounded_product(tmp_path, m, n, k, warps_m, warps_n, trans_b):
    """As above with A in registers in mma_operand_a_tf32 (the layout layout inference gives the fragment)."""
    rng = np.random.default_rng(m * 5 + n + k + trans_b)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    threads = 32 * warps_m * warps_n
    regs = (m // warps_m // 16) * (k // 8) * 4
    a_regs = np.array(
        [
            [a[mma_operand_a_tf32_coords(t, r, m, k, warps_m, warps_n)] for r in range(regs)]
            for t in range(threads)
        ]
    )
    cregs = (m // warps_m // 16) * (n // warps_n // 8) * 4
    defines = {"M_": m, "N_": n, "K_": k, "THREADS": threads, "CREGS": cregs, "RS": 1, "RS_REGS": regs}
    call = f"tc::gemm_rs_tf32<{m}, {n}, {k}, {warps_m}, {warps_n}, {str(trans_b).lower()}>(A + threadIdx.x * {regs}, B, C)"
    out = _run(tmp_path, defines, call, a_regs, _swizzled(b.T if trans_b else b))
    c = _replay(out, threads, cregs)
    _check(c, tf32(a).astype(np.float64) @ tf32(b).astype(np.float64), m, n, warps_m, warps_n)


def _swizzled(tile: np.ndarray) -> np.ndarray:
    """The tile as stored in shared memory: element (r, c) at swizzle32(row length).offset(r * W + c)."""
    rows, width = tile.shape
    layout = swizzle32(width)
    out = np.empty(rows * width, np.float32)
    for flat in range(rows * width):
        out[layout.offset(flat)] = tile.ravel()[flat]
    return out


def _check(c_regs: np.ndarray, expected: np.ndarray, m: int, n: int, warps_m: int, warps_n: int) -> None:
    got = np.full((m, n), np.nan)
    for thread in range(c_regs.shape[0]):
        for reg in range(c_regs.shape[1]):
            got[mma_accumulator_coords(thread, reg, m, n, warps_m, warps_n)] = c_regs[thread, reg]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
