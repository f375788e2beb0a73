"""Cross-thread reductions a kernel writes itself: TileLang's reducers and TVM's thread all-reduce.

* `T.alloc_reducer(shape, dtype, op="sum", replication=None)` is a fragment whose elements each thread
  updates in `T.Parallel` loops (`r[i] += x[i, j]`); `T.finalize_reducer(r)` combines the threads' partial
  values, after which every copy of an element holds the result.
* `with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, dtype)]), "reduce_scope", ...):
  T.evaluate(T.tvm_thread_allreduce(T.uint32(1), value, True, out[0], ty, dtype="handle"))` is TVM's
  all-reduce of per-thread code: `value` of each thread combined over the threads that differ only in
  the thread indices named (`ty`), the result in `out[0]` of each of them.

TileLang's explicit epoch spells the same reduction `T.reducer_init(r, seed=None)` (every partial starts
at the identity; the seed, evaluated there, is combined once into each result), `T.reducer_update(r[i], x)`
inside `T.Parallel` loops (each iteration contributes once) and `T.finalize_reducer(r, result)` (the
combined values, seed included, into `result`; `r` itself when no result is given).

The combiner of `T.comm_reducer` is read for what it computes: called on two fresh values, its result
must be their sum, max or min (in either order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilecraft.errors import ParseAssertionError, ParseError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.structural import structural_equal
from tilecraft.language import builder
from tilecraft.language.generic import WithBlock
from tilecraft.transform.reductions import combine, identity

REPLICATIONS = ("all", "none")
REDUCE_SCOPE = "reduce_scope"


def alloc_reducer(shape, dtype, op: str = "sum", replication: str | None = None) -> Buffer:
    """A fragment of per-thread partial results of `op` ("sum", "max", "min", or for integers "bitand",
    "bitor", "bitxor"), combined by
    `T.finalize_reducer`. `replication` ("all" or "none") is TileLang's layout choice; here the layout is
    inferred from the loops that update the reducer (its copies are wherever those loops' threads are)
    and the results are the same."""
    from tilecraft.language.alloc import _alloc

    if op not in S.THREAD_REDUCE_KINDS:
        raise builder.error(
            f"T.alloc_reducer: op must be one of {', '.join(S.THREAD_REDUCE_KINDS)}, got {op!r}"
        )
    if op in S.BITWISE_REDUCE_KINDS and not dt.as_dtype(dtype).is_integer:
        # TileLang asserts this: an AssertionError too, located like every parse error
        raise ParseAssertionError(f"T.alloc_reducer: op={op!r} needs an integer dtype, got {dt.as_dtype(dtype)}",
                                  builder.current_span(), "use an integer reducer (int32, uint32, int64, ...)")
    if replication is not None and replication not in REPLICATIONS:
        raise builder.error(f"T.alloc_reducer: replication must be 'all' or 'none', got {replication!r}")
    buf = _alloc(shape, dtype, "local.fragment", "T.alloc_reducer")
    builder.current().reducers[buf] = op
    return buf


def finalize_reducer(reducer, result=None, batch: int = 1) -> S.Stmt | list[S.Stmt]:
    """Every copy of each element of `reducer` becomes the combination of all threads' partial values
    (`batch`, TileLang's grouping of the exchanges, changes nothing here). After `T.reducer_init`, the
    epoch's seed is combined in and the values go to `result` (a tile of the reducer's shape) when given."""
    b = builder.current("T.finalize_reducer")
    buf = _reducer_buffer(reducer, "T.finalize_reducer")
    _check_batch(buf, batch)
    out = _result_buffer(buf, result) if result is not None else None
    epoch = b.reducer_epochs.pop(buf, None)
    finalize = S.FinalizeReducer(b.reducers[buf], buf, span=builder.current_span())
    if epoch is None:
        if out is not None:
            raise b.error("T.finalize_reducer(r, result) needs the epoch T.reducer_init(r) opened",
                          hint="start the reduction with T.reducer_init(r) before its T.reducer_update calls")  # fmt: skip
        return finalize
    _check_epoch_scope(b, epoch)
    if epoch.seed is None and out is None:
        return finalize
    return [finalize, _publish(b.reducers[buf], buf, epoch.seed, out if out is not None else buf)]


def _check_batch(buf: Buffer, batch: int) -> None:
    """TileLang's rules for `batch` (the exchanges of `batch` elements at a time): a ValueError when it
    is not a positive int (raised by a T.* call, located by the parser), and at most the reducer's
    elements, evenly dividing them."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"T.finalize_reducer: batch must be >= 1 (a positive int), got {batch!r}")
    elements = 1
    for extent in buf.shape:
        elements *= E.const_value(extent) or 0
    if elements and batch > elements:
        raise ValueError(f"T.finalize_reducer: batch {batch} exceeds total output elements ({elements} in "
                         f"{buf.name})")  # fmt: skip
    if elements and elements % batch:
        raise ValueError(f"T.finalize_reducer: batch {batch} must evenly divide the {elements} elements of "
                         f"{buf.name}")  # fmt: skip


def reducer_init(reducer, value=None) -> S.Fill:
    """Open the reducer's epoch: every partial value becomes the op's identity; `value` (the reducer's
    dtype), evaluated here, is combined exactly once into each result by `T.finalize_reducer`."""
    b = builder.current("T.reducer_init")
    buf = _reducer_buffer(reducer, "T.reducer_init")
    if buf in b.reducer_epochs:
        raise b.error(f"double T.reducer_init of {buf.name}: its epoch is still open",
                      hint="end it with T.finalize_reducer before opening the next")  # fmt: skip
    epoch = ReducerEpoch(scope=b.parser.scope, span=builder.current_span())
    if value is not None:
        seed = E.convert(value)
        if isinstance(value, E.Expr) and seed.dtype != buf.dtype:
            raise b.error(f"T.reducer_init: the starting value {seed} is {seed.dtype}, which does not match "
                          f"reducer {buf.name} ({buf.dtype})", hint=f"cast it: T.cast(value, {str(buf.dtype)!r})")  # fmt: skip
        _hold_seed(b, epoch, E.cast(seed, buf.dtype))
    b.reducer_epochs[buf] = epoch
    return S.Fill(buf.full_region(), identity(b.reducers[buf], buf.dtype), span=builder.current_span())


def reducer_update(element, value) -> S.BufferStore:
    """Combine `value` into one element of a reducer (`r[i]`), inside a `T.Parallel` loop: each iteration
    contributes once, whichever threads the loop's layout repeats it on."""
    b = builder.current("T.reducer_update")
    if not isinstance(element, E.BufferLoad) or element.buffer not in b.reducers:
        raise b.error("T.reducer_update needs one element of a T.alloc_reducer buffer, e.g. r[i]")
    buf = element.buffer
    if buf not in b.reducer_epochs:
        raise b.error(f"T.reducer_update of {buf.name} before T.reducer_init",
                      hint=f"open the epoch first: T.reducer_init({buf.name})")  # fmt: skip
    if not _inside_parallel(b):
        raise b.error("T.reducer_update outside any T.Parallel loop: it must be inside one, else every thread "
                      "would contribute", hint="write it in `for i in T.Parallel(n):`")  # fmt: skip
    update = combine(b.reducers[buf], element, E.cast(E.convert(value), buf.dtype))
    return S.BufferStore(buf, update, element.indices, span=builder.current_span())


@dataclass
class ReducerEpoch:
    """A reducer between its T.reducer_init and T.finalize_reducer: where the init was written and the
    variable holding its seed (None without one)."""

    scope: object
    span: object = None
    seed: Buffer | None = field(default=None)


def check_epochs_closed(b: builder.Builder) -> None:
    """At the end of a kernel: an epoch T.reducer_init opened that no T.finalize_reducer closed leaves
    the partial values uncombined (an error at the init's line)."""
    for buf, epoch in b.reducer_epochs.items():
        raise ParseError(f"reducer {buf.name} is never finalized: its T.reducer_init opened an epoch that no "
                         "T.finalize_reducer closes", epoch.span,
                         f"combine the partial values with T.finalize_reducer({buf.name}) after the updates")  # fmt: skip


def check_no_partial_access(b: builder.Builder, buf: Buffer, value) -> None:
    """Inside a reducer's epoch its elements are per-thread partial values: a store other than
    T.reducer_update, or a read, would see or break them (a located error)."""
    from tilecraft.ir.visitor import walk

    if buf in b.reducer_epochs:
        raise b.error(f"illegal store to reducer {buf.name} between its T.reducer_init and T.finalize_reducer",
                      hint=f"update it with T.reducer_update({buf.name}[i], value)")  # fmt: skip
    if not isinstance(value, E.Expr):
        return
    for node in walk(value):
        if isinstance(node, E.BufferLoad) and node.buffer in b.reducer_epochs:
            raise b.error(f"illegal read of reducer {node.buffer.name} before its T.finalize_reducer: its "
                          "elements are partial values", hint="read the result T.finalize_reducer gives")  # fmt: skip


def _reducer_buffer(reducer, what: str) -> Buffer:
    b = builder.current(what)
    buf = reducer.buffer if isinstance(reducer, BufferRegion) else reducer
    if not isinstance(buf, Buffer) or buf not in b.reducers:
        raise b.error(f"{what} needs a buffer made by T.alloc_reducer",
                      hint="allocate it with T.alloc_reducer(shape, dtype, op=...)")  # fmt: skip
    return buf


def _result_buffer(reducer: Buffer, result) -> Buffer:
    out = result.buffer if isinstance(result, BufferRegion) else result
    if not isinstance(out, Buffer) or out.scope not in ("local.fragment", "shared", "shared.dyn"):
        raise builder.error("T.finalize_reducer: the result must be a fragment or shared tile")
    if tuple(E.const_value(d) for d in out.shape) != tuple(E.const_value(d) for d in reducer.shape):
        raise builder.error(f"T.finalize_reducer: the result {out.name} has shape {out.shape}, the reducer "
                            f"{reducer.name} {reducer.shape}")  # fmt: skip
    return out


def _hold_seed(b: builder.Builder, epoch: ReducerEpoch, value: E.Expr) -> None:
    """Keep the seed in a fresh per-thread variable stored at the init (a later change of what the
    expression reads does not change it); the parser names the variable when it allocates it."""
    from tilecraft.language.alloc import alloc_var

    var = alloc_var(value.dtype)

    def store(allocated: Buffer, span) -> S.Stmt:
        epoch.seed = allocated
        return S.BufferStore(allocated, value, (E.const(0),), span=span)

    b.inits[var] = store


def _publish(kind: str, reducer: Buffer, seed: Buffer | None, out: Buffer) -> S.Stmt:
    """`out[i...] = reducer[i...]` (combined with the seed), as a T.Parallel loop over the reducer."""
    span = builder.current_span()
    loop_vars = [E.Var(dt.int32, f"i{k}") for k in range(len(reducer.shape))]
    value: E.Expr = E.BufferLoad(reducer.dtype, reducer, tuple(loop_vars))
    if seed is not None:
        value = combine(kind, value, E.BufferLoad(seed.dtype, seed, (E.const(0),)))
    body: S.Stmt = S.BufferStore(out, value, tuple(loop_vars), span=span)
    for var, extent in reversed(list(zip(loop_vars, reducer.shape))):
        body = S.For(var, E.const(0), extent, S.ForKind.PARALLEL, body, span=span)
    return body


def _inside_parallel(b: builder.Builder) -> bool:
    scope = b.parser.scope
    while scope is not None and scope.kind not in ("function", "macro", "kernel"):
        if scope.loop_kind is S.ForKind.PARALLEL:
            return True
        scope = scope.parent
    return False


def _check_epoch_scope(b: builder.Builder, epoch: ReducerEpoch) -> None:
    """The finalize runs once per init: in the init's block, or in a branch nested in it, not in a loop
    the init is outside of (nor outside the block the init is in)."""
    scope = b.parser.scope
    while scope is not None and scope is not epoch.scope:
        if scope.kind != "ir_branch":
            break
        scope = scope.parent
    if scope is not epoch.scope:
        raise b.error("T.finalize_reducer is not in the scope of its T.reducer_init: it must run exactly "
                      "once per init", hint="write the finalize in the same block as the init (or in an "
                      "`if` inside that block)")  # fmt: skip


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
        raise builder.error(
            f"T.comm_reducer: reducers of one value are supported, got {len(values)} identities"
        )
    dtype = E.convert(values[0]).dtype
    x, y = E.Var(dtype, "x"), E.Var(dtype, "y")
    result = combiner(x, y)
    result = result[0] if isinstance(result, (list, tuple)) and len(result) == 1 else result
    for kind in S.THREAD_REDUCE_KINDS:
        if kind in S.BITWISE_REDUCE_KINDS and not dtype.is_integer:
            continue
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
            'tilecraft lowers is a reduce scope, T.attr(T.comm_reducer(...), "reduce_scope", ...)',
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


def _warp_reduce(kind: str, value) -> E.Expr:
    """`value` of each thread combined (`kind`) over its thread group (the consecutive threads of a warp
    or wavefront: the target's width, see lower-thread-allreduce), read by every thread of the group."""
    b = builder.current(f"T.warp_reduce_{kind}")
    b.kernel(f"T.warp_reduce_{kind}")
    value = E.convert(value)
    if kind in S.BITWISE_REDUCE_KINDS and not value.dtype.is_integer:
        raise b.error(f"T.warp_reduce_{kind} needs an integer value, got {value.dtype}")
    result = Buffer(f"warp_{kind}", (E.const(1),), value.dtype, "local.var")
    reduce = S.ThreadAllReduce(kind, value, result, (E.const(0),), ((1, S.GROUP_WIDTH),),
                               span=builder.current_span())  # fmt: skip
    b.preludes.append((result, reduce))
    return E.BufferLoad(result.dtype, result, (E.const(0),))


def warp_reduce_sum(value) -> E.Expr:
    """The sum of `value` over the calling thread's warp (every thread of the warp gets it)."""
    return _warp_reduce("sum", value)


def warp_reduce_max(value) -> E.Expr:
    """The largest `value` of the calling thread's warp."""
    return _warp_reduce("max", value)


def warp_reduce_min(value) -> E.Expr:
    """The smallest `value` of the calling thread's warp."""
    return _warp_reduce("min", value)


def warp_reduce_bitand(value) -> E.Expr:
    """The bitwise and of the integer `value` over the calling thread's warp."""
    return _warp_reduce("bitand", value)


def warp_reduce_bitor(value) -> E.Expr:
    """The bitwise or of the integer `value` over the calling thread's warp."""
    return _warp_reduce("bitor", value)


def warp_reduce_bitxor(value) -> E.Expr:
    """The bitwise xor of the integer `value` over the calling thread's warp."""
    return _warp_reduce("bitxor", value)
