"""Where an OpenCL kernel's shared (local) buffers live: one definition of their scopes and alignment.

Shared buffers (`SHARED_SCOPES`) live in the work-group's local memory, one `__local` argument, at the
offsets the `plan-local-memory` pass plans once (sizes rounded to `SHARED_ALIGN` bytes); the check pass
budgets them with the same rounding, and codegen reads the plan.
"""

from __future__ import annotations

from tilecraft.transform.storage import storage_pass

SHARED_SCOPES = ("shared", "shared.dyn")
SHARED_ALIGN = 128

plan_local_memory = storage_pass(
    "plan-local-memory",
    SHARED_SCOPES,
    align=SHARED_ALIGN,
    doc="Shared buffers have offsets in the work-group's local memory; launches carry its size.",
)
