"""`check-target-support`: the kernel uses only what the target's `Capabilities` have.

Every backend's pipeline starts with this pass. It reads the record the target kind builds
(`target.capabilities`, tilecraft/backend/capabilities.py) and refuses, at the kernel's line, the first
construct the target lacks: the whole target (`refused`), 4-bit and microscaling dtypes, threads per
block, buffers of a dtype it lacks, 64-bit elements in shared memory, math functions of float64,
atomic updates, T.print, mbarriers, buffer parameters past the binding limit, and shared and private
memory past their sizes. Each message says what the kernel does and, in the target's words, why the
target cannot; the hint is the record's fix, and the error carries the record's limit key
(`LoweringError.unsupported`). What the record does not know (None) is never refused.
"""

from __future__ import annotations

import math

from tilecraft.backend.capabilities import NO_IMPORTED_SOURCE, Capabilities, Lack
from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.op import MATH_ANY, MATH_FLOAT, RNG_CALLS, RNG_INIT, RNG_RAND_FLOAT
from tilecraft.ir.span import Span
from tilecraft.ir.visitor import Visitor
from tilecraft.transform.iteration_local import mark_iteration_local
from tilecraft.transform.narrow_dtypes import first_narrow_use
from tilecraft.transform.storage_budget import PRIVATE_SCOPES, StorageBudget, check_storage_budgets

SHARED_SCOPES = ("shared", "shared.dyn")
MATH_FUNCTIONS = MATH_FLOAT + MATH_ANY


def check_target_support(iteration_local: bool = False, bindings: bool = False):
    """The `check-target-support` pass. Shared memory is counted where the pipeline's
    `narrow-shared-scopes` will place the buffers: with `iteration_local`, inside the loops that list them
    as iteration-local (a pipeline with `mark-iteration-local-shared`), and with `bindings` inside scalar
    bindings, as that pass's own flag."""

    @module_pass("check-target-support")
    def run(mod: IRModule, ctx) -> IRModule:
        """The kernel uses only what the target's Capabilities have: the first construct it lacks is
        refused at its line, with the reason, the fix and the limit key."""
        check_capabilities(mod, ctx.target, iteration_local, bindings)
        return mod

    return run


def check_capabilities(mod: IRModule, target, iteration_local: bool = False, bindings: bool = False) -> None:
    """Raise LoweringError for the first construct of `mod` that `target`'s capabilities lack."""
    caps = target.capabilities
    if caps.refused is not None:
        _raise(caps.refused.reason, None, caps.refused, target)
    if isinstance(caps.narrow, Lack):
        use = first_narrow_use(mod)
        if use is not None:
            _raise(f"{use.what} is {use.dtype}: {caps.narrow.reason}", use.span, caps.narrow, target)
    if caps.imported_source is not True:
        _check_imported_source(mod, caps, target)
    for func in mod.functions:
        walk = _SupportWalk(caps, target, func.span)
        for p in func.params:
            walk.visit(p)
        walk.visit(func.body)
    _check_buffer_count(mod, caps.max_buffers, target)
    counted = mark_iteration_local(mod) if iteration_local else mod
    check_storage_budgets(counted, storage_budgets(caps), target, narrowed=SHARED_SCOPES, bindings=bindings)


def _check_imported_source(mod: IRModule, caps: Capabilities, target) -> None:
    """T.import_source needs a code generator that puts its text into the device translation unit."""
    from tilecraft.language.extern import imported_sources

    for func in mod.functions:
        for _code, file, line, col in imported_sources(func)[:1]:
            lack = caps.imported_source if isinstance(caps.imported_source, Lack) else NO_IMPORTED_SOURCE
            span = Span(file, line, col) if file else func.span
            _raise(f"T.import_source: {lack.reason}", span, lack, target)


def storage_budgets(caps: Capabilities) -> tuple[StorageBudget, ...]:
    """A thread's private memory and a block's shared memory, where the record knows their sizes."""
    budgets = []
    for memory, scopes, per_thread in ((caps.private_memory, PRIVATE_SCOPES, True),
                                       (caps.shared_memory, SHARED_SCOPES, False)):  # fmt: skip
        if memory.bytes is not None:
            budgets.append(StorageBudget(memory.name, scopes, memory.bytes, per_thread=per_thread,
                                         align=memory.align, hint=memory.fix, unsupported=memory.key))  # fmt: skip
    return tuple(budgets)


def check_planned_memory(kernel: str, used: int, span: Span | None, target, counted: str = "") -> None:
    """Refuse a kernel whose planned shared memory (`used` bytes: the storage plan, after what lowering
    added) is past the record's, for codegen to call where it knows the plan; `counted` says what the
    bytes hold when more than the plan's shared buffers."""
    memory = target.capabilities.shared_memory if target is not None else None
    if memory is not None and memory.bytes is not None and used > memory.bytes:
        raise LoweringError(f"kernel {kernel} needs {used} bytes of {memory.name}{counted}; the target has "
                            f"{memory.bytes}", span, memory.fix, target=target, unsupported=memory.key)  # fmt: skip


