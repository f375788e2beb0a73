"""How a T.gemm runs on CUDA: the warp grid its policy picks, tensor cores or FMA, and the layouts that
choice imposes on the accumulator (and on a register-resident A operand).

Variants: "wgmma" (sm_90a: wgmma.mma_async m64nNk16 from canonical swizzled shared tiles, a grid of
warpgroups), "wgmma_rs" (the same with A in registers in wgmma's A-fragment layout), "ss" and "rs"
(mma.sync m16n8k16 through ldmatrix, a grid of warps; for TF32 gemms m16n8k8 with 32-bit shared
loads; for 8-bit integer gemms m16n8k32 into int32, both operands K-major), "fma" (a per-thread loop;
a fragment A is first copied to a shared tile).

A TF32 gemm is one with a float32 operand declared `T.tfloat32` (`Buffer.tf32`, A or B or both; the
other float32) and a float32 accumulator: it runs on mma.sync m16n8k8 .tf32 with the operands rounded to
tf32. A float32 gemm without such an operand stays exact (the FMA loop).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.cuda.intrinsics.mma_layouts import (
    mma_accumulator,
    mma_operand_a,
    mma_operand_a_i8,
    mma_operand_a_tf32,
    wgmma_accumulator,
    wgmma_operand_a,
)
from tilecraft.cuda.shared_layout import wgmma_atom
from tilecraft.cuda.storage import SHARED_SCOPES as SHARED
from tilecraft.cuda.wgmma import MAX_N as MAX_WGMMA_N
from tilecraft.cuda.wgmma import instruction_n
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.nodes import ir_value
from tilecraft.layout.linear import is_power_of_two, next_power_of_two
from tilecraft.layout.tile import TileLayout
from tilecraft.transform.simt.gemm import gemm_shape

MMA_INPUTS = ("float16", "bfloat16")
INT8_INPUTS = ("int8", "uint8")
DISABLE_WGMMA = "tl.disable_wgmma"  # TileLang's pass config: the mma.sync path on sm_90a too
DISABLE_TMA = "tl.disable_tma_lower"  # TileLang's pass config: no TMA loads (cp.async instead)
# TileLang's pass config: no producer warpgroup (the TMA loads issued by the consumers, in program order)
DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
WARPGROUP_THREADS = 128
WGMMA_VARIANTS = ("wgmma", "wgmma_rs")
# Where select-gemm-instructions records its decisions: each gemm's GemmPlan (an S.Gemm annotation), and
# whether a function takes the sm_90a path, wgmma gemms and TMA loads and stores (a PrimFunc attribute).
GEMM_PLAN = "gemm_plan"
WGMMA_PATH = "tilecraft.cuda.wgmma"
SELECTING_PASS = "select-gemm-instructions"
TRANSPOSED_REGISTER_A = (
    "feature:transposed-register-a"  # the limit plan_gemm reports (declared in the manifest)
)


@ir_value
@dataclass(frozen=True)
class GemmPlan:
    """How one T.gemm runs: its shape, the grid of warps (warpgroups on wgmma) it is spread over, the
    variant, and the layouts that imposes on the accumulator and a register A. Decided once per gemm by
    `select-gemm-instructions` (cuda/transform/gemm_instructions.py), which records it on the gemm."""

    m: int
    n: int
    k: int
    warps_m: int
    warps_n: int
    tensor_cores: bool
    variant: str
    c_layout: TileLayout | None
    a_layout: TileLayout | None
    # "wgmma" only (warps_m / warps_n then count warpgroups): the swizzle row width in elements of the
    # A and B tiles' canonical layouts
    atom_a: int = 0
    atom_b: int = 0

    def structural_key(self):
        return ("GemmPlan", self.m, self.n, self.k, self.warps_m, self.warps_n, self.tensor_cores, self.variant,
                self.c_layout, self.a_layout, self.atom_a, self.atom_b)  # fmt: skip


def warp_grid(policy: S.GemmWarpPolicy, warps: int, m: int, n: int) -> tuple[int, int] | None:
    """(warps_m, warps_n) with 16-row and 16-column warp tiles, as the policy prefers; None if none fits.
    An extent that is not a power of two is split as the next one (`padded_extents_ok`)."""
    mp, np_ = next_power_of_two(m), next_power_of_two(n)
    return policy.split(warps, lambda wm, wn: mp % (16 * wm) == 0 and np_ % (16 * wn) == 0, m, n)


def padded_extents_ok(op: S.Gemm, m: int, n: int) -> bool:
    """Power-of-two M and N, or, for 16-bit operands (tc::gemm_ss, gemm_rs and the wgmma templates),
    multiples of 16 laid out as the next power of two: a 192-column head (TileLang's GQA backward, QK
    dim 192) runs on tensor cores with the tiles past 192 skipped. TF32 and float8 gemms keep powers of two."""
    if all(is_power_of_two(x) for x in (m, n)):
        return True
    sixteen_bit = op.a.dtype.name in MMA_INPUTS and op.a.dtype == op.b.dtype
    return sixteen_bit and m % 16 == 0 and n % 16 == 0


def is_tf32(op: S.Gemm) -> bool:
    """A gemm asking for TF32 math: float32 operands, one of them (or both) declared T.tfloat32, and a
    float32 accumulator."""
    operands = (op.a, op.b)
    floats = all(r.dtype.name == "float32" for r in (*operands, op.c))
    return floats and any(r.buffer.tf32 for r in operands)


def _tf32_ok(op: S.Gemm, m: int, n: int, k: int) -> bool:
    """mma.sync m16n8k8 .tf32 takes the gemm: power-of-two M and N, K a multiple of 8, B in shared
    memory, A in shared memory or in registers untransposed (a transposed register A stays on FMA)."""
    shapes = all(is_power_of_two(x) for x in (m, n)) and k % 8 == 0
    register_a = op.a.buffer.scope == "local.fragment"
    placement = op.b.buffer.scope in SHARED and (op.a.buffer.scope in SHARED or register_a)
    return is_tf32(op) and shapes and placement and not (register_a and op.transpose_a)


def is_int8(op: S.Gemm) -> bool:
    """A gemm of 8-bit integer operands (int8 / uint8, mixed) into an int32 accumulator."""
    return all(r.dtype.name in INT8_INPUTS for r in (op.a, op.b)) and op.c.dtype.name == "int32"


def _int8_ok(op: S.Gemm, m: int, n: int, k: int) -> bool:
    """mma.sync m16n8k32 .s8/.u8 takes the gemm: power-of-two M and N, K a multiple of 32, both operands
    K-major (A (M, K) in shared memory or registers, B (N, K) in shared memory: the instruction reads
    4 consecutive k bytes a register and 8-bit tiles have no transposing load)."""
    shapes = all(is_power_of_two(x) for x in (m, n)) and k % 32 == 0
    placement = op.b.buffer.scope in SHARED and op.a.buffer.scope in (*SHARED, "local.fragment")
    return is_int8(op) and shapes and placement and not op.transpose_a and op.transpose_b


def _tensor_core_ok(op: S.Gemm, m: int, n: int, k: int) -> bool:
    if is_tf32(op):
        return _tf32_ok(op, m, n, k)
    if is_int8(op):
        return _int8_ok(op, m, n, k)
    a, b, c = op.a.dtype, op.b.dtype, op.c.dtype
    shapes = padded_extents_ok(op, m, n) and k % 16 == 0
    placement = op.b.buffer.scope in SHARED and op.a.buffer.scope in (*SHARED, "local.fragment")
    # float8 operands (either format, mixed) widen to float16 in registers (tc::gemm_ss_fp8); A must
    # then come from shared memory, as the "rs" variant takes registers already in f16 mma layout.
    fp8 = a.kind == "float8" and b.kind == "float8" and op.a.buffer.scope in SHARED
    return (a.name in MMA_INPUTS and a == b or fp8) and c.name == "float32" and shapes and placement


def _fp8_wgmma_ok(op: S.Gemm, k: int) -> bool:
    """wgmma m64nNk32 takes float8 (e4m3 / e5m2, mixed) only from shared memory, K-major on both sides
    (A (M, K), B (N, K) with transpose_B): the instruction has no transpose for 8-bit types."""
    shared = op.a.buffer.scope in SHARED and op.b.buffer.scope in SHARED
    return shared and op.b.dtype.kind == "float8" and not op.transpose_a and op.transpose_b and k % 32 == 0


def wgmma_enabled(target, pass_configs) -> bool:
    """wgmma is used where the target has it (sm_90a) unless the kernel's pass configs set tl.disable_wgmma."""
    has = target.capabilities.matrix_instruction("wgmma") is not None
    return has and not bool(pass_configs.get(DISABLE_WGMMA, False))


