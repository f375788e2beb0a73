"""Statements of the tile IR, including the tile operations that backends lower whole."""

from __future__ import annotations

import enum
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.expr import Expr, Node, Var, node

Annotations = tuple[tuple[str, Any], ...]


# The For annotation of a `T.Persistent` loop: a serial loop over a block's waves of tiles (its trip count
# counts only the waves whose tile exists).
PERSISTENT = "persistent"
# The KernelLaunch annotation of `T.Kernel(..., cluster_dims=...)`: (x, y, z) blocks per thread-block cluster,
# present only when a cluster holds more than one block.
CLUSTER_DIMS = "cluster_dims"


def annotation(annotations: Annotations, key: str, default: Any = None) -> Any:
    for k, v in annotations:
        if k == key:
            return v
    return default


# While the parser runs a plain Python function a kernel calls, every statement made meanwhile, in the
# order made: the ones the function's T.* calls build and it does not return go where the call is
# (tilecraft.language parser, evaluator.call_python). None otherwise, so building IR elsewhere records
# nothing.
STATEMENTS_MADE: ContextVar[list | None] = ContextVar("statements_made", default=None)


@node
class Stmt(Node):
    """Base of statements."""

    def __post_init__(self) -> None:
        made = STATEMENTS_MADE.get()
        if made is not None:
            made.append(self)


@node
class SeqStmt(Stmt):
    stmts: tuple[Stmt, ...]


@node
class Evaluate(Stmt):
    """Evaluate an expression for its effect (an intrinsic call such as `print` or a barrier)."""

    value: Expr


@node
class BufferStore(Stmt):
    buffer: Buffer
    value: Expr
    indices: tuple[Expr, ...]


@node
class LetStmt(Stmt):
    """Bind an immutable local scalar for the extent of `body`."""

    var: Var
    value: Expr
    body: Stmt


@node
class IfThenElse(Stmt):
    condition: Expr
    then_case: Stmt
    else_case: Stmt | None = None


class ForKind(enum.Enum):
    SERIAL = "serial"
    PARALLEL = "parallel"
    PIPELINED = "pipelined"
    UNROLLED = "unrolled"
    VECTORIZED = "vectorized"


@node
class For(Stmt):
    """A loop `for var in [min, min + extent)`.

    PARALLEL is TileLang's `T.Parallel`: iterations are independent and the backend spreads them over
    the block's threads. PIPELINED carries `num_stages`, `order`, `stage` and `group` annotations.
    """

    loop_var: Var
    min: Expr
    extent: Expr
    kind: ForKind
    body: Stmt
    annotations: Annotations = ()


@node
class While(Stmt):
    """`while condition:` inside a kernel: `body` runs as long as `condition`, evaluated before every
    iteration, holds (a trip count known only at run time, e.g. a persistent kernel's work loop)."""

    condition: Expr
    body: Stmt


@node
class Allocate(Stmt):
    """Allocate `buffer` in its scope for the extent of `body`."""

    buffer: Buffer
    body: Stmt


@node
class KernelLaunch(Stmt):
    """`with T.Kernel(*grid, threads=...)`: one launch of `body` over the grid of blocks."""

    grid: tuple[Expr, ...]
    threads: tuple[int, ...]
    block_vars: tuple[Var, ...]
    thread_vars: tuple[Var, ...]
    body: Stmt
    annotations: Annotations = ()


@node
class TileOp(Stmt):
    """A tile-level operation; stays whole until a backend's op table lowers it."""


# T.copy's keyword hints, which printed IR spells as keywords; other annotation keys print in `annotations=`.
COPY_KEYWORDS = ("coalesced_width", "disable_tma", "eviction_policy")


@node
class Copy(TileOp):
    """Copy `src` to `dst` (equal extents after dropping unit dims); loads past the edge read zero."""

    src: BufferRegion
    dst: BufferRegion
    annotations: Annotations = ()


@node
class Fill(TileOp):
    dst: BufferRegion
    value: Expr


