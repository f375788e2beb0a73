"""lower-thread-allreduce: TVM's thread all-reduce (`T.tvm_thread_allreduce`) as per-thread code.

Each thread's value is combined over the threads whose linear index differs only in the reduced digits
(`ThreadAllReduce.axes`, pairs (stride, extent)). On a target with a lane exchange (a warp shuffle), the
reduced bits that name lanes are combined by a butterfly of exchanges, when every axis is a power of two
and the block is whole thread groups. What is left goes through shared memory: each thread stores its
value at its own slot, a barrier, and each thread combines the slots of its partners, always in the same
order, so that every thread of a reduction gets the same bits. Targets without an exchange (also one
that runs a block's threads one after the other, split at the barrier) take the shared-memory path for
every axis.
"""

from __future__ import annotations

import dataclasses
import math

from tilecraft.backend.pipeline import module_pass
from tilecraft.backend.simt import SimtFacts, SimtTarget
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import BufferKeepingMutator, walk
from tilecraft.transform.reductions import combine, identity
from tilecraft.transform.simt.barriers import sync
from tilecraft.transform.uniformity import ThreadVarying


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _load(buf: Buffer, *indices) -> E.Expr:
    return E.BufferLoad(buf.dtype, buf, tuple(E.convert(i) for i in indices) or (E.const(0),))


def _store(buf: Buffer, value: E.Expr, *indices) -> S.Stmt:
    return S.BufferStore(buf, value, tuple(E.convert(i) for i in indices) or (E.const(0),))


def exchanged_axes(axes, threads: int, simt: SimtTarget | None) -> tuple[list[int], list[tuple[int, int]]]:
    """The lane bits a butterfly of exchanges combines, and the axes (stride, extent) left to shared
    memory: the bits of each axis above the lane bits, or the whole axis where exchanges do not apply."""
    pow2 = all(_power_of_two(s) and _power_of_two(e) for s, e in axes)
    if simt is None or simt.exchange is None or not pow2 or threads % simt.width:
        return [], list(axes)
    bits, rest = [], []
    for stride, extent in axes:
        lo = stride.bit_length() - 1
        hi = lo + extent.bit_length() - 1
        bits += list(range(lo, min(hi, simt.lane_bits)))
        first = max(lo, simt.lane_bits)
        if hi > first:
            rest.append((1 << first, 1 << (hi - first)))
    return bits, rest


def expand_allreduce(op: S.ThreadAllReduce, tid: E.Expr, threads: int, simt: SimtTarget | None,
                     name: str) -> S.Stmt:  # fmt: skip
    """The per-thread code of one all-reduce by thread `tid` of a block of `threads` (names from `name`)."""
    dtype = op.buffer.dtype
    acc = Buffer(f"{name}_acc", (E.const(1),), dtype, "local.var")
    stmts: list[S.Stmt] = [_store(acc, E.cast(op.value, dtype))]
    bits, rest = exchanged_axes(op.axes, threads, simt)
    for bit in bits:
        stmts.append(_store(acc, combine(op.kind, _load(acc), simt.exchange(_load(acc), 1 << bit))))
    dst, dst_index = op.buffer, op.indices
    if not rest:
        stmts.append(S.BufferStore(dst, _load(acc), dst_index, span=op.span))
        return S.Allocate(acc, S.seq(*stmts), span=op.span)
    scratch = Buffer(f"{name}_smem", (E.const(threads),), dtype, "shared.dyn")
    total = Buffer(f"{name}_total", (E.const(1),), dtype, "local.var")
    loop_vars = [E.Var(E.convert(tid).dtype, f"{name}_j{k}") for k in range(len(rest))]
    base = E.convert(tid)
    for stride, extent in rest:
        digit = E.floordiv(tid, stride) if stride > 1 else E.convert(tid)
        if stride * extent < threads:
            digit = E.floormod(digit, extent)
        base = E.sub(base, E.mul(digit, stride))
    index = base
    for var, (stride, _) in zip(loop_vars, rest):
        index = E.add(index, E.mul(var, stride))
    gather: S.Stmt = _store(total, combine(op.kind, _load(total), _load(scratch, index)))
    for var, (_, extent) in reversed(list(zip(loop_vars, rest))):
        gather = S.For(var, E.const(0), E.const(extent), S.ForKind.SERIAL, gather)
    shared = S.seq(
        _store(scratch, _load(acc), tid),
        sync(),  # every thread's value is in its slot before any thread reads its partners'
        _store(total, identity(op.kind, dtype)),
        gather,
        S.BufferStore(dst, _load(total), dst_index, span=op.span),
    )
    body = S.Allocate(scratch, S.Allocate(total, shared, span=op.span), span=op.span)
    return S.Allocate(acc, S.seq(*stmts, body), span=op.span)


