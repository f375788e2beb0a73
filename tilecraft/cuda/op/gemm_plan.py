"""How a T.gemm runs on CUDA: the warp grid its policy picks, tensor cores or FMA, and the layouts that
choice imposes on the accumulator (and on a register-resident A operand)."""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.layout.fragment import mma_accumulator, mma_operand_a
from tilecraft.layout.linear import is_power_of_two
from tilecraft.layout.tile import TileLayout
from tilecraft.transform.simt.gemm import gemm_shape

MMA_INPUTS = ("float16", "bfloat16")
SHARED = ("shared", "shared.dyn")


@dataclass(frozen=True)
class GemmPlan:
    m: int
    n: int
    k: int
    warps_m: int
    warps_n: int
    tensor_cores: bool
    variant: str
    c_layout: TileLayout | None
    a_layout: TileLayout | None


def warp_grid(policy: S.GemmWarpPolicy, warps: int, m: int, n: int) -> tuple[int, int] | None:
    """(warps_m, warps_n) with 16-row and 16-column warp tiles, as the policy prefers; None if none fits."""
    options = []
    wm = 1
    while wm <= warps:
        wn = warps // wm
        if m % (16 * wm) == 0 and n % (16 * wn) == 0:
            options.append((wm, wn))
        wm *= 2
    if not options:
        return None
    if policy is S.GemmWarpPolicy.FullRow:
        return max(options)
    if policy is S.GemmWarpPolicy.FullCol:
        return min(options)
    return min(options, key=lambda g: (abs(m // g[0] - n // g[1]), -g[0]))


def _tensor_core_ok(op: S.Gemm, m: int, n: int, k: int) -> bool:
    a, b, c = op.a.dtype, op.b.dtype, op.c.dtype
    shapes = all(is_power_of_two(x) for x in (m, n)) and k % 16 == 0
    placement = op.b.buffer.scope in SHARED and op.a.buffer.scope in (*SHARED, "local.fragment")
    return a.name in MMA_INPUTS and a == b and c.name == "float32" and shapes and placement


def plan_gemm(op: S.Gemm, threads: int, target) -> GemmPlan:
    m, n, k = gemm_shape(op, target)
    warps = threads // 32
    grid = warp_grid(op.policy, warps, m, n)
    register_a = op.a.buffer.scope == "local.fragment"
    if grid is not None and _tensor_core_ok(op, m, n, k):
        wm, wn = grid
        if register_a and op.transpose_a:
            raise LoweringError(
                "a register-resident A operand cannot be transposed on the tensor-core path",
                op.span,
                "store A untransposed (T.copy it into a fragment of shape (M, K)), or copy it to shared memory",
                target=target,
            )
        c_layout = TileLayout((m, n), mma_accumulator(m, n, wm, wn))
        # Every warp reads whole rows of A, so the warps_n warps sharing a row block hold copies of it.
        a_layout = TileLayout((m, k), mma_operand_a(m, k, wm, wn)) if register_a else None
        return GemmPlan(m, n, k, wm, wn, True, "rs" if register_a else "ss", c_layout, a_layout)
    if register_a:
        raise LoweringError(
            "a register-resident A operand is only supported on the tensor-core path (float16/bfloat16 "
            "operands, float32 accumulator, power-of-two tiles with K a multiple of 16)",
            op.span,
            "copy A to shared memory first",
            target=target,
        )
    return GemmPlan(m, n, k, 1, 1, False, "fma", None, None)