class GemmWarpPolicy(enum.Enum):
    """How a gemm's warps split the output tile (TileLang's names)."""

    Square = "Square"
    FullRow = "FullRow"
    FullCol = "FullCol"

    def split(self, units: int, fits: Callable[[int, int], bool], m: int, n: int) -> tuple[int, int] | None:
        """The (rows, columns) grid of `units` warps over an m x n tile, both powers of two, that `fits`
        accepts and the policy prefers: the most rows (FullRow), the most columns (FullCol), or the
        squarest per-warp tiles, more rows on a tie (Square); None if no grid fits."""
        options = []
        rows = 1
        while rows <= units:
            if fits(rows, units // rows):
                options.append((rows, units // rows))
            rows *= 2
        if not options:
            return None
        if self is GemmWarpPolicy.FullRow:
            return max(options)
        if self is GemmWarpPolicy.FullCol:
            return min(options)
        return min(options, key=lambda g: (abs(m // g[0] - n // g[1]), -g[0]))


@node
class Gemm(TileOp):
    """`C (+)= op(A) @ op(B)` on tiles; `op` transposes where asked."""

    a: BufferRegion
    b: BufferRegion
    c: BufferRegion
    transpose_a: bool = False
    transpose_b: bool = False
    policy: GemmWarpPolicy = GemmWarpPolicy.Square
    clear_accum: bool = False
    k_pack: int = 1
    wg_wait: int = 0
    # What a backend decided for this gemm, recorded by one of its passes for the later ones (CUDA's
    # select-gemm-instructions: its GemmPlan under "gemm_plan").
    annotations: Annotations = ()


REDUCE_KINDS = ("sum", "max", "min", "abssum", "absmax")


@node
class Reduce(TileOp):
    """Reduce `src` along `dim` into `dst`; with `clear=False` the result combines with dst's value.
    `nan_propagate` (max, min, absmax of floats): True, a NaN element gives NaN (NumPy's maximum);
    False, NaN elements are ignored (C's fmax: NaN only when every element, dst's too, is NaN)."""

    kind: str
    src: BufferRegion
    dst: BufferRegion
    dim: int
    clear: bool = True
    nan_propagate: bool = True

    @property
    def keeps_dim(self) -> bool:
        """Whether dst keeps the reduced dim, as extent 1 (TileLang's reduce into a buffer of src's rank)."""
        return len(self.dst.ranges) == len(self.src.ranges)


@node
class Cumsum(TileOp):
    """Inclusive scan of `src` along `dim` into `dst` (from the end when `reverse`): a running sum, or a
    running max / min (`kind`, one of SCAN_KINDS)."""

    src: BufferRegion
    dst: BufferRegion
    dim: int
    reverse: bool = False
    kind: str = "sum"


SCAN_KINDS = ("sum", "max", "min")


# What a cross-thread combine (T.finalize_reducer, a thread all-reduce, a warp reduce) can do: the
# reductions' own kinds, and the bitwise ones of integers (exact, so any combine order gives the same bits).
BITWISE_REDUCE_KINDS = ("bitand", "bitor", "bitxor")
THREAD_REDUCE_KINDS = ("sum", "max", "min", *BITWISE_REDUCE_KINDS)


@node
class FinalizeReducer(TileOp):
    """`T.finalize_reducer(buf)`: the fragment `buf` (made by `T.alloc_reducer`) holds per-thread partial
    results (`T.Parallel` iterations updated each thread's copy of an element); afterwards every copy
    holds the `kind` combination of all of them."""

    kind: str
    buffer: Buffer


@node
class ThreadAllReduce(Stmt):
    """Per-thread code that every thread of the block runs together (TVM's `tvm_thread_allreduce`):
    `value` of each thread, combined (`kind`) over the threads whose linear index differs from its own
    only in the digits `axes` (pairs (stride, extent): the digit is `t // stride % extent`), is stored
    into `buffer[indices]` by each of those threads. An extent of GROUP_WIDTH is the target's thread-group
    width (a warp: `T.warp_reduce_*`), which lower-thread-allreduce resolves."""

    kind: str
    value: Expr
    buffer: Buffer
    indices: tuple[Expr, ...]
    axes: tuple[tuple[int, int], ...]


# ThreadAllReduce's axis extent that stands for the target's thread-group width.
GROUP_WIDTH = 0

ATOMIC_KINDS = ("add", "max", "min")


@node
class AtomicOp(TileOp):
    """Atomic read-modify-write of `dst` with a scalar `value` or, elementwise, a region."""

    kind: str
    dst: BufferRegion
    value: Expr | BufferRegion


@node
class UseSwizzle(Stmt):
    """Hint: rasterize blocks in panels of `panel_size` for L2 reuse (`T.use_swizzle`)."""

    panel_size: int
    order: str = "row"


@node
class AnnotateLayout(Stmt):
    """Hint: `buffer` uses `layout` (a Layout or Fragment) instead of an inferred one."""

    buffer: Buffer
    layout: Any


@node
class AnnotateSafeValue(Stmt):
    """`T.annotate_safe_value({A: value})`: in the enclosing kernel, a guarded load of the global buffer
    `A` past its edge (guard-accesses) reads `value` instead of zero."""

    buffer: Buffer
    value: Expr


@node
class Print(Stmt):
    """`T.print`: print a scalar or a buffer region, prefixed by `msg` (a debugging aid)."""

    value: Expr | BufferRegion
    msg: str = ""


# The scope of a `T.alloc_barrier` buffer: mbarriers (a phase counter each) that thread groups hand data
# to one another by (TileLang's explicit warp specialization).
BARRIER_SCOPE = "shared.barrier"


@node
class BarrierInit(Stmt):
    """`T.alloc_barrier(counts)` where it is allocated: mbarrier k of `barriers` completes a phase after
    `counts[k]` arrivals; its first phase has parity 0."""

    barriers: Buffer
    counts: tuple[int, ...]


MBARRIER_OPS = ("arrive", "wait", "expect_tx")


@node
class Mbarrier(Stmt):
    """What each thread running it does on mbarrier `index` of `barriers` (a BARRIER_SCOPE buffer):

    * `arrive`: arrives once (a group of n threads running it makes n arrivals);
    * `wait`: waits until the phase of parity `value` has completed (`value` 1 on a fresh barrier returns
      at once: the phase before the first counts as completed);
    * `expect_tx`: `value` bytes of asynchronous copies must land too before the phase completes.
    """

    op: str
    barriers: Buffer
    index: Expr
    value: Expr | None = None


def seq(*stmts: Stmt | None) -> Stmt:
    """A sequence with nested sequences flattened; a single statement is returned as is."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.stmts)
        else:
            flat.append(s)
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(tuple(flat))