def _raise(message: str, span: Span | None, lack: Lack, target) -> None:
    raise LoweringError(message, span, lack.fix, target=target, unsupported=lack.key)


class _SupportWalk(Visitor):
    """Parameters and body of one function, with the innermost statement's span for what has none."""

    def __init__(self, caps: Capabilities, target, span: Span | None) -> None:
        self.caps = caps
        self.target = target
        self.span = span

    def visit(self, node) -> None:
        saved = self.span
        if isinstance(node, S.Stmt) and node.span is not None:
            self.span = node.span
        super().visit(node)
        self.span = saved

    def fail(self, message: str, span: Span | None, lack: Lack) -> None:
        _raise(message, span or self.span, lack, self.target)

    def visit_KernelLaunch(self, s: S.KernelLaunch) -> None:
        limit = self.caps.max_threads
        threads = math.prod(s.threads)
        if limit.most is not None and threads > limit.most:
            lack = Lack(limit.reason, f"use threads={limit.most} or fewer", limit.key)
            self.fail(f"the kernel asks for {threads} threads per block; {limit.reason}", s.span, lack)
        self.generic_visit(s)

    def visit_Buffer(self, buf: Buffer) -> None:
        support = self.caps.dtype_support(buf.dtype)
        if isinstance(support, Lack):
            self.fail(f"buffer {buf.name} is {buf.dtype}, but {support.reason}", buf.span, support)
        wide = self.caps.wide_shared
        if buf.scope in SHARED_SCOPES and buf.dtype.bytes > 4 and isinstance(wide, Lack):
            self.fail(f"shared buffer {buf.name} is {buf.dtype}; {wide.reason}", buf.span, wide)
        self.generic_visit(buf)

    def visit_Call(self, e: E.Call) -> None:
        math64 = self.caps.float64_math
        if (
            math64.allowed is not None
            and e.dtype.name == "float64"
            and e.op in MATH_FUNCTIONS
            and e.op not in math64.allowed
        ):
            self.fail(f"T.{e.op} of a float64 value: {math64.lack.reason}", None, math64.lack)
        if e.op in RNG_CALLS:
            self._random(e)
        self.generic_visit(e)

    def _random(self, e: E.Call) -> None:
        """MRG32k3a scales its outputs in float64, and float64 normals take float64 log, sin and cos."""
        generator = e.args[4].value if e.op == RNG_INIT else e.args[1].value
        what = f"T.{e.op} ({generator}{', ' + str(e.dtype) if e.op == RNG_RAND_FLOAT else ''})"
        float64 = self.caps.float64
        if (generator == "mrg32k3a" or e.dtype.name == "float64") and isinstance(float64, Lack):
            self.fail(f"{what} computes in float64, but {float64.reason}", None, float64)
        math64 = self.caps.float64_math
        normal = e.op == RNG_RAND_FLOAT and e.args[2].value == "normal" and e.dtype.name == "float64"
        if normal and math64.allowed is not None and not {"log", "sin", "cos"} <= set(math64.allowed):
            self.fail(f"{what} takes the log, sin and cos of float64 values: {math64.lack.reason}", None,
                      math64.lack)  # fmt: skip

    def visit_Print(self, s: S.Print) -> None:
        if isinstance(self.caps.print, Lack):
            self.fail(f"T.print is not supported on this target: {self.caps.print.reason}", s.span, self.caps.print)
        self.generic_visit(s)

    def visit_BarrierInit(self, s: S.BarrierInit) -> None:
        if isinstance(self.caps.mbarriers, Lack):
            self.fail(self.caps.mbarriers.reason, s.span, self.caps.mbarriers)
        self.generic_visit(s)

    def visit_AtomicOp(self, s: S.AtomicOp) -> None:
        self._atomic(s.kind, s.dst.buffer, s.span)
        self.generic_visit(s)

    def visit_AtomicUpdate(self, s: AtomicUpdate) -> None:
        self._atomic(s.kind, s.buffer, s.span)
        self.generic_visit(s)

    def _atomic(self, op: str, buf: Buffer, span: Span | None) -> None:
        atomics = self.caps.atomics
        if atomics.allows(op, buf.dtype.name, buf.scope):
            return
        what = "update" if op in atomics.ops else op
        scope = "" if atomics.scopes is None else f"{buf.scope} "
        self.fail(f"an atomic {what} of {scope}{buf.dtype} buffer {buf.name}: {atomics.lack.reason}", span,
                  atomics.lack)  # fmt: skip


def _check_buffer_count(mod: IRModule, limit, target) -> None:
    if limit.most is None:
        return
    for func in mod.functions:
        count = sum(isinstance(p, Buffer) for p in func.params)
        if count > limit.most:
            lack = Lack(limit.reason, "pass fewer tensors (views of one tensor count once)", limit.key)
            _raise(f"{func.name} takes {count} buffers; {limit.reason}", func.span, lack, target)


__all__ = [
    "MATH_FUNCTIONS", "SHARED_SCOPES", "check_capabilities", "check_planned_memory", "check_target_support",
    "storage_budgets",
]  # fmt: skip
