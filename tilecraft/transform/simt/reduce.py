"""Reductions of fragments for SIMT targets: within each thread's registers, then across the threads
that split the reduced dim: by the target's lane exchange over those lane bits where it has one
(`ctx.simt.exchange`, a warp shuffle say), or in one instruction when those bits are every lane bit and
the target has a whole-group reduction (`ctx.simt.reduce_group`), and through shared memory for the
rest (the bits naming the thread group, or every bit without an exchange).

The register grouping and the exchange masks come from the source's layout: a reduction is only a
function of which input bits of the layout feed the reduced dim.
"""

from __future__ import annotations

import dataclasses

from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.layout.fragment import fragment_dims
from tilecraft.layout.tile import drop_unit_dim, register_map
from tilecraft.transform.reductions import combine, cumsum_loops, identity, ignores_nan

FRAGMENT = "local.fragment"


def _plain(kind: str) -> str:
    return {"abssum": "sum", "absmax": "max"}.get(kind, kind)


def _groups(src, dst, dim: int, ctx, span) -> list[list[int]]:
    """For each register of the result (laid out without the reduced dim), the source registers (of
    the same thread) that reduce into it."""
    dims = [d for d in range(len(src.shape)) if d != dim]
    mapping = register_map(src, dims, dst) if dims else None
    groups: list[list[int]] = [[] for _ in range(dst.num_registers)]
    for rs in range(src.num_registers):
        if mapping is None:
            if dims:
                ctx.fail("the reduction's result layout does not follow its source", span)
            groups[0].append(rs)
            continue
        rd = mapping.apply(register=rs, lane=0, warp=0)["register"]
        groups[rd].append(rs)
    return groups


def lower_reduce(op: S.Reduce, ctx) -> S.Stmt:
    if op.src.buffer.scope != FRAGMENT or op.dst.buffer.scope != FRAGMENT:
        ctx.fail(f"T.reduce_{op.kind} on this target reduces fragments into fragments", op.span,
                 "T.copy the data into a T.alloc_fragment tile first")  # fmt: skip
    src, dst = ctx.layout(op.src.buffer, op.span), ctx.layout(op.dst.buffer, op.span)
    if op.keeps_dim and len(src.shape) > 1:
        # The kept dim has extent 1: the registers are those of the result without it.
        dst = drop_unit_dim(dst, op.dim)
    groups = _groups(src, dst, op.dim, ctx, op.span)
    src_regs, dst_regs = ctx.registers_of(op.src.buffer), ctx.registers_of(op.dst.buffer)
    acc_dtype, nan = op.dst.dtype, op.nan_propagate
    accs = [Buffer(f"red{k}", (E.const(1),), acc_dtype, "local.var") for k in range(dst.num_registers)]
    stmts: list[S.Stmt] = []
    for acc, members in zip(accs, groups):
        stmts.append(S.BufferStore(acc, identity(_plain(op.kind), acc_dtype, nan), (E.const(0),)))
        for rs in members:
            x = E.cast(E.BufferLoad(src_regs.dtype, src_regs, (E.const(rs),)), acc_dtype)
            update: S.Stmt = S.BufferStore(acc, combine(op.kind, _load(acc), x, nan), (E.const(0),))
            inside = src.in_bounds(src.coords(E.const(rs), ctx.lane, ctx.warp)) if src.padded else None
            stmts.append(update if inside is None else S.IfThenElse(inside, update))
    name = fragment_dims(len(src.shape))[op.dim]
    lane_bits = src.linear.input_bits_feeding("lane", name) if "lane" in src.linear.in_names else ()
    warp_bits = src.linear.input_bits_feeding("warp", name) if "warp" in src.linear.in_names else ()
    exchange = ctx.simt.exchange
    exchanged_bits = lane_bits if exchange is not None else ()
    # A group reduction instruction's NaN handling is the target's; one that ignores NaN exchanges.
    ignoring = ignores_nan(op.kind, acc_dtype, nan)
    whole = None if ignoring else _whole_group(ctx.simt, _plain(op.kind), accs, exchanged_bits)
    for acc, combined in zip(accs, whole or ()):
        stmts.append(S.BufferStore(acc, combined, (E.const(0),)))
    for bit in exchanged_bits if whole is None else ():
        for acc in accs:
            load = _load(acc)
            other = exchange(load, 1 << bit)
            stmts.append(S.BufferStore(acc, combine(_plain(op.kind), load, other, nan), (E.const(0),)))
    body = S.seq(*stmts)
    # Group bit b of the layout is bit b + log2(width) of the thread index.
    group_bits = [b + ctx.simt.lane_bits for b in warp_bits]
    thread_bits = [b for b in lane_bits if b not in exchanged_bits] + group_bits
    if thread_bits:
        body = S.seq(body, *_through_shared_memory(accs, thread_bits, op, ctx, nan))
    finish = []
    for k, acc in enumerate(accs):
        result = _load(acc)
        if not op.clear:
            old = E.BufferLoad(dst_regs.dtype, dst_regs, (E.const(k),))
            result = combine(_plain(op.kind), E.cast(old, acc_dtype), result, nan)
        finish.append(S.BufferStore(dst_regs, result, (E.const(k),)))
    out = S.seq(body, *finish)
    for acc in reversed(accs):
        out = S.Allocate(acc, out, span=op.span)
    return out


