"""Storage planning for on-chip buffers: offsets in one arena per block, reused when scopes end.

Allocations are nested scopes, so offsets form a stack: a buffer's bytes are free again once its
scope ends. The peak is the arena size a launch needs (a host worker thread's scratch, an accelerator block's
shared memory); host launches carry it.

The plan is made once, by a backend's storage pass (`storage_pass`), and carried on each device
function: `STORAGE_ATTR` holds the arena's bytes and `OFFSETS_ATTR` each arena buffer's offset, as
`(buffer name, offset)` pairs in the order the allocations appear. Code generators read it back with
`planned_offsets` and never plan again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from tilecraft.backend.pipeline import module_pass
from tilecraft.backend.split import ROLE_ATTR
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.host import KernelCall
from tilecraft.ir.visitor import BufferKeepingMutator, Visitor, free_vars, walk
from tilecraft.runtime.artifact import KernelInfo, ParamInfo

STORAGE_ATTR = "tilecraft.arena_bytes"
OFFSETS_ATTR = "tilecraft.arena_offsets"


def static_elements(buf: Buffer, what: str = "on-chip buffer") -> int:
    """The element count of a buffer whose shape must be static."""
    size = 1
    for d in buf.shape:
        v = E.const_value(d)
        if not isinstance(v, int):
            raise LoweringError(f"{what} {buf.name} needs a static shape, got {d}", buf.span)
        size *= v
    return size


def buffer_bytes(buf: Buffer, align: int) -> int:
    return (static_elements(buf) * buf.dtype.bytes + align - 1) // align * align


# For a kernel body, each buffer's alignment (a multiple of the plan's `align`), where some need more.
AlignOf = Callable[[S.Stmt], Callable[[Buffer], int]]


class StoragePlan(Visitor):
    """The offset of every arena-resident buffer, in allocation order, and the peak bytes in use."""

    def __init__(
        self, scopes: Sequence[str], align: int, align_of: Callable[[Buffer], int] | None = None
    ) -> None:
        self.scopes = tuple(scopes)
        self.align = align
        self.align_of = align_of
        self.placements: list[tuple[str, int]] = []  # (buffer name, offset) in allocation order
        self.top = 0
        self.peak = 0
        self.thread_vars: tuple = ()  # of the kernel being planned

    def visit_Allocate(self, s: S.Allocate) -> None:
        if s.buffer.scope not in self.scopes:
            self.visit(s.body)
            return
        start = self.top
        if self.align_of is not None:
            align = self.align_of(s.buffer)
            start = (start + align - 1) // align * align
        self.placements.append((s.buffer.name, start))
        self.top = start + buffer_bytes(s.buffer, self.align)
        self.peak = max(self.peak, self.top)
        self.visit(s.body)
        self.top = start

    def visit_KernelLaunch(self, s: S.KernelLaunch) -> None:
        saved, self.thread_vars = self.thread_vars, tuple(s.thread_vars)
        self.generic_visit(s)
        self.thread_vars = saved

    def visit_IfThenElse(self, s: S.IfThenElse) -> None:
        """The two sides of a branch on the thread index may run at once (thread groups: one group takes
        each side), so the else side's buffers go above the then side's instead of reusing its bytes."""
        threads = {id(v) for v in self.thread_vars}
        if s.else_case is None or not any(id(v) in threads for v in free_vars(s.condition)):
            self.generic_visit(s)
            return
        start = self.top
        peak, self.peak = self.peak, start
        self.visit(s.then_case)
        self.top = self.peak
        self.visit(s.else_case)
        self.top, self.peak = start, max(peak, self.peak)


def plan_storage(
    body: S.Stmt, scopes: Sequence[str], align: int = 64, align_of: AlignOf | None = None
) -> StoragePlan:
    plan = StoragePlan(scopes, align, align_of(body) if align_of is not None else None)
    plan.visit(body)
    return plan


class _SetCallStorage(BufferKeepingMutator):
    def __init__(self, sizes: dict[str, int]) -> None:
        super().__init__()
        self.sizes = sizes

    def mutate_KernelCall(self, call: KernelCall) -> KernelCall:
        return dataclasses.replace(call, dynamic_smem=self.sizes.get(call.symbol, 0))


def storage_pass(
    name: str, scopes: Sequence[str], align: int = 64, doc: str = "", align_of: AlignOf | None = None
):
    """A pass that plans each kernel's arena for `scopes`, records the plan on the kernel (`STORAGE_ATTR`,
    `OFFSETS_ATTR`) and its size on the host's launches; `align_of` raises the alignment of some buffers."""

    def run(mod: IRModule, ctx) -> IRModule:
        sizes = {}
        funcs = []
        for f in mod.functions:
            if f.attr(ROLE_ATTR) == "device":
                plan = plan_storage(f.body, scopes, align, align_of)
                sizes[f.name] = plan.peak
                f = f.with_attr(STORAGE_ATTR, plan.peak).with_attr(OFFSETS_ATTR, tuple(plan.placements))
            funcs.append(f)
        mutator = _SetCallStorage(sizes)
        return mod.with_functions(
            f.with_body(mutator.mutate(f.body)) if f.attr(ROLE_ATTR) == "host" else f for f in funcs
        )

    run.__doc__ = doc or "Each kernel's on-chip buffers have arena offsets; launches carry the arena size."
    return module_pass(name)(run)


def planned_offsets(func: PrimFunc, scopes: Sequence[str]) -> dict[int, int]:
    """Each arena buffer's offset (keyed by the buffer's id), as the storage pass planned it for `scopes`.

    The plan lists the allocations in the order they appear, so a pass after the storage pass that adds,
    drops or reorders one would make it stale: that is a bug in the pipeline, reported here."""
    buffers = [n.buffer for n in walk(func.body) if isinstance(n, S.Allocate) and n.buffer.scope in scopes]
    plan = func.attr(OFFSETS_ATTR)
    if plan is None or [name for name, _ in plan] != [buf.name for buf in buffers]:
        planned = "no plan" if plan is None else f"a plan for {[name for name, _ in plan]}"
        raise ValueError(
            f"{func.name}: the storage plan does not match the kernel: {planned}, but the kernel allocates "
            f"{[buf.name for buf in buffers]} in {tuple(scopes)}; the backend's storage pass must run after "
            "every pass that adds or moves an allocation"
        )
    return buffer_offsets(buffers, plan)


def buffer_offsets(buffers: Sequence[Buffer], placements: Sequence[tuple[str, int]]) -> dict[int, int]:
    """Each of `buffers` (arena buffers in allocation order) to its offset in `placements` (a plan's
    `(name, offset)` pairs in the same order), keyed by the buffer's id."""
    return {id(buf): offset for buf, (_, offset) in zip(buffers, placements, strict=True)}


def launch_info(func) -> KernelInfo:
    """The launch record of a device function: its params in order, its grid and block, and the
    arena the storage plan gave it (shared memory on accelerators, a block's scratch on host processors)."""
    launch: S.KernelLaunch = func.body
    params = tuple(ParamInfo.from_param(p) for p in func.params)
    cluster = S.annotation(launch.annotations, S.CLUSTER_DIMS, (1, 1, 1))
    return KernelInfo(func.name, params, launch.grid, launch.threads, dynamic_smem=func.attr(STORAGE_ATTR, 0),
                      cluster=cluster)  # fmt: skip
