"""`T.Kernel` and the block/thread bindings, plus hints and debugging helpers."""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.expr import Call, Expr, IntImm, IRError, StringImm, Var, convert
from tilecraft.ir.function import COMPILE_FLAGS_ATTR, PASS_CONFIGS_ATTR
from tilecraft.ir.op import ASSUME, DEVICE_ASSERT
from tilecraft.ir.stmt import (
    CLUSTER_DIMS,
    AnnotateLayout,
    AnnotateSafeValue,
    Evaluate,
    Print,
    UseSwizzle,
    seq,
)
from tilecraft.ir.visitor import walk
from tilecraft.language import builder


@dataclass(frozen=True)
class KernelSpec:
    """The launch `with T.Kernel(*grid, threads=...)` describes; the parser builds the KernelLaunch."""

    grid: tuple[Expr, ...]
    threads: tuple[int, ...]
    annotations: tuple[tuple[str, object], ...] = ()


def Kernel(
    *grid,
    threads: int | tuple = 128,
    prelude=None,
    cluster_dims: int | tuple | list | None = None,  # noqa: N802
    annotations: dict | None = None,
    **kwargs,
):
    """A launch over a grid of up to three dims; each block runs `threads` threads (int or tuple).

    `cluster_dims` (TileLang's spelling; an int or up to three ints) groups the blocks into thread-block
    clusters of that shape, which run at once on neighbouring cores (on GPUs that have them); each grid extent must be
    a multiple of the cluster's. Results do not depend on it: targets without clusters launch the grid
    as it is.
    """
    if not 1 <= len(grid) <= 3:
        raise IRError(f"T.Kernel takes one to three grid extents, got {len(grid)}")
    if kwargs:
        raise IRError(
            f"T.Kernel got unexpected arguments {sorted(kwargs)}; accepted: threads, cluster_dims, annotations"
        )
    if prelude is not None:
        raise IRError(
            "T.Kernel(prelude=...) injects backend source text, which the common language cannot carry; "
            "use the backend's own language module for device source"
        )
    dims = tuple(convert(g) for g in grid)
    for g in dims:
        if not g.dtype.is_integer:
            raise IRError(f"T.Kernel grid extents must be integers, got {g.dtype}")
        if isinstance(g, IntImm) and g.value < 1:
            raise builder.error(
                f"T.Kernel grid extent {g.value} is less than 1; a launch needs at least one block in every dim",
                hint="skip the launch with a Python `if` when there is no work",
            )
    threads = (threads,) if isinstance(threads, int) else tuple(threads)
    if not 1 <= len(threads) <= 3 or any(not isinstance(t, int) or t <= 0 for t in threads):
        raise IRError(f"T.Kernel threads must be a positive int or a tuple of up to three, got {threads}")
    extra = tuple((annotations or {}).items())
    cluster = _cluster_dims(cluster_dims, dims)
    if cluster is not None:
        extra += ((CLUSTER_DIMS, cluster),)
    return KernelSpec(dims, threads, extra)


def ClusterKernel(*grid, cluster_dims: int | tuple | list, threads: int | tuple = 128, prelude=None):  # noqa: N802
    """TileLang's `T.ClusterKernel`: `T.Kernel` with a required `cluster_dims`."""
    return Kernel(*grid, threads=threads, prelude=prelude, cluster_dims=cluster_dims)


MAX_CLUSTER_BLOCKS = 8  # CUDA's portable cluster size (16 needs an opt-in attribute per kernel)


