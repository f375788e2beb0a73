"""Storage budgets: how much on-chip storage one block (or one thread) of a target may hold.

The limits are target facts (shared memory per block, local memory per thread: the target's
`Capabilities`, which `check-target-support` turns into budgets) or a backend's own (the scratch a host
worker allocates per block); this module knows no target. An allocation that takes
the live bytes of a budget past its limit is reported at its line, with the buffer's shape, dtype and
size, the limit, and what to do.

The sizes are the buffers as written, before a backend pads or replicates them (fragment layouts,
pipeline stages), so the check never rejects a kernel that would fit; what a lowering adds is left to
the backend's later checks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tilecraft.backend.capabilities import SHARED_FIX
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.visitor import Visitor
from tilecraft.transform.shared_scopes import narrow_into_loops, narrow_kernel_body

_KINDS = {
    "shared": "shared buffer",
    "shared.dyn": "shared buffer",
    "local.fragment": "fragment",
    "local": "local buffer",
    "local.var": "variable",
}


@dataclass(frozen=True)
class StorageBudget:
    """At most `limit` bytes of the buffers in `scopes` may be live at once in one block, or in one
    thread when `per_thread` (a fragment then counts its share: its elements over the block's threads).

    `memory` names the storage in messages ("shared memory"); `hint` says how to fit; `unsupported` is
    the limit key a kernel over the budget reports (`LoweringError.unsupported`), for a backend whose
    manifest declares it (a device-dependent size, say).
    """

    memory: str
    scopes: tuple[str, ...]
    limit: int
    per_thread: bool = False
    align: int = 1
    hint: str = "use smaller tiles (block sizes) or fewer buffers"
    unsupported: str | None = None

    def bytes_of(self, buf: Buffer, threads: int) -> int | None:
        """The bytes `buf` takes from this budget; None when its shape is not static."""
        elements = 1
        for dim in buf.shape:
            value = E.const_value(dim)
            if not isinstance(value, int):
                return None
            elements *= value
        if self.per_thread and buf.scope == "local.fragment":
            elements = -(-elements // max(threads, 1))
        size = elements * buf.dtype.bytes
        return -(-size // self.align) * self.align


PRIVATE_SCOPES = ("local.fragment", "local", "local.var")
ARENA_HINT = SHARED_FIX


def check_storage_budgets(
    node: IRModule | PrimFunc,
    budgets: Sequence[StorageBudget],
    target=None,
    narrowed: Sequence[str] = (),
    bindings: bool = False,
) -> None:
    """Raise LoweringError at the first allocation that takes a budget past its limit. Buffers of the
    `narrowed` scopes count only from their first to their last use, as the pipeline's
    `narrow-shared-scopes` pass will place them (inside the loops that list them as iteration-local,
    and inside scalar bindings with `bindings`, as the pass's own flag)."""
    funcs = node.functions if isinstance(node, IRModule) else (node,)
    for func in funcs:
        _BudgetWalk(tuple(budgets), target, func.span, tuple(narrowed), bindings).visit(func.body)


def format_bytes(n: int) -> str:
    """`10000000000 bytes (9.3 GiB)`: exact, and readable."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n} bytes ({f'{n / size:.1f}'.removesuffix('.0')} {unit})"
    return f"{n} bytes"


class _BudgetWalk(Visitor):
    """Live bytes per budget along the nest of allocations (a buffer's bytes free when its scope ends)."""

    def __init__(
        self, budgets: tuple[StorageBudget, ...], target, func_span, narrowed: tuple[str, ...], bindings: bool
    ) -> None:
        self.budgets = budgets
        self.narrowed = narrowed
        self.bindings = bindings
        self.target = target
        self.func_span = func_span
        self.threads = 1
        self.live: list[list[tuple[Buffer, int]]] = [[] for _ in budgets]

    def visit_KernelLaunch(self, s: S.KernelLaunch) -> None:
        saved = self.threads
        self.threads = math.prod(s.threads)
        try:
            body = s.body
            if self.narrowed:
                body = narrow_into_loops(narrow_kernel_body(body, self.narrowed, self.bindings), self.narrowed)
            self.visit(body)
        finally:
            self.threads = saved

    def visit_Allocate(self, s: S.Allocate) -> None:
        charged = []
        for k, budget in enumerate(self.budgets):
            if s.buffer.scope not in budget.scopes:
                continue
            size = budget.bytes_of(s.buffer, self.threads)
            if size is None:
                continue
            self.live[k].append((s.buffer, size))
            charged.append(k)
            self._check(budget, self.live[k], s)
        self.visit(s.body)
        for k in charged:
            self.live[k].pop()

    def _check(self, budget: StorageBudget, live: Iterable[tuple[Buffer, int]], s: S.Allocate) -> None:
        live = list(live)
        total = sum(size for _, size in live)
        if total <= budget.limit:
            return
        buf, size = live[-1]
        per = "thread" if budget.per_thread else "block"
        share = ""
        if budget.per_thread and buf.scope == "local.fragment":
            share = f" (its share over the block's {self.threads} threads)"
        message = f"{_describe(buf)} needs {format_bytes(size)} of {budget.memory} per {per}{share}"
        if len(live) > 1:
            others = ", ".join(b.name for b, _ in live[:-1])
            message += f"; with {others} live beside it, {format_bytes(total)}"
        message += f"; the target allows {format_bytes(budget.limit)} per {per}"
        span = s.span or buf.span or self.func_span
        raise LoweringError(message, span, budget.hint, target=self.target, unsupported=budget.unsupported)


def _describe(buf: Buffer) -> str:
    shape = ", ".join(str(d) for d in buf.shape) + ("," if buf.ndim == 1 else "")
    return f"{_KINDS.get(buf.scope, 'buffer')} {buf.name} ({shape}) {buf.dtype}"


__all__ = [
    "ARENA_HINT", "PRIVATE_SCOPES", "StorageBudget", "check_storage_budgets", "format_bytes",
]  # fmt: skip
