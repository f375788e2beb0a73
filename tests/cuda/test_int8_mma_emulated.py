"""tc::gemm_ss_i8 / gemm_rs_i8 (include/tc_cuda.h) run on the host: the templates' own text, compiled with
g++, with `ldmatrix` emulated across the lanes of a warp and `mma.sync.m16n8k32 .s8/.u8` replaced by a
recorder. Every thread runs the gemm twice: the first time records the shared address each lane gives
each ldmatrix (control flow does not depend on the data), the second builds every lane's registers from
the rows its warp's lanes address, as the instruction does. The recorded operand registers of each
warp-wide mma are assembled into its 16x32 and 32x8 tiles by the PTX ISA's fragment tables (restated
below), multiplied exactly and scattered to the int32 accumulator registers. The shared tiles are written
with the compiler's byte layout (`swizzle16(row_length, 1)`, tilecraft/cuda/shared_layout.py), the
register A operand with `mma_operand_a_i8`, and C read back with `mma_accumulator`: so the templates,
the layouts the compiler imposes and the ISA agree, signed and unsigned, over several warp grids."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tilecraft.cuda.intrinsics.mma_layouts import mma_accumulator_coords, mma_operand_a_i8_coords
from tilecraft.cuda.shared_layout import swizzle16

HEADER = Path(__file__).resolve().parents[2] / "tilecraft" / "cuda" / "include" / "tc_cuda.h"

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to compile the host emulation")

# ---------------------------------------------------------------- the ISA, restated
# PTX ISA, "Matrix Fragments for mma.m16n8k32", .s8/.u8 A and B, .s32 C/D; groupID = lane >> 2,
# threadID_in_group = lane % 4. Register q of A holds bytes 4q..4q+3, of B bytes 4q..4q+3.


def isa_a(lane: int, i: int) -> tuple[int, int]:
    """(row, k) of a_i (i = 0..15) in the 16x32 A tile."""
    return lane // 4 + 8 * ((i >> 2) & 1), (lane % 4) * 4 + (i & 3) + 16 * (i >> 3)


def isa_b(lane: int, i: int) -> tuple[int, int]:
    """(k, n) of b_i (i = 0..7) in the 32x8 B tile."""
    return (lane % 4) * 4 + (i & 3) + 16 * (i >> 2), lane // 4


def isa_c(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of c_i (i = 0..3) in the 16x8 accumulator tile."""
    return lane // 4 + 8 * (i >> 1), (lane % 4) * 2 + (i & 1)


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
static int32_t* tc_c_base;
static int tc_pass;
static size_t tc_next;
static std::vector<const void*> tc_rows[THREADS];  // the address each thread gave each ldmatrix
struct TcCall { uint32_t a[4], b[2]; long c; };
static std::vector<TcCall> tc_calls;
// ldmatrix.x4 (b16, not transposed): register q of lane l is the 32-bit word l % 4 of row l / 4 of matrix
// q, whose row j the lane 8q + j of the warp addresses.
static void tc_ldmatrix_x4(uint32_t* r, const void* smem) {
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    if (tc_pass == 0) {
        tc_rows[t].push_back(smem);
        r[0] = r[1] = r[2] = r[3] = 0;
        return;
    }
    const size_t call = tc_next++;
    for (int q = 0; q < 4; ++q) {
        const uint8_t* row = (const uint8_t*)tc_rows[warp * 32 + q * 8 + lane / 4][call];
        std::memcpy(&r[q], row + 4 * (lane % 4), 4);
    }
}
static void tc_ldmatrix_x4_trans(uint32_t* r, const void* smem) { tc_ldmatrix_x4(r, smem); }
template <bool BF16>
static void tc_mma_16816(float*, const uint32_t*, const uint32_t*) {}
template <bool A_U8, bool B_U8>
static void tc_mma_16832_i8(int32_t* c, const uint32_t* a, const uint32_t* b) {
    TcCall call;
    std::memcpy(call.a, a, sizeof call.a);
    std::memcpy(call.b, b, sizeof call.b);
    call.c = c - tc_c_base;
    tc_calls.push_back(call);
}
"""

MAIN = r"""
int main() {
    static uint8_t A[A_BYTES], B[B_BYTES];
    static int32_t C[CREGS];
    for (int i = 0; i < A_BYTES; ++i) { unsigned v; std::scanf("%u", &v); A[i] = (uint8_t)v; }
    for (int i = 0; i < B_BYTES; ++i) { unsigned v; std::scanf("%u", &v); B[i] = (uint8_t)v; }
    for (tc_pass = 0; tc_pass < 2; ++tc_pass) {
        for (int t = 0; t < THREADS; ++t) {
            threadIdx.x = t;
            tc_c_base = C;
            tc_next = 0;
            tc_calls.clear();
            CALL;
            if (tc_pass == 0) continue;
            std::printf("thread %d %zu\n", t, tc_calls.size());
            for (const TcCall& k : tc_calls)
                std::printf("%u %u %u %u %u %u %ld\n", k.a[0], k.a[1], k.a[2], k.a[3], k.b[0], k.b[1], k.c);
        }
    }
}
"""


def _between(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i)]


def _templates() -> str:
    """The parts of the device header the 8-bit templates use: the mma step structs, the 16-bit swizzle
    and operand addressing, and the gemm templates."""
    text = HEADER.read_text()
    steps = _between(text, "// The mma step the gemm templates run", "// The shared-memory layout of 16-bit")
    swizzle = _between(text, "// The shared-memory layout of 16-bit", "// TF32 (sm_80 and newer)")
    gemms = _between(text, "namespace tc {", "// ------------------------------------------------------------------ TF32 operands")
    return steps + swizzle + gemms + "}\n"


def _run(tmp_path: Path, defines: dict, call: str, a_bytes: np.ndarray, b_bytes: np.ndarray) -> str:
    source = tmp_path / "emulate.cpp"
    head = "".join(f"#define {k} {v}\n" for k, v in defines.items())
    source.write_text(head + PRELUDE + _templates() + f"#define CALL {call}\n" + MAIN)
    exe = tmp_path / "emulate"
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(exe), str(source)], check=True, capture_output=True)
    data = " ".join(str(int(v)) for v in np.concatenate([a_bytes.ravel(), b_bytes.ravel()]))
    return subprocess.run([str(exe)], input=data, capture_output=True, text=True, check=True).stdout


def _as_bytes(words: list[int], signed: bool) -> np.ndarray:
    raw = np.array(words, np.uint32).view(np.uint8)
    return raw.view(np.int8).astype(np.int64) if signed else raw.astype(np.int64)


def _replay(output: str, threads: int, cregs: int, a_signed: bool, b_signed: bool) -> np.ndarray:
    """Each thread's accumulator registers after the recorded instructions, per the ISA tables."""
    per_thread: list[list[list[int]]] = []
    lines = iter(output.splitlines())
    for line in lines:
        count = int(re.match(r"thread \d+ (\d+)", line).group(1))
        per_thread.append([[int(x) for x in next(lines).split()] for _ in range(count)])
    c = np.zeros((threads, cregs), np.int64)
    for warp in range(threads // 32):
        lanes = per_thread[warp * 32 : warp * 32 + 32]
        for step in range(len(lanes[0])):
            a, b = np.zeros((16, 32), np.int64), np.zeros((32, 8), np.int64)
            calls = [recorded[step] for recorded in lanes]
            for lane, call in enumerate(calls):
                a_values, b_values = _as_bytes(call[:4], a_signed), _as_bytes(call[4:6], b_signed)
                for i in range(16):
                    a[isa_a(lane, i)] = a_values[i]
                for i in range(8):
                    b[isa_b(lane, i)] = b_values[i]
            d = a @ b
            for lane, call in enumerate(calls):
                for i in range(4):
                    c[warp * 32 + lane, call[6] + i] += d[isa_c(lane, i)]
    return c


def _codes(rng, signed: bool, shape) -> np.ndarray:
    return rng.integers(-128, 128, size=shape) if signed else rng.integers(0, 256, size=shape)


def _swizzled(tile: np.ndarray) -> np.ndarray:
    """The tile's bytes as stored: element (r, c) at swizzle16(row length, 1 byte).offset(r * W + c)."""
    rows, width = tile.shape
    layout = swizzle16(width, 1)
    out = np.empty(rows * width, np.int64)
    for flat in range(rows * width):
        out[layout.offset(flat)] = tile.ravel()[flat]
    return out & 0xFF


def _check(c_regs: np.ndarray, expected: np.ndarray, m: int, n: int, warps_m: int, warps_n: int) -> None:
    got = np.full((m, n), -(2**40), np.int64)
    for thread in range(c_regs.shape[0]):
        for reg in range(c_regs.shape[1]):
            got[mma_accumulator_coords(thread, reg, m, n, warps_m, warps_n)] = c_regs[thread, reg]
    np.testing.assert_array_equal(got, expected)


CONFIGS = [
    # m, n, k, warps_m, warps_n
    (16, 16, 32, 1, 1),
    (32, 32, 128, 2, 2),
    (64, 32, 64, 2, 2),
    (32, 64, 96, 1, 4),
]
SIGNS = [(True, True), (False, False), (False, True), (True, False)]


@pytest.mark.parametrize("a_signed, b_signed", SIGNS)
@pytest.mark.parametrize("m, n, k, warps_m, warps_n", CONFIGS)
def test_gemm_ss_i8_matches_exact_product(tmp_path, m, n, k, warps_m, warps_n, a_signed, b_signed):
    """C = A @ B^T exactly, A (M, K) and B (N, K) bytes in swizzled shared tiles, C in the mma layout."""
    rng = np.random.default_rng(m * 7 + n * 3 + k + a_signed * 2 + b_signed)
    a, b = _codes(rng, a_signed, (m, k)), _codes(rng, b_signed, (n, k))
    threads = 32 * warps_m * warps_n
    cregs = (m // warps_m // 16) * (n // warps_n // 8) * 4
    defines = {"THREADS": threads, "CREGS": cregs, "A_BYTES": m * k, "B_BYTES": n * k}
    flags = f"{str(not a_signed).lower()}, {str(not b_signed).lower()}"
    call = f"tc::gemm_ss_i8<{m}, {n}, {k}, {warps_m}, {warps_n}, {flags}>(A, B, C)"
    out = _run(tmp_path, defines, call, _swizzled(a), _swizzled(b))
    _check(_replay(out, threads, cregs, a_signed, b_signed), a @ b.T, m, n, warps_m, warps_n)


@pytest.mark.parametrize("a_signed, b_signed", SIGNS[:2])
@pytest.mark.parametrize("m, n, k, warps_m, warps_n", CONFIGS)
def test_gemm_rs_i8_matches_exact_product(tmp_path, m, n, k, warps_m, warps_n, a_signed, b_signed):
    """As above with A in registers in mma_operand_a_i8 (the layout layout inference gives the fragment)."""
    rng = np.random.default_rng(m * 5 + n + k + a_signed)
    a, b = _codes(rng, a_signed, (m, k)), _codes(rng, b_signed, (n, k))
    threads = 32 * warps_m * warps_n
    regs = (m // warps_m // 16) * (k // 32) * 16
    a_regs = np.array(
        [[a[mma_operand_a_i8_coords(t, r, m, k, warps_m, warps_n)] for r in range(regs)] for t in range(threads)]
    )
    cregs = (m // warps_m // 16) * (n // warps_n // 8) * 4
    defines = {"THREADS": threads, "CREGS": cregs, "A_BYTES": threads * regs, "B_BYTES": n * k}
    flags = f"{str(not a_signed).lower()}, {str(not b_signed).lower()}"
    call = (f"tc::gemm_rs_i8<{m}, {n}, {k}, {warps_m}, {warps_n}, {flags}>"
            f"((const uint32_t*)(A + threadIdx.x * {regs}), B, C)")  # fmt: skip
    out = _run(tmp_path, defines, call, a_regs & 0xFF, _swizzled(b))
    _check(_replay(out, threads, cregs, a_signed, b_signed), a @ b.T, m, n, warps_m, warps_n)