def _cluster_dims(cluster_dims, grid: tuple[Expr, ...]) -> tuple[int, int, int] | None:
    """`cluster_dims` as (x, y, z), checked against the grid; None for clusters of one block."""
    if cluster_dims is None:
        return None
    given = list(cluster_dims) if isinstance(cluster_dims, (tuple, list)) else [cluster_dims]
    if not 1 <= len(given) <= 3 or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in given):
        raise builder.error(
            f"T.Kernel cluster_dims must be a positive int or up to three of them, got {cluster_dims!r}"
        )
    dims = (*given, *[1] * (3 - len(given)))
    if dims == (1, 1, 1):
        return None
    size = dims[0] * dims[1] * dims[2]
    if size > MAX_CLUSTER_BLOCKS:
        raise builder.error(
            f"T.Kernel cluster_dims={dims} holds {size} blocks; a cluster holds at most {MAX_CLUSTER_BLOCKS}",
            hint="use a smaller cluster",
        )
    for axis, (c, g) in enumerate(zip(dims, (*grid, *[IntImm(dt.int32, 1)] * (3 - len(grid))))):
        if c > 1 and axis >= len(grid):
            raise builder.error(f"T.Kernel cluster_dims={dims} clusters grid dim {'xyz'[axis]}, which the grid "
                                f"({len(grid)} dims) does not have")  # fmt: skip
        if c > 1 and isinstance(g, IntImm) and g.value % c:
            raise builder.error(
                f"T.Kernel grid dim {'xyz'[axis]} is {g.value}, not a multiple of cluster_dims {'xyz'[axis]} = {c}",
                hint=f"round the grid up to a multiple of {c}; T.copy skips the elements past a tensor's edge",
            )
    return dims


def get_thread_binding(dim: int = 0) -> Var:
    """The thread index along `dim` of the current kernel."""
    ctx = builder.current("T.get_thread_binding").kernel("T.get_thread_binding")
    if not 0 <= dim < len(ctx.thread_vars):
        raise IRError(f"thread dim {dim} out of range: the kernel has {len(ctx.thread_vars)} thread dims")
    return ctx.thread_vars[dim]


_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


def thread_binding(start, stop=None, thread: str | None = None) -> Var:
    """TileLang's `tx = T.thread_binding(0, threads, thread="threadIdx.x")`: the thread index along the
    tagged dim, which must cover the kernel's threads along it: [0, extent).

    `T.thread_binding(extent, "threadIdx.x")` (start omitted) is the same as starting at 0.
    """
    if thread is None and isinstance(stop, str):
        start, stop, thread = 0, start, stop
    elif stop is None:
        start, stop = 0, start
    if thread not in _THREAD_TAGS:
        raise IRError(f"T.thread_binding: thread must be one of {', '.join(_THREAD_TAGS)}, got {thread!r}")
    ctx = builder.current("T.thread_binding").kernel("T.thread_binding")
    dim = _THREAD_TAGS.index(thread)
    if dim >= len(ctx.thread_vars):
        raise IRError(
            f"T.thread_binding({thread!r}): the kernel has {len(ctx.thread_vars)} thread dim(s) "
            f"({ctx.thread_extents}); give T.Kernel a threads tuple with a dim for {thread}"
        )
    extent = ctx.thread_extents[dim]
    if _int_or_none(start) != 0 or _int_or_none(stop) != extent:
        raise IRError(
            f"T.thread_binding({start}, {stop}, {thread!r}) does not match the kernel's {extent} threads along "
            f"{thread}; bind the whole range: T.thread_binding(0, {extent}, thread={thread!r})"
        )
    return ctx.thread_vars[dim]


def _int_or_none(value) -> int | None:
    if isinstance(value, IntImm):
        return value.value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def get_block_binding(dim: int = 0) -> Var:
    """The block index along `dim` of the current kernel."""
    ctx = builder.current("T.get_block_binding").kernel("T.get_block_binding")
    if not 0 <= dim < len(ctx.block_vars):
        raise IRError(f"block dim {dim} out of range: the kernel has {len(ctx.block_vars)} grid dims")
    return ctx.block_vars[dim]


def sync_threads() -> Evaluate:
    """A barrier among the block's threads."""
    return Evaluate(Call(dt.int32, "sync_threads", ()), span=builder.current_span())


def use_swizzle(panel_size: int = 8, order: str = "row", enable: bool = True):
    """Rasterize blocks in panels of `panel_size` so that neighbouring blocks share L2 tiles."""
    if order not in ("row", "col"):
        raise IRError(f"T.use_swizzle order must be 'row' or 'col', got {order!r}")
    if not enable:
        return None
    return UseSwizzle(int(panel_size), order, span=builder.current_span())


