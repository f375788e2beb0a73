"""`T.Kernel` and the block/thread bindings, plus hints and debugging helpers."""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.ir import dtype as dt
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.expr import Call, Expr, IntImm, IRError, Var, convert
from tilecraft.ir.stmt import AnnotateLayout, Evaluate, Print, UseSwizzle, seq
from tilecraft.language import builder


@dataclass(frozen=True)
class KernelSpec:
    """The launch `with T.Kernel(*grid, threads=...)` describes; the parser builds the KernelLaunch."""

    grid: tuple[Expr, ...]
    threads: tuple[int, ...]
    annotations: tuple[tuple[str, object], ...] = ()


def Kernel(*grid, threads: int | tuple = 128, prelude=None, annotations: dict | None = None, **kwargs):  # noqa: N802
    """A launch over a grid of up to three dims; each block runs `threads` threads (int or tuple)."""
    if not 1 <= len(grid) <= 3:
        raise IRError(f"T.Kernel takes one to three grid extents, got {len(grid)}")
    if kwargs:
        raise IRError(f"T.Kernel got unexpected arguments {sorted(kwargs)}; accepted: threads, annotations")
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
    return KernelSpec(dims, threads, tuple((annotations or {}).items()))


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


def print(value, msg: str = ""):  # noqa: A001 - TileLang's name
    """Print a scalar or a buffer from inside the kernel (debugging)."""
    if isinstance(value, Buffer):
        value = value.full_region()
    elif not isinstance(value, BufferRegion):
        value = convert(value)
    return Print(value, str(msg), span=builder.current_span())


def evaluate(value) -> Evaluate:
    return Evaluate(convert(value), span=builder.current_span())


def func_attr(attrs: dict) -> None:
    """Attach attributes to the function being parsed (printed IR uses this)."""
    builder.current("T.func_attr").parser.func_attrs.update(attrs)
