"""The MFMA gemm's layout math, checked in a pure-Python model against NumPy (no AMD GPU runs here).

The model has two halves. `mfma` is the instruction as AMD's CDNA3 ISA guide defines its lanes (which
element of A, B and D each of the 64 lanes holds; `mfma_layouts.mfma_operand_*_coords`). `gemm` is
tc_mfma.h's `tc::mfma_gemm` loop, statement for statement: which wavefront owns which tiles, which
elements each lane loads per k step (one MFMA's k, or with `kpack` 2 MFMAs' k read at once: lane l
feeds k0 + 2E * (l / 16) + E * h + i to MFMA h of the step), and which accumulator register each MFMA
result lands in. The
product, read back through the compiler's `mfma_accumulator` layout (what every other op of the kernel
uses to find an element of C), must be A @ B. What the model cannot check is the hardware itself: that
the instructions behave as the ISA guide says is taken on trust until the kernels run on a GPU.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from tilecraft.hip.intrinsics.mfma_layouts import (
    WAVEFRONT,
    mfma_accumulator,
    mfma_accumulator_coords,
    mfma_operand_a_coords,
    mfma_operand_b_coords,
)


def mfma(a_lanes: np.ndarray, b_lanes: np.ndarray, c_lanes: np.ndarray, per_lane: int) -> np.ndarray:
    """One 16x16xK MFMA over a wavefront: a_lanes, b_lanes (64, per_lane), c_lanes (64, 4) -> d (64, 4)."""
    k = 4 * per_lane
    a, b = np.zeros((16, k)), np.zeros((k, 16))
    for lane, i in itertools.product(range(WAVEFRONT), range(per_lane)):
        a[mfma_operand_a_coords(lane, i, per_lane)] = a_lanes[lane, i]
        b[mfma_operand_b_coords(lane, i, per_lane)] = b_lanes[lane, i]
    c = np.zeros((16, 16))
    for lane, i in itertools.product(range(WAVEFRONT), range(4)):
        c[(lane // 16) * 4 + i, lane % 16] = c_lanes[lane, i]
    d = a @ b + c
    return np.array([[d[(lane // 16) * 4 + i, lane % 16] for i in range(4)] for lane in range(WAVEFRONT)])


def element(x: np.ndarray, trans: bool, r: int, c: int) -> float:
    """tc::at: element (r, c) of op(X), X stored transposed when `trans`."""
    return x[c, r] if trans else x[r, c]


def k_of(lane: int, per_lane: int, packs: int, h: int) -> int:
    """The first k of its step that lane `lane` feeds to MFMA `h` of the step (`packs` MFMAs a read)."""
    return lane // 16 * per_lane * packs + h * per_lane


def a_of(a, ta, row: int, k0: int, lane: int, per_lane: int, packs: int = 1, h: int = 0) -> list[float]:
    """The A elements lane `lane` loads for MFMA `h` of the step `k0` whose tile starts at `row`."""
    kq = k_of(lane, per_lane, packs, h)
    return [element(a, ta, row + lane % 16, k0 + kq + i) for i in range(per_lane)]


def b_of(b, tb, col: int, k0: int, lane: int, per_lane: int, packs: int = 1, h: int = 0) -> list[float]:
    kq = k_of(lane, per_lane, packs, h)
    return [element(b, tb, k0 + kq + i, col + lane % 16) for i in range(per_lane)]


def gemm(a, b, c_regs, m, n, k, wm, wn, ta, tb, per_lane=4, kpack=False):
    """tc::mfma_gemm for every wavefront: c_regs (threads, registers) += op(A) @ op(B), in place."""
    tm, tn = m // wm // 16, n // wn // 16
    packs = 2 if kpack else 1
    for wave in range(wm * wn):
        row0, col0 = wave // wn * (m // wm), wave % wn * (n // wn)
        lanes = range(WAVEFRONT)
        acc = {t: np.array([c_regs[wave * WAVEFRONT + lane, 4 * t : 4 * t + 4] for lane in lanes])
               for t in range(tm * tn)}  # fmt: skip
        for k0 in range(0, k, 4 * per_lane * packs):
            for mi, ni, h in itertools.product(range(tm), range(tn), range(packs)):
                a_lanes = np.array(
                    [a_of(a, ta, row0 + mi * 16, k0, lane, per_lane, packs, h) for lane in lanes]
                )
                b_lanes = np.array(
                    [b_of(b, tb, col0 + ni * 16, k0, lane, per_lane, packs, h) for lane in lanes]
                )
                acc[mi * tn + ni] = mfma(a_lanes, b_lanes, acc[mi * tn + ni], per_lane)
        for t, lane in itertools.product(range(tm * tn), lanes):
            c_regs[wave * WAVEFRONT + lane, 4 * t : 4 * t + 4] = acc[t][lane]


def read_through_layout(c_regs, m, n, wm, wn) -> np.ndarray:
    """C as the compiler sees it: each (register, lane, wave) at the element `mfma_accumulator` names."""
    layout = mfma_accumulator(m, n, wm, wn)
    out = np.full((m, n), np.nan)
    for thread, reg in itertools.product(range(wm * wn * WAVEFRONT), range(c_regs.shape[1])):
        at = layout.apply(register=reg, lane=thread % WAVEFRONT, warp=thread // WAVEFRONT)
        assert np.isnan(out[at["dim0"], at["dim1"]]), "two registers hold one element"
        out[at["dim0"], at["dim1"]] = c_regs[thread, reg]
    return out


SHAPES = [  # m, n, k, waves_m, waves_n, trans_a, trans_b
    (16, 16, 16, 1, 1, False, False),
    (32, 64, 32, 2, 1, False, True),
    (64, 32, 16, 1, 2, True, False),
    (64, 64, 32, 2, 2, True, True),
    (128, 32, 16, 4, 1, False, False),
]


@pytest.mark.parametrize("kpack", [False, True], ids=["one_mfma_per_read", "kpack"])
@pytest.mark.parametrize("m, n, k, wm, wn, ta, tb", SHAPES)
def test_the_gemm_loop_and_the_accumulator_layout_compute_a_times_b(m, n, k, wm, wn, ta, tb, kpack):
    if kpack and k % 32:
        pytest.skip("k-packing needs k a multiple of 32")
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    a = rng.standard_normal((k, m) if ta else (m, k))
    b = rng.standard_normal((n, k) if tb else (k, n))
    c0 = rng.standard_normal((m, n))
    regs = m * n // (wm * wn * WAVEFRONT)
    c_regs = np.empty((wm * wn * WAVEFRONT, regs))
    layout = mfma_accumulator(m, n, wm, wn)
    for thread, reg in itertools.product(range(c_regs.shape[0]), range(regs)):
        at = layout.apply(register=reg, lane=thread % WAVEFRONT, warp=thread // WAVEFRONT)
        c_regs[thread, reg] = c0[at["dim0"], at["dim1"]]
    gemm(a, b, c_regs, m, n, k, wm, wn, ta, tb, kpack=kpack)
    expected = c0 + (a.T if ta else a) @ (b.T if tb else b)
    np.testing.assert_allclose(read_through_layout(c_regs, m, n, wm, wn), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("m, n, wm, wn", [(32, 64, 2, 1), (64, 64, 2, 2), (16, 128, 1, 4)])
def test_the_plain_formulas_match_the_linear_layout(m, n, wm, wn):
    layout = mfma_accumulator(m, n, wm, wn)
    for thread, reg in itertools.product(range(wm * wn * WAVEFRONT), range(m * n // (wm * wn * WAVEFRONT))):
        at = layout.apply(register=reg, lane=thread % WAVEFRONT, warp=thread // WAVEFRONT)
        assert (at["dim0"], at["dim1"]) == mfma_accumulator_coords(thread, reg, m, n, wm, wn)


@pytest.mark.parametrize("m, n, wm, wn", [(48, 16, 1, 1), (16, 16, 2, 1), (16, 96, 1, 2)])
def test_tiles_that_do_not_split_into_16x16_per_wave_are_refused(m, n, wm, wn):
    with pytest.raises(ValueError, match="mfma_accumulator"):
        mfma_accumulator(m, n, wm, wn)


# ---------------------------------------------------------------- fp8 on a FNUZ arch (gfx942)

FORMATS = {
    False: (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz),
    True: (ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz),
}


def fnuz_byte(b: int, e5m2: bool) -> int:
    """tc::fnuz_byte."""
    special = (b & 0x7C) == 0x7C if e5m2 else (b & 0x7F) == 0x7F
    return 0x80 if special else (0 if b == 0x80 else b)


@pytest.mark.parametrize("e5m2", [False, True], ids=["e4m3fn", "e5m2"])
def test_every_ocp_byte_read_as_fnuz_is_half_its_value(e5m2):
    ocp, fnuz = FORMATS[e5m2]
    for b in range(256):
        value = float(np.array([b], np.uint8).view(ocp)[0])
        seen = float(np.array([fnuz_byte(b, e5m2)], np.uint8).view(fnuz)[0])
        if np.isnan(value) or np.isinf(value):
            assert np.isnan(seen), f"byte {b:#04x}: {value} must stay NaN, not {seen}"
        else:
            assert seen * 2 == value, f"byte {b:#04x}: {value} read as {seen}"


@pytest.mark.parametrize("kpack", [False, True], ids=["one_mfma_per_read", "kpack"])
@pytest.mark.parametrize("e5m2_a, e5m2_b", [(False, False), (False, True), (True, False), (True, True)])
def test_the_fp8_gemm_through_fnuz_bytes_and_the_quarter_scale_is_a_times_b(e5m2_a, e5m2_b, kpack):
    m, n, k, wm, wn = 32, 32, 64, 1, 2
    rng = np.random.default_rng(8)
    a8 = (rng.standard_normal((m, k)) * 4).astype(FORMATS[e5m2_a][0])
    b8 = (rng.standard_normal((k, n)) * 4).astype(FORMATS[e5m2_b][0])

    def as_hardware_reads(x8, e5m2):
        fixed = np.vectorize(lambda b: fnuz_byte(int(b), e5m2))(x8.view(np.uint8)).astype(np.uint8)
        return fixed.view(FORMATS[e5m2][1]).astype(np.float64)

    c0 = rng.standard_normal((m, n))
    regs = m * n // (wm * wn * WAVEFRONT)
    c_regs = np.empty((wm * wn * WAVEFRONT, regs))
    layout = mfma_accumulator(m, n, wm, wn)
    for thread, reg in itertools.product(range(c_regs.shape[0]), range(regs)):
        at = layout.apply(register=reg, lane=thread % WAVEFRONT, warp=thread // WAVEFRONT)
        c_regs[thread, reg] = c0[at["dim0"], at["dim1"]] * 0.25
    gemm(
        as_hardware_reads(a8, e5m2_a),
        as_hardware_reads(b8, e5m2_b),
        c_regs,
        m,
        n,
        k,
        wm,
        wn,
        False,
        False,
        8,
        kpack,
    )
    expected = c0 + a8.astype(np.float64) @ b8.astype(np.float64)
    np.testing.assert_allclose(
        read_through_layout(c_regs / 0.25, m, n, wm, wn), expected, rtol=1e-12, atol=1e-12
    )
