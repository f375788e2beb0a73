"""Cross-thread reductions a kernel writes itself: TileLang's reducers and TVM's thread all-reduce.

* `T.alloc_reducer(shape, dtype, op="sum", replication=None)` is a fragment whose elements each thread
  updates in `T.Parallel` loops (`r[i] += x[i, j]`); `T.finalize_reducer(r)` combines the threads' partial
  values, after which every copy of an element holds the result.
* `with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, dtype)]), "reduce_scope", ...):
  T.evaluate(T.tvm_thread_allreduce(T.uint32(1), value, True, out[0], ty, dtype="handle"))` is TVM's
  all-reduce of per-thread code: `value` of each thread combined over the threads that differ only in
  the thread indices named (`ty`), the result in `out[0]` of each of them.

The combiner of `T.comm_reducer` is read for what it computes: called on two fresh values, its result
must be their sum, max or min (in either order).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.structural import structural_equal
from tilecraft.language import builder
from tilecraft.language.generic import WithBlock
from tilecraft.transform.reductions import combine

REPLICATIONS = ("all", "none")
REDUCE_SCOPE = "reduce_scope"


def alloc_reducer(shape, dtype, op: str = "sum", replication: str | None = None) -> Buffer:
    """A fragment of per-thread partial results of `op` ("sum", "max" or "min"), combined by
    `T.finalize_reducer`. `replication` ("all" or "none") is TileLang's layout choice; here the layout is
    inferred from the loops that update the reducer (its copies are wherever those loops' threads are)
    and the results are the same."""
    from tilecraft.language.alloc import _alloc

    if op not in S.THREAD_REDUCE_KINDS:
        raise builder.error(f"T.alloc_reducer: op must be one of {', '.join(S.THREAD_REDUCE_KINDS)}, got {op!r}")
    if replication is not None and replication not in REPLICATIONS:
        raise builder.error(f"T.alloc_reducer: replication must be 'all' or 'none', got {replication!r}")
    buf = _alloc(shape, dtype, "local.fragment", "T.alloc_reducer")
    builder.current().reducers[buf] = op
    return buf


def finalize_reducer(reducer, batch: int = 1) -> S.FinalizeReducer:
    """Every copy of each element of `reducer` becomes the combination of all threads' partial values
    (`batch`, TileLang's grouping of the exchanges, changes nothing here)."""
    b = builder.current("T.finalize_reducer")
    buf = reducer.buffer if isinstance(reducer, BufferRegion) else reducer
    kind = b.reducers.get(buf) if isinstance(buf, Buffer) else None
    if kind is None:
        raise b.error("T.finalize_reducer needs a buffer made by T.alloc_reducer",
                      hint="allocate it with T.alloc_reducer(shape, dtype, op=...)")  # fmt: skip
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise b.error(f"T.finalize_reducer: batch must be a positive int, got {batch!r}")
    return S.FinalizeReducer(kind, buf, span=builder.current_span())


@dataclass(frozen=True)
class CommReducer:
    """TVM's commutative reducer, as far as tilecraft lowers one: its kind and its value's dtype."""

    kind: str
    dtype: dt.DataType


def comm_reducer(combiner, identity) -> CommReducer:
    """TVM's `T.comm_reducer(lambda x, y: ..., [identity])`: a reducer of one value whose combiner is a
    sum, max or min."""
    values = list(identity) if isinstance(identity, (list, tuple)) else [identity]
    if len(values) != 1:
        raise builder.error(f"T.comm_reducer: reducers of one value are supported, got {len(values)} identities")
    dtype = E.convert(values[0]).dtype
    x, y = E.Var(dtype, "x"), E.Var(dtype, "y")
    result = combiner(x, y)
    result = result[0] if isinstance(result, (list, tuple)) and len(result) == 1 else result
    for kind in S.THREAD_REDUCE_KINDS:
        if any(structural_equal(E.convert(result), combine(kind, a, b)) for a, b in ((x, y), (y, x))):
            return CommReducer(kind, dtype)
    raise builder.error(
        f"T.comm_reducer: the combiner computes {result}, not a sum, max or min of its two arguments",
        hint="write lambda x, y: x + y, T.max(x, y) or T.min(x, y)",
    )


@dataclass(frozen=True)
class Handle:
    """`T.reinterpret(v, dtype="handle")`: TVM's opaque pointer, accepted only as a `T.attr` value."""

    value: E.Expr


class ReduceScope(WithBlock):
    """`with T.attr(reducer, "reduce_scope", ...):` — the reducer `T.tvm_thread_allreduce` uses inside."""

    def __init__(self, reducer: CommReducer) -> None:
        self.reducer = reducer

    def enter(self) -> None:
        builder.current().reduce_scopes.append(self.reducer)

    def exit(self) -> None:
        builder.current().reduce_scopes.pop()

    def build(self, body: S.Stmt) -> S.Stmt:
        return body


def attr(node, attr_key: str, value) -> ReduceScope:
    """TVM's `T.attr(node, key, value)` block; the key tilecraft lowers is "reduce_scope" with a
    `T.comm_reducer` (the reducer of the `T.tvm_thread_allreduce` calls in the block)."""
    if attr_key != REDUCE_SCOPE or not isinstance(node, CommReducer):
        raise builder.error(
            f"T.attr({type(node).__name__}, {attr_key!r}, ...) is not supported: the one TVM attribute "
            "tilecraft lowers is a reduce scope, T.attr(T.comm_reducer(...), \"reduce_scope\", ...)",
            hint="for a cross-thread reduction of fragments use T.reduce_sum / T.alloc_reducer",
        )
    return ReduceScope(node)


def tvm_thread_allreduce(size, *args, dtype=None) -> S.ThreadAllReduce:
    """TVM's `T.tvm_thread_allreduce(size, source, cond, dst, *thread_indices)`: the enclosing reduce
    scope's combination of `source` over the threads that differ only in `thread_indices` (whole thread
    dims of the kernel, `T.get_thread_binding(d)`), stored into the one element `dst` of each of them."""
    b = builder.current("T.tvm_thread_allreduce")
    kernel = b.kernel("T.tvm_thread_allreduce")
    if not b.reduce_scopes:
        raise b.error("T.tvm_thread_allreduce needs an enclosing `with T.attr(T.comm_reducer(...), "
                      "\"reduce_scope\", ...):`")  # fmt: skip
    count = E.const_value(E.convert(size))
    if count != 1 or len(args) < 4:
        raise b.error(f"T.tvm_thread_allreduce reduces one value: (1, source, True, dst, thread indices...), "
                      f"got size {size} and {len(args)} more arguments")  # fmt: skip
    source, cond, dst, *threads = args
    if E.const_value(E.convert(cond)) is not True and E.const_value(E.convert(cond)) != 1:
        raise b.error("T.tvm_thread_allreduce: a condition other than True is not supported")
    if not isinstance(dst, E.BufferLoad) or dst.buffer.scope not in ("local", "local.var"):
        raise b.error("T.tvm_thread_allreduce: the destination must be one element of a T.alloc_local or "
                      "T.alloc_var buffer, e.g. out[0]")  # fmt: skip
    return S.ThreadAllReduce(b.reduce_scopes[-1].kind, E.convert(source), dst.buffer, dst.indices,
                             _axes(threads, kernel, b), span=builder.current_span())  # fmt: skip


def _axes(threads, kernel, b) -> tuple[tuple[int, int], ...]:
    from tilecraft.transform.thread_dims import thread_dim_strides

    strides = thread_dim_strides(kernel.thread_extents)
    axes = []
    for t in threads:
        dim = next((k for k, v in enumerate(kernel.thread_vars) if v is t), None)
        if dim is None:
            raise b.error(f"T.tvm_thread_allreduce: {t} is not a thread index of the kernel; name whole "
                          "thread dims (T.get_thread_binding(d))")  # fmt: skip
        axis = (strides[dim], kernel.thread_extents[dim])
        if axis in axes:
            raise b.error(f"T.tvm_thread_allreduce: thread index {t} is named twice")
        axes.append(axis)
    if not axes:
        raise b.error("T.tvm_thread_allreduce: name the thread indices to reduce over")
    return tuple(sorted(axes))
