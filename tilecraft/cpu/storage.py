"""The CPU's per-block scratch: every on-chip buffer except scalars lives in one arena per worker.

Each OpenMP worker mallocs the arena of the block it runs, so a block's scratch is bounded: by
default 1 GiB (`DEFAULT_BLOCK_SCRATCH`), or the bytes given with the pass config
`tilecraft.cpu.max_block_scratch`. A kernel over the limit is refused while lowering, at the
allocation that crosses it.
"""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.transform.storage import STORAGE_ATTR, storage_pass
from tilecraft.transform.storage_budget import StorageBudget, check_storage_budgets

SCRATCH_SCOPES = ("shared", "shared.dyn", "local", "local.fragment")
MAX_BLOCK_SCRATCH = "tilecraft.cpu.max_block_scratch"
DEFAULT_BLOCK_SCRATCH = 1 << 30
ARENA_ALIGN = 64

_plan_arenas = storage_pass("plan-block-storage", SCRATCH_SCOPES, align=ARENA_ALIGN)


def scratch_budget(ctx) -> StorageBudget:
    """The per-block scratch budget: the pass config's bytes, else the default."""
    limit = ctx.config(MAX_BLOCK_SCRATCH, DEFAULT_BLOCK_SCRATCH)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise LoweringError(
            f"pass config {MAX_BLOCK_SCRATCH!r} must be a positive int (bytes), got {limit!r}",
            target=ctx.target,
        )
    return StorageBudget(
        "scratch memory",
        SCRATCH_SCOPES,
        limit,
        align=ARENA_ALIGN,
        hint="use smaller tiles: every OpenMP worker allocates the scratch of the block it runs; "
        f"a larger limit can be given with pass_configs={{{MAX_BLOCK_SCRATCH!r}: bytes}}",
    )


@module_pass("plan-block-storage")
def plan_block_storage(mod, ctx):
    """Each kernel's on-chip buffers have offsets in the worker's scratch, within the per-block limit;
    launches carry the scratch size."""
    check_storage_budgets(mod, (scratch_budget(ctx),), ctx.target)
    return _plan_arenas(mod, ctx)


__all__ = [
    "DEFAULT_BLOCK_SCRATCH",
    "MAX_BLOCK_SCRATCH",
    "SCRATCH_SCOPES",
    "STORAGE_ATTR",
    "plan_block_storage",
]
