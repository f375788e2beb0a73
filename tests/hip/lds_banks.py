"""A model of the LDS banks of gfx90a and gfx942, and of the LDS instructions tc_mfma.h's gemm issues.

Banks: 32 of 4 bytes, bank = byte address / 4 % 32. A wavefront instruction is served in phases (the
lane groups of `PHASES`; sources in tilecraft/hip/lds_layout.py); a phase takes one cycle unless lanes
of it touch different dwords of one bank, and then as many as the most dwords any bank holds (lanes on
the same dword share it). `cycles` counts the cycles of one instruction, `extra` those beyond one per
phase: the conflicts.

`gemm_reads` lists the LDS reads of `tc::mfma_gemm` for one wavefront, instruction by instruction, as
tc_mfma.h issues them (test_mfma_model.py checks the same loop's arithmetic): per MFMA tile and k step,
one 16-byte read per lane of an operand whose k is contiguous in the stored tile, or one element read
per lane and k of one whose M or N is. The copies' writes come from the lowered kernel itself
(test_lds_banks.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

BANKS = 32
WAVE = 64


def _b128_reads() -> list[list[int]]:
    groups = []
    for half in (0, 32):
        for a, b in ((0, 20), (4, 16), (8, 28), (12, 24)):
            groups.append([half + a + i for i in range(4)] + [half + b + i for i in range(4)])
    return groups


PHASES = {
    ("read", 16): _b128_reads(),
    ("write", 16): [list(range(s, s + 8)) for s in range(0, WAVE, 8)],
    ("read", 8): [list(range(s, s + 16)) for s in range(0, WAVE, 16)],
    ("write", 8): [list(range(s, s + 16)) for s in range(0, WAVE, 16)],
}
HALVES = [list(range(0, 32)), list(range(32, 64))]


@dataclass(frozen=True)
class Access:
    """One LDS instruction of a wavefront: `kind` ("read" / "write"), bytes per lane, and each active
    lane's byte address."""

    kind: str
    width: int
    addresses: dict[int, int]


def phases(access: Access) -> list[list[int]]:
    return PHASES.get((access.kind, access.width), HALVES)


def phase_cycles(access: Access) -> list[int]:
    """The cycles of each phase of `access` that has an active lane: the most distinct dwords any
    bank holds among the phase's accesses."""
    out = []
    for group in phases(access):
        dwords: dict[int, set[int]] = {}
        for lane in (lane for lane in group if lane in access.addresses):
            start = access.addresses[lane]
            if start % min(access.width, 4):
                raise ValueError(f"lane {lane}: address {start} is not aligned to {access.width} bytes")
            for word in range(start // 4, (start + access.width + 3) // 4):
                dwords.setdefault(word % BANKS, set()).add(word)
        if dwords:
            out.append(max(len(words) for words in dwords.values()))
    return out


def extra(access: Access) -> int:
    """The cycles `access` takes beyond one per phase: its bank conflicts."""
    return sum(c - 1 for c in phase_cycles(access))


def conflicts(accesses: Iterable[Access]) -> tuple[int, int]:
    """(extra cycles in all, the most ways of any phase) over the instructions."""
    total, ways = 0, 1
    for a in accesses:
        per_phase = phase_cycles(a)
        total += sum(c - 1 for c in per_phase)
        ways = max([ways, *per_phase])
    return total, ways


# ---------------------------------------------------------------- tc::mfma_gemm's reads


@dataclass(frozen=True)
class Operand:
    """How the gemm reads one operand tile: `rows` x `row_length` stored row-major with `element_bytes`
    bytes per element, k along the rows (`k_major`: each stored row holds k) or down the columns."""

    rows: int
    row_length: int
    element_bytes: int
    k_major: bool


def gemm_reads(
    op: Operand, start: int, tiles: int, k: int, kpack: bool, offset: Callable[[int], int]
) -> list[Access]:
    """The reads of one operand by one wavefront: `tiles` 16-row (or -column) MFMA tiles from `start`,
    `k` deep, `kpack` (16 bytes of k per lane: two MFMAs per read) or one MFMA's k per lane (8 bytes);
    `offset` maps a row-major element offset to where the layout stores it."""
    e = op.element_bytes
    per_lane = (16 if kpack else 8) // e  # k per lane per read step
    step = 4 * per_lane  # k per step across the 4 lane groups

    def element(mn0: int, k0: int, lane: int, i: int) -> int:
        mn, kk = mn0 + lane % 16, k0 + (lane // 16) * per_lane + i
        r, c = (mn, kk) if op.k_major else (kk, mn)
        return offset(r * op.row_length + c) * e

    out = []
    for mn0 in range(start, start + 16 * tiles, 16):
        for k0 in range(0, k, step):
            if op.k_major:  # one read of 16 bytes (kpack) or of one MFMA's 8 bytes (ds_read_b64)
                out.append(
                    Access(
                        "read", 16 if kpack else 8, {lane: element(mn0, k0, lane, 0) for lane in range(WAVE)}
                    )
                )
            else:
                for i in range(per_lane):
                    out.append(Access("read", e, {lane: element(mn0, k0, lane, i) for lane in range(WAVE)}))
    return out