def disable_warp_group_reg_alloc() -> None:
    """TileLang's opt-out of warp-group register reallocation: accepted, with no effect.

    TileLang emits `setmaxnreg` for warp-specialized producer/consumer kernels and this call turns it
    off. tilecraft's warp-specialized kernels always reallocate (the pass config
    tl.disable_warp_specialized runs a kernel without a producer and without setmaxnreg), so the kernel
    is unchanged.
    """
    builder.current("T.disable_warp_group_reg_alloc").kernel("T.disable_warp_group_reg_alloc")


no_set_max_nreg = disable_warp_group_reg_alloc


def set_max_nreg(reg_count: int, is_inc: int) -> None:
    """TileLang's `setmaxnreg` (the registers per thread of the warpgroup running it): accepted, with no
    effect. It tunes register use between warpgroups of a warp-specialized kernel; the kernel computes
    the same without it, and tilecraft reallocates only for its own producer warpgroup."""
    _register_hint("T.set_max_nreg", reg_count)
    if is_inc not in (0, 1, True, False):
        raise builder.error(f"T.set_max_nreg: is_inc must be 0 or 1, got {is_inc!r}")


def annotate_producer_reg_dealloc(reg_count: int = 24) -> None:
    """TileLang's hint that a producer warpgroup gives registers back: accepted, with no effect."""
    _register_hint("T.annotate_producer_reg_dealloc", reg_count)


def annotate_consumer_reg_alloc(reg_count: int = 240) -> None:
    """TileLang's hint that a consumer warpgroup takes more registers: accepted, with no effect."""
    _register_hint("T.annotate_consumer_reg_alloc", reg_count)


def _register_hint(what: str, reg_count) -> None:
    builder.current(what).kernel(what)
    if isinstance(reg_count, bool) or not isinstance(reg_count, int) or not 24 <= reg_count <= 256:
        raise builder.error(f"{what}: a register count is an int from 24 to 256, got {reg_count!r}")


def annotate_layout(layouts: dict):
    """Fix the layout of buffers: `T.annotate_layout({A_shared: T.Layout(...)})`."""
    from tilecraft.layout.swizzle import SwizzledLayout

    span = builder.current_span()
    stmts = []
    for buf, layout in layouts.items():
        if not isinstance(buf, Buffer):
            raise IRError(f"T.annotate_layout keys must be buffers, got {type(buf).__name__}")
        if isinstance(layout, SwizzledLayout):
            if layout.buffer is not buf:
                raise IRError(
                    f"T.annotate_layout: {buf.name} is given the swizzled layout of {layout.buffer.name}"
                )
            continue  # a hint: every target chooses its shared layouts itself (layout/swizzle.py)
        stmts.append(AnnotateLayout(buf, layout, span=span))
    return seq(*stmts)


def annotate_safe_value(values: dict):
    """`T.annotate_safe_value({A: value})`: in this kernel, a load of the global tensor `A` that the
    kernel's edge guards find past `A`'s edge (in a T.Parallel nest or a T.copy) reads `value` instead
    of zero."""
    b = builder.current("T.annotate_safe_value")
    b.kernel("T.annotate_safe_value")
    stmts = []
    for buf, value in values.items():
        if not isinstance(buf, Buffer):
            raise IRError(f"T.annotate_safe_value keys must be buffers, got {type(buf).__name__}")
        if buf.scope != "global":
            raise builder.error(
                f"T.annotate_safe_value: {buf.name} is a {buf.scope} buffer; only loads of global tensors "
                "past their edges are guarded",
                hint="annotate the kernel's tensor parameters (or T.empty outputs) that tiles read past the edge",
            )
        value = convert(value, buf.dtype)
        if any(isinstance(n, E.BufferLoad) for n in walk(value)):
            raise builder.error(f"T.annotate_safe_value: the value for {buf.name}, {value}, reads a buffer",
                                hint="give a constant, or an expression of scalar parameters")  # fmt: skip
        stmts.append(AnnotateSafeValue(buf, E.cast(value, buf.dtype), span=b.span))
    return seq(*stmts)


def print(value, msg: str = ""):  # noqa: A001 - TileLang's name
    """Print a scalar or a buffer from inside the kernel (debugging)."""
    if isinstance(value, Buffer):
        value = value.full_region()
    elif not isinstance(value, BufferRegion):
        value = convert(value)
    return Print(value, str(msg), span=builder.current_span())


