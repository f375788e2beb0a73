"""TileLang's explicit warp specialization: `T.ws`, `T.alloc_barrier` and the mbarrier operations, and
`T.tma_copy`.

`with T.ws(k):` runs its body as the tile-level code of warpgroup k, threads [128 k, 128 (k + 1)) (TileLang's
warpgroup of 128 threads, on every target): it is `if` on the thread index, a thread group
(transform/thread_groups.py). Groups hand tiles to one another through mbarriers: `T.alloc_barrier(n)`
allocates one whose phase completes after n arrivals (`[n0, n1, ...]`: several), each thread running
`T.barrier_arrive(b)` arrives once, and `T.barrier_wait(b, parity)` waits until the phase of that parity
has completed. `T.tma_copy(src, dst, barrier=b)` copies a tile for such a protocol; here it is a copy by
the threads running it that is complete when each of them goes on (TileLang issues a bulk tensor copy
whose bytes complete the barrier's phase), so the usual `tma_copy ... barrier_arrive` hands over the
tile either way, and `T.mbarrier_expect_tx` has nothing to count (it adds nothing).
"""

from __future__ import annotations

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.language import builder
from tilecraft.language.alloc import _alloc
from tilecraft.language.tileops import copy

WARPGROUP = 128  # threads of TileLang's T.ws(k) groups


def alloc_barrier(arrive_count: int | list[int] | tuple[int, ...]) -> Buffer:
    """`T.alloc_barrier(128)` or `T.alloc_barrier([128, 128, ...])`: mbarriers, the k-th completing a phase
    after `arrive_count[k]` arrivals; index the buffer to name one (`mbars[i]`)."""
    counts = [arrive_count] if not isinstance(arrive_count, (list, tuple)) else list(arrive_count)
    if not counts or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in counts):
        raise builder.error(
            f"T.alloc_barrier needs arrival counts that are positive ints, got {arrive_count!r}",
            hint="one count per barrier: T.alloc_barrier(128) or T.alloc_barrier([128] * stages)",
        )
    buf = _alloc((len(counts),), dt.uint64, S.BARRIER_SCOPE, "T.alloc_barrier")
    builder.current().inits[buf] = lambda new, span: S.BarrierInit(new, tuple(counts), span=span)
    return buf


class WarpGroups:
    """What `T.ws(*groups)` gives `with`: the condition that the thread is in one of the warpgroups."""

    def __init__(self, condition: E.Expr) -> None:
        self.condition = condition


def ws(*warp_groups: int) -> WarpGroups:
    """`with T.ws(k):` (or `T.ws(j, k)`): the body is the code of warpgroup k (threads [128 k, 128 k + 128))."""
    if not warp_groups or any(isinstance(g, bool) or not isinstance(g, int) or g < 0 for g in warp_groups):
        raise builder.error(f"T.ws needs warpgroup indices (ints >= 0), got {warp_groups!r}")
    ctx = builder.current("T.ws").kernel("T.ws")
    threads = 1
    for extent in ctx.thread_extents:
        threads *= extent
    tid = ctx.thread_vars[0]
    if len(ctx.thread_vars) != 1:
        raise builder.error("T.ws needs a kernel with one thread dimension (threads=N)")
    late = [g for g in warp_groups if WARPGROUP * g >= threads]
    if late:
        raise builder.error(
            f"T.ws({', '.join(map(str, warp_groups))}): warpgroup {late[0]} starts at thread {WARPGROUP * late[0]}, "
            f"but the kernel has {threads} threads",
            hint=f"a warpgroup is {WARPGROUP} threads; give T.Kernel threads={WARPGROUP * (max(warp_groups) + 1)}",
        )
    condition = None
    for g in sorted(set(warp_groups)):
        lo, hi = WARPGROUP * g, min(WARPGROUP * (g + 1), threads)
        term = (
            E.compare(E.LT, tid, hi)
            if lo == 0
            else E.logical_and(E.compare(E.GE, tid, lo), E.compare(E.LT, tid, hi))
        )
        condition = term if condition is None else E.logical_or(condition, term)
    return WarpGroups(condition)


