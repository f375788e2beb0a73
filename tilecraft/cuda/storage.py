"""Where a CUDA kernel's buffers live, and what the generated code assumes of them: one definition each.

- Shared buffers (`SHARED_SCOPES`) live in the block's dynamic shared memory, at the offsets the
  `plan-shared-memory` pass plans once (sizes rounded to `SHARED_ALIGN` bytes; wgmma operand tiles on
  `WGMMA_ALIGN`); the check pass budgets them with the same rounding, and codegen reads the plan.
- Buffer arguments start on `BUFFER_ALIGN` bytes: the 16-byte chunks and cp.async of copies rely on it,
  and so does `__builtin_assume_aligned`. Codegen records it in the artifact (`buffer_alignment`), which
  is what the launchers' full path checks and the JIT's fast path tests.
- The pass config `tilecraft.cuda.assume_aligned` (`ASSUME_ALIGNED`, default True) tells the compiler
  about that alignment (benchmarks/ablate_alignment.py measures both settings); as a pass config it is
  part of the artifact's cache key.
"""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.backend.split import ROLE_ATTR
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.visitor import walk
from tilecraft.transform.storage import storage_pass

SHARED_SCOPES = ("shared", "shared.dyn")
SHARED_ALIGN = 128
WGMMA_ALIGN = 1024  # the 128-byte swizzle repeats every 1024 bytes of absolute shared address
BUFFER_ALIGN = 16
ASSUME_ALIGNED = "tilecraft.cuda.assume_aligned"
ASSUME_ALIGNED_DOC = (
    "tell the CUDA compiler that buffers of 4-byte and wider elements are 16-byte aligned (the launchers "
    "check it), so it may vectorize their accesses (default True; False for ablation runs)"
)


def wgmma_calls(body: S.Stmt) -> list:
    from tilecraft.cuda.ir import GemmCall
    from tilecraft.cuda.op.gemm_plan import WGMMA_VARIANTS

    return [n for n in walk(body) if isinstance(n, GemmCall) and n.variant in WGMMA_VARIANTS]


def swizzled_tma_tiles(body: S.Stmt) -> set[int]:
    """The ids of the shared tiles a TMA load writes or a TMA store reads through a swizzled map."""
    from tilecraft.cuda.ir import TmaLoad, TmaStore

    tiles = {id(n.dst) for n in walk(body) if isinstance(n, TmaLoad) and n.swizzle}
    return tiles | {id(n.src) for n in walk(body) if isinstance(n, TmaStore) and n.swizzle}


def shared_alignment(body: S.Stmt):
    """Each shared buffer's alignment in a kernel body: wgmma operand tiles and the tiles of swizzled
    TMA copies start on 1024 bytes (the hardware swizzles absolute addresses), the rest on SHARED_ALIGN."""
    operands = {
        id(buf) for call in wgmma_calls(body) for buf in (call.a, call.b) if buf.scope in SHARED_SCOPES
    }
    operands |= swizzled_tma_tiles(body)
    return lambda buf: WGMMA_ALIGN if id(buf) in operands else SHARED_ALIGN


plan_shared_memory = storage_pass(
    "plan-shared-memory",
    SHARED_SCOPES,
    align=SHARED_ALIGN,
    doc="Shared buffers have offsets in the block's dynamic shared memory; launches carry its size.",
    align_of=shared_alignment,
)


@module_pass("mark-assumed-alignment")
def mark_assumed_alignment(mod, ctx):
    """Device functions carry the pass config `tilecraft.cuda.assume_aligned` (default True) for codegen."""
    assume = ctx.config(ASSUME_ALIGNED, True)
    if not isinstance(assume, bool):
        raise LoweringError(
            f"pass config {ASSUME_ALIGNED!r} must be True or False, got {assume!r}", target=ctx.target
        )
    return mod.with_functions(
        f.with_attr(ASSUME_ALIGNED, assume) if f.attr(ROLE_ATTR) == "device" else f for f in mod.functions
    )