class _PerKernel(BufferKeepingMutator):
    def __init__(self, simt: SimtTarget | None, target) -> None:
        super().__init__()
        self.simt = simt
        self.target = target
        self.launch: S.KernelLaunch | None = None
        self.varying: ThreadVarying | None = None
        self.count = 0

    def mutate_KernelLaunch(self, launch: S.KernelLaunch) -> S.Stmt:
        if not any(isinstance(n, S.ThreadAllReduce) for n in walk(launch.body)):
            return launch
        saved = self.launch, self.varying
        self.launch, self.varying = launch, ThreadVarying(launch)
        try:
            return dataclasses.replace(launch, body=self.mutate(launch.body))
        finally:
            self.launch, self.varying = saved

    def mutate_ThreadAllReduce(self, op: S.ThreadAllReduce) -> S.Stmt:
        if id(op) in self.varying.controlled:
            raise LoweringError(
                "a thread all-reduce runs under a condition (or in a loop) that differs between threads; "
                "every thread of the block must reach it",
                op.span,
                "move T.tvm_thread_allreduce out of the branch on the thread index, and guard what uses "
                "its result instead",
                target=self.target,
            )
        threads = math.prod(self.launch.threads)
        op = self._resolve_group_width(op, threads)
        self.count += 1
        return expand_allreduce(op, self.launch.thread_vars[0], threads, self.simt, f"allreduce{self.count}")

    def _resolve_group_width(self, op: S.ThreadAllReduce, threads: int) -> S.ThreadAllReduce:
        """An axis of the target's thread-group width (T.warp_reduce_*) made concrete; the block must be
        whole groups."""
        if all(extent != S.GROUP_WIDTH for _, extent in op.axes):
            return op
        width = group_width(self.target)
        if threads % width:
            raise LoweringError(
                f"T.warp_reduce_{op.kind} combines the {width} threads of each thread group of {self.target}, "
                f"but the block has {threads} threads, not whole groups",
                op.span,
                f"launch a multiple of {width} threads, or reduce over the block's threads with T.reduce / "
                "T.alloc_reducer",
                target=self.target,
            )
        axes = tuple((stride, width if extent == S.GROUP_WIDTH else extent) for stride, extent in op.axes)
        return dataclasses.replace(op, axes=axes)


# The warp of a target whose block runs as one thread (no lockstep groups, thread_group 1): 32 threads,
# the warp of the programs TileLang's T.warp_reduce_* and lane helpers are written for.
DEFAULT_GROUP_WIDTH = 32


def group_width(target) -> int:
    """The threads of one thread group (warp, wavefront, SIMD group) of `target`: its `thread_group`
    capability, or DEFAULT_GROUP_WIDTH where its blocks have no lockstep groups or it is unknown."""
    width = target.capabilities.thread_group
    return width if width is not None and width > 1 else DEFAULT_GROUP_WIDTH


# The intrinsic that stands for the target's thread-group width in expressions (the lane helpers'
# default warp size, T.get_lane_idx() and the rest); lower-thread-allreduce makes it a constant.
GROUP_WIDTH_CALL = "thread_group_width"


class _GroupWidth(BufferKeepingMutator):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width

    def mutate_Call(self, e: E.Call) -> E.Expr:
        if e.op == GROUP_WIDTH_CALL:
            return E.const(self.width, e.dtype)
        return self.generic_mutate(e)


def lower_thread_allreduce(simt: SimtFacts | None = None):
    """The `lower-thread-allreduce` pass, with the target's lane exchange (`simt`) or, without, through
    shared memory alone. Runs after flatten-thread-dims (one linear thread index)."""

    @module_pass("lower-thread-allreduce")
    def run(mod: IRModule, ctx) -> IRModule:
        """Every thread all-reduce is per-thread code: lane exchanges, then shared memory and a barrier."""
        mutator = _PerKernel(simt(ctx.target) if simt is not None else None, ctx.target)
        width = _GroupWidth(group_width(ctx.target))
        return mod.with_functions(f.with_body(mutator.mutate(width.mutate(f.body))) for f in mod.functions)

    return run
