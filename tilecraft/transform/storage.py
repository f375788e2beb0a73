"""Storage planning for on-chip buffers: offsets in one arena per block, reused when scopes end.

Allocations are nested scopes, so offsets form a stack: a buffer's bytes are free again once its
scope ends. The peak is the arena size a launch needs (a host worker thread's scratch, an accelerator block's
shared memory); host launches carry it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from tilecraft.backend.artifact import KernelInfo, ParamInfo
from tilecraft.backend.pipeline import module_pass
from tilecraft.backend.split import ROLE_ATTR
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.host import KernelCall
from tilecraft.ir.visitor import Mutator, Visitor

STORAGE_ATTR = "tilecraft.arena_bytes"


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
    """Offsets of every arena-resident buffer and the peak bytes in use."""

    def __init__(
        self, scopes: Sequence[str], align: int, align_of: Callable[[Buffer], int] | None = None
    ) -> None:
        self.scopes = tuple(scopes)
        self.align = align
        self.align_of = align_of
        self.offsets: dict[int, int] = {}
        self.top = 0
        self.peak = 0

    def visit_Allocate(self, s: S.Allocate) -> None:
        if s.buffer.scope not in self.scopes:
            self.visit(s.body)
            return
        start = self.top
        if self.align_of is not None:
            align = self.align_of(s.buffer)
            start = (start + align - 1) // align * align
        self.offsets[id(s.buffer)] = start
        self.top = start + buffer_bytes(s.buffer, self.align)
        self.peak = max(self.peak, self.top)
        self.visit(s.body)
        self.top = start


def plan_storage(
    body: S.Stmt, scopes: Sequence[str], align: int = 64, align_of: AlignOf | None = None
) -> StoragePlan:
    plan = StoragePlan(scopes, align, align_of(body) if align_of is not None else None)
    plan.visit(body)
    return plan


class _SetCallStorage(Mutator):
    def __init__(self, sizes: dict[str, int]) -> None:
        super().__init__()
        self.sizes = sizes

    def mutate_Buffer(self, buf):
        return buf

    def mutate_KernelCall(self, call: KernelCall) -> KernelCall:
        return dataclasses.replace(call, dynamic_smem=self.sizes.get(call.symbol, 0))


def storage_pass(
    name: str, scopes: Sequence[str], align: int = 64, doc: str = "", align_of: AlignOf | None = None
):
    """A pass that plans each kernel's arena for `scopes` and records its size on the host's launches;
    `align_of` raises the alignment of some buffers (the device code generator must plan with the same)."""

    def run(mod: IRModule, ctx) -> IRModule:
        sizes = {}
        funcs = []
        for f in mod.functions:
            if f.attr(ROLE_ATTR) == "device":
                sizes[f.name] = plan_storage(f.body, scopes, align, align_of).peak
                f = f.with_attr(STORAGE_ATTR, sizes[f.name])
            funcs.append(f)
        mutator = _SetCallStorage(sizes)
        return mod.with_functions(
            f.with_body(mutator.mutate(f.body)) if f.attr(ROLE_ATTR) == "host" else f for f in funcs
        )

    run.__doc__ = doc or "Each kernel's on-chip buffers have arena offsets; launches carry the arena size."
    return module_pass(name)(run)


def launch_info(func) -> KernelInfo:
    """The launch record of a device function: its params in order, its grid and block, and the
    arena the storage plan gave it (shared memory on accelerators, a block's scratch on host processors)."""
    launch: S.KernelLaunch = func.body
    params = tuple(ParamInfo.from_param(p) for p in func.params)
    return KernelInfo(func.name, params, launch.grid, launch.threads, dynamic_smem=func.attr(STORAGE_ATTR, 0))