def lower_finalize_reducer(op: S.FinalizeReducer, ctx) -> S.Stmt:
    """Each register of the reducer combined over the threads that hold copies of its element (the
    layout's replica bits): their partial values, since the loops that update the reducer let one
    thread of each replica group of their own layout contribute (lower_threads.py). Lane bits go
    through the target's exchange, the rest (or all, without one) through shared memory."""
    layout = ctx.layout(op.buffer, op.span)
    regs = ctx.registers_of(op.buffer)
    lanes, warps = layout.replica_mask()
    lane_bits = [b for b in range(ctx.simt.lane_bits) if lanes >> b & 1]
    warp_bits = [b for b in range(ctx.threads.bit_length()) if warps >> b & 1]
    exchange = ctx.simt.exchange
    exchanged = lane_bits if exchange is not None else []
    accs = [Buffer(f"fin{k}", (E.const(1),), regs.dtype, "local.var") for k in range(layout.num_registers)]
    stmts: list[S.Stmt] = []
    for k, acc in enumerate(accs):
        stmts.append(S.BufferStore(acc, E.BufferLoad(regs.dtype, regs, (E.const(k),)), (E.const(0),)))
    whole = _whole_group(ctx.simt, op.kind, accs, exchanged)
    for acc, combined in zip(accs, whole or ()):
        stmts.append(S.BufferStore(acc, combined, (E.const(0),)))
    for bit in exchanged if whole is None else ():
        for acc in accs:
            load = _load(acc)
            stmts.append(S.BufferStore(acc, combine(op.kind, load, exchange(load, 1 << bit)), (E.const(0),)))
    thread_bits = [b for b in lane_bits if b not in exchanged] + [b + ctx.simt.lane_bits for b in warp_bits]
    if thread_bits and accs:
        stmts += _through_shared_memory(accs, thread_bits, op, ctx)
    for k, acc in enumerate(accs):
        stmts.append(S.BufferStore(regs, _load(acc), (E.const(k),)))
    out = S.seq(*stmts)
    for acc in reversed(accs):
        out = S.Allocate(acc, out, span=op.span)
    return out


def _whole_group(simt, kind: str, accs: list[Buffer], exchanged_bits) -> list[E.Expr] | None:
    """Each accumulator combined over the whole thread group by the target's group reduction, when
    the exchanged bits are all the lane bits and the target has one for this kind and dtype."""
    if simt.reduce_group is None or sorted(exchanged_bits) != list(range(simt.lane_bits)):
        return None
    combined = [simt.reduce_group(kind, _load(acc)) for acc in accs]
    return None if any(c is None for c in combined) else combined


def _load(acc: Buffer) -> E.Expr:
    return E.BufferLoad(acc.dtype, acc, (E.const(0),))


# Up to this many thread bits, one round (each thread reads all 2^bits - 1 partners) beats a
# butterfly (a round per bit, two barriers each); the measured CUDA norms and softmax use one or two.
ONE_ROUND_MAX_BITS = 2


def _through_shared_memory(accs: list[Buffer], thread_bits, op: S.Reduce | S.FinalizeReducer, ctx,
                           nan_propagate: bool = True) -> list[S.Stmt]:  # fmt: skip
    """Threads that differ in `thread_bits` (bits of the thread index) combine their partials through
    a scratch buffer: in one round for few bits, else in a butterfly (one round per bit, each thread
    reading its partner's partials). The barriers between writes and reads come from
    `insert-barriers`, which sees the scratch buffer's accesses."""
    slots = len(accs) * ctx.threads
    scratch = Buffer(f"red_smem{ctx.fresh}", (E.const(slots),), accs[0].dtype, "shared.dyn")
    ctx.fresh += 1
    mask = sum(1 << b for b in thread_bits)
    if len(thread_bits) <= ONE_ROUND_MAX_BITS:
        rounds = [[p for p in range(1, mask + 1) if p & ~mask == 0]]
    else:
        rounds = [[1 << b] for b in thread_bits]
    stmts: list[S.Stmt] = []
    for partners in rounds:
        for k, acc in enumerate(accs):
            stmts.append(S.BufferStore(scratch, _load(acc), (E.add(E.mul(k, ctx.threads), ctx.tid),)))
        for k, acc in enumerate(accs):
            for p in partners:
                index = E.add(E.mul(k, ctx.threads), E.int_call("bitwise_xor", ctx.tid, p))
                other = E.BufferLoad(acc.dtype, scratch, (index,))
                combined = combine(_plain(op.kind), _load(acc), other, nan_propagate)
                stmts.append(S.BufferStore(acc, combined, (E.const(0),)))
    return [S.Allocate(scratch, S.seq(*stmts), span=op.span)]


def lower_cumsum(op: S.Cumsum, ctx) -> S.Stmt:
    """Rows are split over threads; each thread scans its rows serially (shared or global tiles)."""
    if op.src.buffer.scope == FRAGMENT or op.dst.buffer.scope == FRAGMENT:
        ctx.fail(f"T.cum{op.kind} of a fragment is not supported on this target", op.span,
                 "T.copy it to a shared buffer, scan there, and copy back")  # fmt: skip
    scan = cumsum_loops(op)
    kept = tuple(E.const_value(e) for k, e in enumerate(op.src.shape) if k != op.dim)
    if not kept:
        return S.IfThenElse(E.compare(E.EQ, ctx.tid, 0), scan, span=op.span)
    nest = _parallelize(scan, len(kept))
    return dataclasses.replace(nest, annotations=nest.annotations + (("layout", ctx.blocked(kept)),))


def _parallelize(loop: S.For, depth: int) -> S.For:
    """The outer `depth` loops of the serial scan become a T.Parallel nest over the kept dims."""
    body = _parallelize(loop.body, depth - 1) if depth > 1 else loop.body
    return dataclasses.replace(loop, kind=S.ForKind.PARALLEL, body=body)