def tma_enabled(pass_configs) -> bool:
    """TMA loads into wgmma operand tiles unless the kernel's pass configs set tl.disable_tma_lower."""
    return not bool(pass_configs.get(DISABLE_TMA, False))


def warp_specialization_enabled(target, pass_configs) -> bool:
    """Pipelines of TMA loads and wgmma get a producer warpgroup (sm_90a with wgmma and TMA on) unless
    the kernel's pass configs set tl.disable_warp_specialized."""
    on = wgmma_enabled(target, pass_configs) and tma_enabled(pass_configs)
    return on and not bool(pass_configs.get(DISABLE_WARP_SPECIALIZED, False))


def _wgmma_plan(op: S.Gemm, threads: int, m: int, n: int, k: int) -> GemmPlan | None:
    """The wgmma plan of a gemm with A in shared memory ("wgmma") or in registers ("wgmma_rs"), or None
    where wgmma does not fit (the mma.sync path runs it)."""
    groups = threads // WARPGROUP_THREADS
    if threads % WARPGROUP_THREADS or not is_power_of_two(groups) or not _tensor_core_ok(op, m, n, k):
        return None
    if not is_power_of_two(m):
        return None  # the warpgroups' rows are shares of M (mma.sync pads M; wgmma does not)
    register_a = op.a.buffer.scope == "local.fragment"
    fp8 = op.a.dtype.kind == "float8"
    if register_a and not is_power_of_two(k):
        return None  # the register A layout strides by K / 16 steps, a power of two
    if fp8 and not _fp8_wgmma_ok(op, k):
        return None  # other float8 gemms take tc::gemm_ss_fp8 (widened to f16 for mma.sync)
    if not fp8 and op.a.dtype.name not in MMA_INPUTS:
        return None
    if register_a and op.transpose_a:
        return None  # wgmma reads register A untransposed; plan_gemm reports the error
    if any(len(r.buffer.shape) != 2 for r in (op.a, op.b)):
        return None
    a_k_major, b_k_major = not op.transpose_a, op.transpose_b

    def fits(gm: int, gn: int) -> bool:
        # M in 64-row instructions; N of each instruction a multiple of 8 (16 for an N-major B: its
        # narrowest swizzle row holds 16 elements). An N that is not a power of two is one instruction
        # of one warpgroup column (its registers laid out as the next power of two's).
        padded = is_power_of_two(n) or (gn == 1 and n <= MAX_WGMMA_N)
        return m % (64 * gm) == 0 and n % (8 * gn) == 0 and (b_k_major or (n // gn) % 16 == 0) and padded

    grid = op.policy.split(groups, fits, m, n)
    if grid is None:
        return None
    gm, gn = grid
    if fp8:  # both K-major: one swizzle row of K bytes each
        atom = wgmma_atom(k, 1)
        c_layout = TileLayout((m, n), wgmma_accumulator(m, n, gm, gn))
        return GemmPlan(m, n, k, gm, gn, True, "wgmma", c_layout, None, atom, atom)
    atom_b = wgmma_atom(k if b_k_major else instruction_n(n // gn))
    c_layout = TileLayout((m, n), wgmma_accumulator(m, n, gm, gn))
    if register_a:
        a_layout = TileLayout((m, k), wgmma_operand_a(m, k, gm, gn))
        return GemmPlan(m, n, k, gm, gn, True, "wgmma_rs", c_layout, a_layout, 0, atom_b)
    atom_a = wgmma_atom(k if a_k_major else 64)
    return GemmPlan(m, n, k, gm, gn, True, "wgmma", c_layout, None, atom_a, atom_b)


def register_a_on_wgmma(op: S.Gemm, threads: int, target) -> bool:
    """A gemm with a register-resident A runs on wgmma ("wgmma_rs") for a block of `threads`."""
    m, n, k = gemm_shape(op, target)
    plan = _wgmma_plan(op, threads, m, n, k)
    return plan is not None and plan.variant == "wgmma_rs"


def plan_gemm(op: S.Gemm, threads: int, target, wgmma: bool = False) -> GemmPlan:
    """How `op` runs for a block of `threads`; `wgmma` (see `wgmma_enabled`) allows the sm_90a path."""
    m, n, k = gemm_shape(op, target)
    if wgmma:
        plan = _wgmma_plan(op, threads, m, n, k)
        if plan is not None:
            return plan
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
                unsupported=TRANSPOSED_REGISTER_A,
            )
        c_layout = TileLayout((m, n), mma_accumulator(m, n, wm, wn))
        # Every warp reads whole rows of A, so the warps_n warps sharing a row block hold copies of it.
        operand_a = mma_operand_a_tf32 if is_tf32(op) else mma_operand_a_i8 if is_int8(op) else mma_operand_a
        a_layout = TileLayout((m, k), operand_a(m, k, wm, wn)) if register_a else None
        return GemmPlan(m, n, k, wm, wn, True, "rs" if register_a else "ss", c_layout, a_layout)
    # A fragment A that tensor cores cannot take is staged through shared memory by the FMA lowering.
    return GemmPlan(m, n, k, 1, 1, False, "fma", None, None)


def recorded_plan(op: S.Gemm) -> GemmPlan:
    """The plan select-gemm-instructions recorded on `op`; a gemm without one is a compiler bug (a
    pipeline that lowers gemms before that pass, or a pass that dropped the gemm's annotations)."""
    plan = S.annotation(op.annotations, GEMM_PLAN)
    if not isinstance(plan, GemmPlan):
        raise RuntimeError(f"T.gemm at {op.span} has no GemmPlan: the '{SELECTING_PASS}' pass decides "
                           "every gemm's instructions and must run before the gemm is laid out or lowered")  # fmt: skip
    return plan


def on_wgmma_path(func) -> bool:
    """Whether select-gemm-instructions put `func` on the sm_90a path (wgmma gemms, TMA loads and stores)."""
    on = func.attr(WGMMA_PATH)
    if not isinstance(on, bool):
        raise RuntimeError(f"function {func.name} has no attribute {WGMMA_PATH!r}: the '{SELECTING_PASS}' "
                           "pass decides it and must run before the passes that read it")  # fmt: skip
    return on
