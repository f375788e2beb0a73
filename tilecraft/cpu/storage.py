"""Per-block storage planning: on-chip buffers get offsets in one scratch area per worker thread.

Allocations are nested scopes, so offsets are a stack: a buffer's bytes are reused once its scope
ends. The peak is the scratch size the host allocates for each worker thread.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.host import KernelCall
from tilecraft.ir.visitor import Mutator, Visitor

ALIGN = 64
STORAGE_ATTR = "tilecraft.block_storage_bytes"


def buffer_bytes(buf: Buffer) -> int:
    size = 1
    for d in buf.shape:
        v = E.const_value(d)
        if not isinstance(v, int):
            raise LoweringError(f"on-chip buffer {buf.name} needs a static shape, got {d}", buf.span)
        size *= v
    return (size * buf.dtype.bytes + ALIGN - 1) // ALIGN * ALIGN


class StoragePlan(Visitor):
    """Offsets of every scratch-resident buffer and the peak bytes in use."""

    def __init__(self) -> None:
        self.offsets: dict[int, int] = {}
        self.top = 0
        self.peak = 0

    def visit_Allocate(self, s: S.Allocate) -> None:
        if s.buffer.scope == "local.var":
            self.visit(s.body)
            return
        start = self.top
        self.offsets[id(s.buffer)] = start
        self.top = start + buffer_bytes(s.buffer)
        self.peak = max(self.peak, self.top)
        self.visit(s.body)
        self.top = start


def plan_storage(body: S.Stmt) -> StoragePlan:
    plan = StoragePlan()
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


@module_pass("plan-block-storage")
def plan_block_storage(mod: IRModule, ctx) -> IRModule:
    """Each kernel knows its per-block scratch bytes; host launches carry them."""
    sizes = {}
    funcs = []
    for f in mod.functions:
        if f.attr("tilecraft.role") == "device":
            sizes[f.name] = plan_storage(f.body).peak
            f = f.with_attr(STORAGE_ATTR, sizes[f.name])
        funcs.append(f)
    mutator = _SetCallStorage(sizes)
    return mod.with_functions(f.with_body(mutator.mutate(f.body)) if f.attr("tilecraft.role") == "host" else f
                              for f in funcs)  # fmt: skip
