"""How a T.gemm runs on an AMD GPU: MFMA 16x16 tiles over a grid of wavefronts where the arch, dtypes,
shapes and operand placement allow it, a per-work-item FMA loop otherwise; and the accumulator layout
the MFMA choice imposes.

MFMA takes float16 x float16 and bfloat16 x bfloat16 into float32 (16x16x16, CDNA2 and newer), and
float8 (e4m3fn / e5m2 in any pairing) into float32 (16x16x32) where the arch has fp8 MFMA (gfx942,
gfx950). A comes from a shared tile or a fragment (staged through a shared tile by the lowering), B
from a shared tile; both whole 2-D buffers; C a fragment; M and N powers of two that split into 16x16
tiles per wavefront, K a multiple of the instruction's K. Where K is a multiple of twice that, each
lane reads 16 bytes of k at once for two MFMAs (`kpack`). The shared operand tiles of an MFMA gemm are
laid out in LDS without bank conflicts (lds_layout.py), a strict layout like the accumulator's.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.hip.intrinsics.mfma_layouts import MFMA_TILE, mfma_accumulator
from tilecraft.hip.lds_layout import operand_layout
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import BufferRegion
from tilecraft.layout.linear import is_power_of_two
from tilecraft.layout.tile import TileLayout
from tilecraft.transform.simt.gemm import gemm_shape
from tilecraft.transform.tile_loops import whole_region

SHARED = ("shared", "shared.dyn")
FRAGMENT = "local.fragment"
HALF_KINDS = {"float16": "f16", "bfloat16": "bf16"}
INSTRUCTION_K = {"f16": 16, "bf16": 16, "fp8": 32}


@dataclass(frozen=True)
class GemmPlan:
    m: int
    n: int
    k: int
    waves_m: int
    waves_n: int
    kind: str  # "f16", "bf16", "fp8" (MFMA) or "fma"
    c_layout: TileLayout | None
    kpack: bool = False  # 16 bytes of k per lane and read, two MFMAs' worth

    @property
    def mfma(self) -> bool:
        return self.kind != "fma"


def whole_2d(region: BufferRegion) -> bool:
    """The region is all of a 2-D buffer."""
    return len(region.buffer.shape) == 2 and whole_region(region)


def instruction_kind(op: S.Gemm, target) -> str | None:
    """The MFMA form for the gemm's dtypes on the target's arch (its capabilities' matrix instructions),
    or None."""
    caps = target.capabilities
    a, b, c = op.a.dtype, op.b.dtype, op.c.dtype

    def mfma(dtype) -> bool:
        instruction = caps.matrix_instruction("mfma", dtype.name)
        return instruction is not None and c.name in instruction.accumulators

    if a == b and a.name in HALF_KINDS and mfma(a):
        return HALF_KINDS[a.name]
    if a.kind == "float8" and b.kind == "float8" and mfma(a) and mfma(b):
        return "fp8"
    return None


def wave_grid(policy: S.GemmWarpPolicy, waves: int, m: int, n: int) -> tuple[int, int] | None:
    """(waves_m, waves_n) whose per-wave tiles are 16x16 MFMA tiles, as the policy prefers; None if none fits."""
    return policy.split(waves, lambda wm, wn: m % (MFMA_TILE * wm) == 0 and n % (MFMA_TILE * wn) == 0, m, n)


def _placement_ok(op: S.Gemm) -> bool:
    a_ok = op.a.buffer.scope == FRAGMENT or (op.a.buffer.scope in SHARED and whole_2d(op.a))
    b_ok = op.b.buffer.scope in SHARED and whole_2d(op.b)
    return a_ok and b_ok and op.c.buffer.scope == FRAGMENT and len(op.a.buffer.shape) == 2


def plan_gemm(op: S.Gemm, threads: int, target, width: int | None = None) -> GemmPlan:
    """How `op` runs for a work-group of `threads` work-items on `target`, lowered with thread groups
    of `width` (the target's wavefront unless narrowed: see pipeline.py); MFMA needs whole wavefronts."""
    m, n, k = gemm_shape(op, target)
    kind = instruction_kind(op, target)
    if width is None:
        width = target.attr("wavefront")
    if width != target.attr("wavefront"):
        kind = None
    shapes = is_power_of_two(m) and is_power_of_two(n)
    if kind is not None and shapes and k % INSTRUCTION_K[kind] == 0 and _placement_ok(op):
        waves = threads // width
        grid = (
            wave_grid(op.policy, waves, m, n) if waves * width == threads and is_power_of_two(waves) else None
        )
        if grid is not None:
            layout = TileLayout((m, n), mfma_accumulator(m, n, *grid))
            return GemmPlan(m, n, k, grid[0], grid[1], kind, layout, k % (2 * INSTRUCTION_K[kind]) == 0)
    return GemmPlan(m, n, k, 1, 1, "fma", None)


def hip_strict_layouts(op: S.TileOp, threads: int, target, width: int | None = None):
    """The layouts MFMA imposes, for the shared `infer-layouts`: the accumulator of an MFMA gemm, and the
    LDS layout of its shared operand tiles."""
    if isinstance(op, S.Gemm):
        plan = plan_gemm(op, threads, target, width)
        if plan.c_layout is not None:
            yield op.c.buffer, plan.c_layout, "the accumulator of T.gemm (MFMA)"
            for region in (op.a, op.b):
                layout = operand_layout(region.buffer) if region.buffer.scope in SHARED else None
                if layout is not None:
                    yield region.buffer, layout, "an MFMA operand tile of T.gemm"
