"""The CPU's per-block scratch: every on-chip buffer except scalars lives in one arena per worker."""

from __future__ import annotations

from tilecraft.transform.storage import STORAGE_ATTR, plan_storage, storage_pass

SCRATCH_SCOPES = ("shared", "shared.dyn", "local", "local.fragment")

plan_block_storage = storage_pass(
    "plan-block-storage",
    SCRATCH_SCOPES,
    doc="Each kernel's on-chip buffers have offsets in the worker's scratch; launches carry its size.",
)


def scratch_plan(body):
    return plan_storage(body, SCRATCH_SCOPES)


__all__ = ["STORAGE_ATTR", "plan_block_storage", "scratch_plan"]