def device_assert(condition, msg: str = "", no_stack_info: bool = False) -> Evaluate:
    """Check `condition` where the kernel runs; where it is false the call fails with `msg` and the
    kernel line, as each target's code generator reports a failed check (docs/language.md); targets
    without a way to stop a kernel refuse it at lowering. `no_stack_info` is TileLang's switch for its
    macro stack in the message, accepted with no effect."""
    cond = convert(condition)
    if cond.dtype.lanes != 1:
        raise builder.error(f"T.device_assert needs a scalar condition, got a {cond.dtype} value")
    if not cond.dtype.is_bool:
        cond = E.compare(E.NE, cond, convert(0, cond.dtype))
    return Evaluate(Call(dt.int32, DEVICE_ASSERT, (cond, StringImm(dt.int8, str(msg)))),
                    span=builder.current_span())  # fmt: skip


def assume(condition) -> Evaluate:
    """`T.assume(cond)`: the kernel may assume `cond` from this statement on (TileLang's). A target that
    checks conditions where the kernel runs (T.device_assert's) checks it there: where it is false the
    call fails with "Assume: <cond as written>" and the kernel line; a target compiler may then be told
    it (docs/language.md says which). Other targets accept it and make no use of it: code that does not
    rely on an assumption is right whether it holds or not. tilecraft's own passes do not use it yet."""
    cond = convert(condition)
    if cond.dtype.lanes != 1:
        raise builder.error(f"T.assume needs a scalar condition, got a {cond.dtype} value")
    if not cond.dtype.is_bool:
        cond = E.compare(E.NE, cond, convert(0, cond.dtype))
    span = builder.current_span()
    return Evaluate(Call(dt.int32, ASSUME, (cond, StringImm(dt.int8, _argument_text(span) or str(cond)))),
                    span=span)  # fmt: skip


def _argument_text(span) -> str | None:
    """The first argument of the call at `span` as written (`N % 4 == 0`), or None where the source is
    not at hand or the call spans lines."""
    import ast

    if span is None or span.end_col is None:
        return None
    segment = span.source_line()[span.col : span.end_col]
    try:
        call = ast.parse(segment, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or not call.args:
        return None
    return ast.get_source_segment(segment, call.args[0])


def evaluate(value) -> Evaluate:
    """An expression evaluated for its effect; a statement (TVM's `T.evaluate(T.tvm_thread_allreduce(...))`)
    is itself."""
    from tilecraft.ir.stmt import Stmt

    if isinstance(value, Stmt):
        return value
    return Evaluate(convert(value), span=builder.current_span())


def func_attr(attrs: dict) -> None:
    """Attach attributes to the function being parsed (printed IR uses this)."""
    builder.current("T.func_attr").parser.func_attrs.update(attrs)


def annotate_pass_configs(configs: dict) -> None:
    """`T.annotate_pass_configs({PassConfigKey.TL_ENABLE_FAST_MATH: True})` in the function body: pass
    configs every compilation of the kernel uses; a caller's `pass_configs` override them key by key."""
    b = builder.current("T.annotate_pass_configs")
    if not isinstance(configs, dict):
        raise builder.error(f"T.annotate_pass_configs takes a dict of key -> value, got {type(configs).__name__}",
                            hint="T.annotate_pass_configs({PassConfigKey.TL_ENABLE_FAST_MATH: True})")  # fmt: skip
    # keys as their strings (a PassConfigKey is one), so the caller's spelling of a key overrides it
    b.parser.func_attrs[PASS_CONFIGS_ATTR] = tuple((str(k), v) for k, v in configs.items())


def annotate_compile_flags(flags) -> None:
    """`T.annotate_compile_flags(["--use_fast_math"])` in the function body: device compiler flags every
    compilation of the kernel passes, before a caller's `compile_flags`."""
    b = builder.current("T.annotate_compile_flags")
    flags = [flags] if isinstance(flags, str) else flags
    if not isinstance(flags, (list, tuple)) or not all(isinstance(f, str) for f in flags):
        raise builder.error("T.annotate_compile_flags takes a flag or a list of flags (strings)",
                            hint='T.annotate_compile_flags(["--use_fast_math"])')  # fmt: skip
    b.parser.func_attrs[COMPILE_FLAGS_ATTR] = tuple(flags)
