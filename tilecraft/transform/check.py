"""The shared semantic check: the frontend boundary every kernel crosses before a backend sees it.

It rejects what no backend could lower: tile ops or allocations outside a kernel, nested kernels,
rank and extent mismatches in tile ops, reduce dims out of range, constant indices out of bounds,
on-chip buffers indexed past their shape by the loops around the access (`index_ranges`), indices
that are not integers, integer divisions by a constant zero, empty or negative grids, negative
loop extents and shapes, views larger than the tensor they view, and dtype combinations no rule
accepts. Errors point at the kernel's source line.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.capabilities import ATOMIC_DTYPES
from tilecraft.errors import SemanticError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion, element_count, holds_more
from tilecraft.ir.dtype import DataType
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.span import Span
from tilecraft.transform.index_ranges import RangeWalk, constant

ON_CHIP = ("shared", "shared.dyn", "local", "local.fragment", "local.var")
SCOPE_WORDS = {"local.fragment": "fragment", "shared": "shared buffer", "shared.dyn": "shared buffer"}
# Integer forms of these trap (SIGFPE) or give an unspecified value when the divisor is zero.
INT_DIVISIONS = (E.Div, E.FloorDiv, E.FloorMod, E.TruncMod)

# Accumulator dtypes a gemm accepts for each operand dtype.
GEMM_ACCUMULATORS = {
    "float16": ("float16", "float32"),
    "bfloat16": ("float32",),
    "float32": ("float32",),
    "float64": ("float64",),
    "int8": ("int32",),
    "uint8": ("int32",),
    "float8_e4m3fn": ("float32",),
    "float8_e5m2": ("float32",),
}
# The float8 operands a gemm mixes (e4m3 x e5m2); the FNUZ formats have no gemm (no matrix unit reads them).
GEMM_FLOAT8 = ("float8_e4m3fn", "float8_e5m2")


def check_semantics(node: IRModule | PrimFunc) -> None:
    """Raise SemanticError (located in the user's source) for the first rule the kernel breaks."""
    funcs = node.functions if isinstance(node, IRModule) else (node,)
    try:
        for func in funcs:
            _Checker(func).run()
    except SemanticError as exc:
        # The message locates the mistake in the kernel; the checker's own frames would only add noise.
        raise exc.with_traceback(None) from None


class _Checker(RangeWalk):
    def __init__(self, func: PrimFunc) -> None:
        super().__init__()
        self.func = func
        self.in_kernel = False
        self.span = func.span
        self.allocated_at: dict[int, Span | None] = {}
        self.views: set[int] = set()

    def run(self) -> None:
        for p in self.func.params:
            if isinstance(p, Buffer):
                self._shape(p, minimum=0)
                self._no_packed_pairs(p)
        self.visit(self.func.body)

    def fail(self, message: str, hint: str | None = None, span=None):
        raise SemanticError(message, span or self.span, hint)

    def visit(self, node) -> None:
        saved = self.span
        if isinstance(node, S.Stmt) and node.span is not None:
            self.span = node.span
        try:
            if isinstance(node, E.Expr) and node.dtype.lanes > 1 and not node.dtype.is_packed:
                self._vector(node)
            if isinstance(node, E.BinaryOp):
                self.visit_BinaryOp(node)  # the Visitor dispatches on the concrete class (visit_Add ...)
            else:
                super().visit(node)
        finally:
            self.span = saved

    def _vector(self, e: E.Expr) -> None:
        """Vector values exist while a kernel is parsed (tilecraft/language/packed.py): a store of one
        becomes a store per lane and a name one local per lane, so one left here is used elsewhere."""
        self.fail(f"a {e.dtype} vector value is used where only scalars are supported",
                  "store it at a vector index (C[T.Ramp(base, 1, 2)] = value) or bind it to a name, and "
                  "use its lanes through those; conditions, tile operations and buffers take scalars")  # fmt: skip

    # ------------------------------------------------------------------ placement

    def visit_KernelLaunch(self, s: S.KernelLaunch) -> None:
        if self.in_kernel:
            self.fail(
                "T.Kernel cannot be nested inside another T.Kernel", "launch the kernels one after another"
            )
        for g in s.grid:
            self._int_expr(g, "grid extent")
            self._grid_extent(g)
        if any(t < 1 for t in s.threads):
            self.fail(f"T.Kernel threads must be positive, got {s.threads}")
        self.in_kernel = True
        try:
            self.generic_visit(s)
        finally:
            self.in_kernel = False

    def _grid_extent(self, g: E.Expr) -> None:
        """A written extent must be at least 1. One that is 0 only once `T.const` symbols take the shapes
        of empty arrays launches nothing, as a dynamic extent that is 0 at run time does."""
        n = constant(g)
        if n is None or n >= 1 or (n == 0 and not E.is_const(g)):
            return
        self.fail(f"T.Kernel grid extent {_value(g, n)} is less than 1; a launch needs at least one block in "
                  "every dim", "skip the launch with a Python `if` when there is no work")  # fmt: skip

    def _require_kernel(self, what: str) -> None:
        if not self.in_kernel:
            hint = "statements outside a kernel run on the host; put the work inside a T.Kernel block"
            self.fail(f"{what} is only valid inside `with T.Kernel(...)`", hint)

    def visit_Buffer(self, buf: Buffer) -> None:
        self._no_packed_pairs(buf)
        if buf.base is not None and id(buf) not in self.views:
            self.views.add(id(buf))
            self._view(buf)
        self.generic_visit(buf)

    def _no_packed_pairs(self, buf: Buffer) -> None:
        if buf.dtype.lanes > 1 and not buf.dtype.is_packed:
            element = buf.dtype.element()
            self.fail(f"buffer {buf.name} is {buf.dtype}: buffers of vector dtypes are not supported",
                      f"declare it of {element} with the lanes as its last dim, and load or store several "
                      "elements at a T.Ramp index", span=buf.span or self.span)  # fmt: skip
        if buf.dtype.is_packed and buf.dtype.lanes > 1:
            element = buf.dtype.element()
            self.fail(f"buffer {buf.name} is {buf.dtype}: buffers of packed pairs are not supported",
                      f"declare the values: T.Tensor((..., N), '{element}') is stored two a byte and takes "
                      "torch.float4_e2m1fn_x2 (or uint8) tensors of shape (..., ceil(N / 2))",
                      span=buf.span or self.span)  # fmt: skip

    def _view(self, view: Buffer) -> None:
        """A view fits in its base; parsing checked it already unless T.const symbols sized them."""
        base = view.base
        if base.dtype.is_packed:
            self.fail(f"the view {view.name} of {base.name}: views of packed {base.dtype} tensors are not "
                      "supported (their rows start on whole bytes, so a reshape moves elements)",
                      f"index {base.name} with its own shape, or pass the data reshaped from the host",
                      span=view.span)  # fmt: skip
        if holds_more(_in_bytes(view), _in_bytes(base)):
            self.fail(f"the view {view.name} of shape {_shape(view.shape)} holds {_count(view.shape)} elements "
                      f"but {base.name} of shape {_shape(base.shape)} holds {_count(base.shape)}",
                      f"a view covers at most the elements of {base.name}; make its shape smaller",
                      span=view.span)  # fmt: skip

    def visit_Allocate(self, s: S.Allocate) -> None:
        if not self.in_kernel:  # it parses (as in TileLang), but there is no block to hold the memory
            self.fail(f"allocating {s.buffer.name} is only valid inside `with T.Kernel(...)`",
                      f"{s.buffer.scope} memory belongs to a kernel's blocks, and a function's body outside "
                      "its kernels runs on the host: allocate it inside the "
                      "T.Kernel block that uses it (T.alloc_global makes a global workspace outside "
                      "kernels)")  # fmt: skip
        self._shape(s.buffer, minimum=1)
        self.allocated_at[id(s.buffer)] = s.span
        self.generic_visit(s)

    def _shape(self, buf: Buffer, minimum: int) -> None:
        """Tensors may be empty (a dim of 0); on-chip buffers need at least one element per dim."""
        for axis, dim in enumerate(buf.shape):
            if not dim.dtype.is_integer:
                self.fail(f"dim {axis} of {buf.name} is {dim}, of dtype {dim.dtype}; shapes must be integers")
            n = constant(dim)
            if n is not None and n < minimum:
                self.fail(f"dim {axis} of {buf.name} is {_value(dim, n)}; it must be at least {minimum}")

    def visit_For(self, s: S.For) -> None:
        self._require_kernel("a loop")
        self._int_expr(s.extent, "loop extent")
        if (n := constant(s.extent)) is not None and n < 0:
            self.fail(f"loop extent {_value(s.extent, n)} is negative; a loop runs zero or more times",
                      "give the bounds as (start, stop) with start <= stop")  # fmt: skip
        with self.ranges.loop(s.loop_var, constant(s.min), n):
            self.generic_visit(s)

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        self._require_kernel(f"storing into {s.buffer.name}")
        self._check_indices(s.buffer, s.indices)
        self.generic_visit(s)

    def visit_BufferLoad(self, e: E.BufferLoad) -> None:
        self._check_indices(e.buffer, e.indices)
        self.generic_visit(e)

    def visit_BinaryOp(self, e: E.BinaryOp) -> None:
        if e.a.dtype.is_storage_only and not isinstance(e, E.CmpOp):
            wide = "float32" if e.a.dtype.is_float else "int32"
            self.fail(f"arithmetic on {e.a.dtype} is not supported: it is a storage format",
                      f"cast to {wide} first: T.cast(x, '{wide}')")  # fmt: skip
        if isinstance(e, INT_DIVISIONS) and not e.a.dtype.is_float and constant(e.b) == 0:
            self.fail(
                f"integer division by zero: the divisor of {e} is {_value(e.b, 0)}",
                "an integer division by zero has no value (a host processor traps: SIGFPE kills the process); "
                "fix the divisor, or guard the division with `if`",
            )
        if isinstance(e, (E.And, E.Or)):
            self.visit(e.a)
            with self.ranges.conditional():  # && and || skip their right operand
                self.visit(e.b)
            return
        self.generic_visit(e)

    def _int_expr(self, e: E.Expr, what: str) -> None:
        if not e.dtype.is_integer:
            self.fail(f"{what} must be an integer, got {e.dtype}")

    def _index_dtype(self, buf: Buffer, index: E.Expr, what: str = "index") -> None:
        if not index.dtype.is_integer:
            self.fail(f"{what} {index} of {buf.name} has dtype {index.dtype}; indices must be integers",
                      "convert explicitly: T.cast(x, 'int32') truncates, T.cast(T.floor(x), 'int32') floors")  # fmt: skip

    def _check_indices(self, buf: Buffer, indices) -> None:
        if len(indices) != buf.ndim:
            self.fail(f"{buf.name} has {buf.ndim} dims but is indexed with {len(indices)}")
        for index in indices:
            self._index_dtype(buf, index)
        for axis, (index, dim) in enumerate(zip(indices, buf.shape)):
            i, n = E.const_value(index), E.const_value(dim)
            if isinstance(i, int) and isinstance(n, int) and not 0 <= i < n:
                self.fail(f"index {i} is out of bounds for dim {axis} of {buf.name} (size {n})")
        if buf.scope in ON_CHIP:
            for axis, (index, dim) in enumerate(zip(indices, buf.shape)):
                self._loop_index_in_bounds(buf, axis, index, constant(dim))

    def _loop_index_in_bounds(self, buf: Buffer, axis: int, index: E.Expr, size) -> None:
        """An on-chip buffer has no edge predicate: an index its loops carry past the shape reads or
        writes other memory (a neighbouring buffer of the block's scratch memory, another thread's registers)."""
        values = self.ranges.range_of(index)
        if values is None or not isinstance(size, int) or (values[0] >= 0 and values[1] < size):
            return
        lo, hi = values
        where = self.allocated_at.get(id(buf))
        at = f", allocated at line {where.line}," if where is not None else ""
        self.fail(
            f"{SCOPE_WORDS.get(buf.scope, buf.scope)} {buf.name} of shape {_fmt(buf.shape)}{at} is indexed outside its shape: index "
            f"{index} runs over {lo}..{hi} in the loops around it, but dim {axis} has size {size}",
            _past_the_end_hint(buf, axis, hi) if lo >= 0 else "on-chip buffers have no edge predicates",
        )

    # ------------------------------------------------------------------ tile ops

    def _tile_op(self, s: S.TileOp, name: str) -> None:
        self._require_kernel(f"T.{name}")
        for field in dataclasses.fields(s):
            value = getattr(s, field.name)
            if isinstance(value, BufferRegion):
                self._check_region(value)

    def _check_region(self, r: BufferRegion) -> None:
        if len(r.ranges) != r.buffer.ndim:
            self.fail(f"region of {r.buffer.name} has {len(r.ranges)} dims, the buffer {r.buffer.ndim}")
        for rng in r.ranges:
            self._index_dtype(r.buffer, rng.min, "region start")
            self._index_dtype(r.buffer, rng.extent, "region extent")
        if r.buffer.scope not in ON_CHIP:
            return
        for axis, (rng, dim) in enumerate(zip(r.ranges, r.buffer.shape)):
            lo, ext, n = E.const_value(rng.min), E.const_value(rng.extent), E.const_value(dim)
            if all(isinstance(v, int) for v in (lo, ext, n)) and (lo < 0 or lo + ext > n):
                self.fail(f"region [{lo}, {lo + ext}) is out of bounds for dim {axis} of {r.buffer.name} "
                          f"(size {n}); on-chip buffers have no edge predicates")  # fmt: skip

    def visit_Copy(self, s: S.Copy) -> None:
        self._tile_op(s, "copy")
        src, dst = _squeeze(s.src.shape), _squeeze(s.dst.shape)
        if not _same_extents(src, dst):
            self.fail(
                f"T.copy extents differ: source {_fmt(s.src.shape)} vs destination {_fmt(s.dst.shape)}",
                "after dropping unit dims both sides must have the same extents, or the source may be "
                "smaller where it is in memory as near as the destination's or nearer (it then fills the start "
                "of the destination region, as in TileLang); slice one side to match",
            )

    def visit_Fill(self, s: S.Fill) -> None:
        self._tile_op(s, "fill")

    def visit_Gemm(self, s: S.Gemm) -> None:
        self._tile_op(s, "gemm")
        a, b, c = (self._matrix(r, n) for r, n in ((s.a, "A"), (s.b, "B"), (s.c, "C")))
        m, k = (a[1], a[0]) if s.transpose_a else a
        k2, n = (b[1], b[0]) if s.transpose_b else b
        for x, y, what in (
            (k, k2, "K (A's reduction dim vs B's)"),
            (m, c[0], "M (A vs C)"),
            (n, c[1], "N (B vs C)"),
        ):
            if not _same_extents((x,), (y,)):
                self.fail(f"T.gemm shape mismatch in {what}: {x} vs {y}",
                          "check transpose_A / transpose_B and the tile shapes")  # fmt: skip
        self._gemm_dtypes(s)
        for r, name in ((s.a, "A"), (s.b, "B")):
            if r.buffer.scope == "global":
                self.fail(f"T.gemm operand {name} ({r.buffer.name}) is in global memory",
                          "copy the tile to shared memory or a fragment first with T.copy")  # fmt: skip
        if s.c.buffer.scope == "global":
            self.fail(f"T.gemm accumulator {s.c.buffer.name} is in global memory",
                      "accumulate into T.alloc_fragment and T.copy the result out")  # fmt: skip

    def _matrix(self, r: BufferRegion, name: str) -> tuple[E.Expr, E.Expr]:
        shape = list(r.shape)
        while len(shape) > 2 and E.const_value(shape[0]) == 1:
            shape.pop(0)
        if len(shape) != 2:
            self.fail(f"T.gemm operand {name} must be 2-D (leading unit dims allowed), got {_fmt(r.shape)}")
        return shape[0], shape[1]

    def _gemm_dtypes(self, s: S.Gemm) -> None:
        a, b, c = s.a.dtype, s.b.dtype, s.c.dtype
        same_family = a == b or (a.name in GEMM_FLOAT8 and b.name in GEMM_FLOAT8)
        allowed = GEMM_ACCUMULATORS.get(a.name, ())
        if not same_family or c.name not in allowed:
            rules = "; ".join(f"{k} x {k} -> {' or '.join(v)}" for k, v in GEMM_ACCUMULATORS.items())
            self.fail(f"T.gemm does not accept {a} x {b} -> {c}", f"supported: {rules}")

    def visit_Reduce(self, s: S.Reduce) -> None:
        self._tile_op(s, f"reduce_{s.kind}")
        rank = len(s.src.ranges)
        if not 0 <= s.dim < rank:
            self.fail(f"T.reduce_{s.kind} dim {s.dim} is out of range for a {rank}-D source",
                      f"valid dims: {-rank} .. {rank - 1}")  # fmt: skip
        if s.kind not in S.REDUCE_KINDS:
            self.fail(f"unknown reduction {s.kind!r}; valid: {', '.join(S.REDUCE_KINDS)}")
        if not s.nan_propagate and s.kind not in ("max", "min", "absmax"):
            self.fail(f"T.reduce_{s.kind} has no nan_propagate choice", "only max, min and absmax ignore NaN")
        if s.src.dtype.is_bool:
            self.fail(
                f"T.reduce_{s.kind} of a bool buffer is not supported", "cast to an integer dtype first"
            )
        kept = list(s.src.shape)
        kept.pop(s.dim)
        dst = list(s.dst.shape)
        if len(dst) == rank and E.const_value(dst[s.dim]) == 1:
            dst.pop(s.dim)
        if not _same_extents(_squeeze(kept), _squeeze(dst)):
            self.fail(
                f"T.reduce_{s.kind} output {_fmt(s.dst.shape)} does not match the source {_fmt(s.src.shape)} "
                f"without dim {s.dim}",
                f"the output must have shape {_fmt(tuple(kept))}",
            )

    def visit_Cumsum(self, s: S.Cumsum) -> None:
        name = f"cum{s.kind}"
        if s.kind not in S.SCAN_KINDS:
            self.fail(f"unknown scan {s.kind!r}; valid: {', '.join(S.SCAN_KINDS)}")
        self._tile_op(s, name)
        rank = len(s.src.ranges)
        if not 0 <= s.dim < rank:
            self.fail(
                f"T.{name} dim {s.dim} is out of range for a {rank}-D source",
                f"valid dims: {-rank} .. {rank - 1}",
            )
        if not _same_extents(s.src.shape, s.dst.shape):
            self.fail(f"T.{name} source {_fmt(s.src.shape)} and destination {_fmt(s.dst.shape)} differ")

    def visit_AtomicOp(self, s: S.AtomicOp) -> None:
        self._tile_op(s, f"atomic_{s.kind}")
        dtype: DataType = s.dst.dtype
        if dtype.name not in ATOMIC_DTYPES:
            self.fail(
                f"T.atomic_{s.kind} on {dtype} is not supported",
                f"supported dtypes: {', '.join(ATOMIC_DTYPES)}",
            )
        if s.dst.buffer.scope not in ("global", "shared", "shared.dyn"):
            self.fail(f"T.atomic_{s.kind} needs a global or shared destination, got {s.dst.buffer.scope}")
        if isinstance(s.value, BufferRegion) and not _same_extents(
            _squeeze(s.dst.shape), _squeeze(s.value.shape)
        ):
            self.fail(f"T.atomic_{s.kind} extents differ: {_fmt(s.dst.shape)} vs {_fmt(s.value.shape)}")

    def visit_UseSwizzle(self, s: S.UseSwizzle) -> None:
        self._require_kernel("T.use_swizzle")
        if s.panel_size <= 0:
            self.fail(f"T.use_swizzle panel_size must be positive, got {s.panel_size}")

    def visit_Print(self, s: S.Print) -> None:
        self._require_kernel("T.print")
        self.generic_visit(s)


def _past_the_end_hint(buf: Buffer, axis: int, hi: int) -> str:
    hint = (
        f"allocate dim {axis} with at least {hi + 1} elements (the extent of the loop that indexes it), "
        "or guard the access with `if`; on-chip buffers have no edge predicates"
    )
    if buf.scope == "local.fragment":
        # Ported TileLang kernels meet this: widen_fragments sized the ones whose meaning is unambiguous.
        hint += (
            ". As TileLang does, a fragment is sized from the loops that index it past its shape when "
            "they are all T.Parallel loops reaching one extent, one of them stores, and no tile op "
            "(T.copy, T.gemm, T.reduce, T.fill ...) or layout annotation takes the fragment whole"
        )
    return hint


def _value(e: E.Expr, value) -> str:
    """`e` as the user wrote it, with its value when that took folding to see."""
    return str(value) if E.is_const(e) else f"{e} (= {value})"


def _shape(shape) -> str:
    """A shape with each dim folded to its value where it has one (after `T.const` specialization)."""
    dims = [str(d) if constant(d) is None else str(constant(d)) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _in_bytes(buf: Buffer) -> tuple:
    """`buf`'s shape with one more dim of its dtype's size: its element count is the size in bytes."""
    index = buf.shape[0].dtype if buf.shape else E.dt.int32
    return (*buf.shape, E.const(max(1, buf.dtype.bits // 8), index))


def _count(shape) -> str:
    count = element_count(shape)
    value = constant(count)
    return str(count) if value is None else str(value)


def _squeeze(shape) -> tuple:
    return tuple(e for e in shape if E.const_value(e) != 1)


def _same_extents(a, b) -> bool:
    """False only when the extents provably differ (symbolic extents that may match pass)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        vx, vy = E.const_value(x), E.const_value(y)
        if isinstance(vx, int) and isinstance(vy, int) and vx != vy:
            return False
    # Symbolic extents may match at run time; the backends' edge predicates keep such copies safe.
    return True


def _fmt(shape) -> str:
    return "(" + ", ".join(str(e) for e in shape) + ("," if len(shape) == 1 else "") + ")"