def _barrier(mbarrier, what: str) -> tuple[Buffer, E.Expr]:
    """The barrier buffer and index an mbarrier argument names: `mbars[i]`, or a one-barrier buffer."""
    if isinstance(mbarrier, E.BufferLoad) and mbarrier.buffer.scope == S.BARRIER_SCOPE:
        return mbarrier.buffer, mbarrier.indices[0]
    if isinstance(mbarrier, Buffer) and mbarrier.scope == S.BARRIER_SCOPE:
        if E.const_value(mbarrier.shape[0]) != 1:
            raise builder.error(
                f"{what}: {mbarrier.name} holds several barriers; name one: {mbarrier.name}[i]"
            )
        return mbarrier, E.const(0)
    raise builder.error(
        f"{what} needs a barrier from T.alloc_barrier (`bar` or `mbars[i]`), got {type(mbarrier).__name__}"
    )


def _op(op: str, mbarrier, value, what: str) -> S.Mbarrier:
    buf, index = _barrier(mbarrier, what)
    converted = None if value is None else E.convert(value)
    if converted is not None and not converted.dtype.is_integer:
        raise builder.error(f"{what}: {op} takes an integer, got {value!r}")
    return S.Mbarrier(op, buf, index, converted, span=builder.current_span())


def mbarrier_arrive(mbarrier, cta_id=None) -> S.Mbarrier:
    """Each thread running it arrives once on the barrier."""
    if cta_id is not None:
        raise builder.error(
            "T.mbarrier_arrive(cta_id=...) arrives on another block's barrier (clusters), which tilecraft "
            "does not support"
        )
    return _op("arrive", mbarrier, None, "T.mbarrier_arrive")


def barrier_arrive(mbarrier) -> S.Mbarrier:
    """TileLang's name for `T.mbarrier_arrive`."""
    return _op("arrive", mbarrier, None, "T.barrier_arrive")


def mbarrier_wait_parity(mbarrier, parity) -> S.Mbarrier:
    """Wait until the barrier's phase of parity `parity` has completed."""
    return _op("wait", mbarrier, parity, "T.mbarrier_wait_parity")


def barrier_wait(mbarrier, parity) -> S.Mbarrier:
    """TileLang's name for `T.mbarrier_wait_parity`."""
    return _op("wait", mbarrier, parity, "T.barrier_wait")


def mbarrier_expect_tx(mbarrier, tx) -> S.Mbarrier:
    """`tx` bytes of asynchronous copies complete the phase too (tilecraft's copies are complete when their
    threads go on, so there is nothing to count)."""
    return _op("expect_tx", mbarrier, tx, "T.mbarrier_expect_tx")


def mbarrier_arrive_expect_tx(mbarrier, tx) -> S.Stmt:
    """`T.mbarrier_expect_tx` then `T.mbarrier_arrive`, by each thread running it."""
    return S.seq(
        _op("expect_tx", mbarrier, tx, "T.mbarrier_arrive_expect_tx"),
        _op("arrive", mbarrier, None, "T.mbarrier_arrive_expect_tx"),
    )


def tma_copy(src, dst, *, barrier=None, cluster_mask=None, leader_scope_threads=None, eviction_policy=None,
             annotations=None) -> S.Copy:  # fmt: skip
    """TileLang's copy for a warp-specialized protocol: a global -> shared copy names the barrier whose
    phase its tile completes (required, as in TileLang). Here it is `T.copy` by the threads running it,
    complete when each thread goes on; the threads' `T.barrier_arrive` then hands the tile over."""
    if cluster_mask is not None:
        raise builder.error(
            "T.tma_copy(cluster_mask=...) multicasts within a cluster, which tilecraft does not support"
        )
    made = copy(src, dst, eviction_policy=eviction_policy)
    if (
        made.src.buffer.scope == "global"
        and made.dst.buffer.scope in ("shared", "shared.dyn")
        and barrier is None
    ):
        raise builder.error(
            "T.tma_copy from global to shared memory needs barrier=: the mbarrier whose phase the tile completes",
            hint="T.tma_copy(A[...], A_shared, barrier=data_is_ready), then T.barrier_arrive(data_is_ready)",
        )
    if barrier is not None:
        _barrier(barrier, "T.tma_copy(barrier=...)")
    return made


__all__ = [
    "alloc_barrier",
    "barrier_arrive",
    "barrier_wait",
    "mbarrier_arrive",
    "mbarrier_arrive_expect_tx",
    "mbarrier_expect_tx",
    "mbarrier_wait_parity",
    "tma_copy",
    "ws",
]
