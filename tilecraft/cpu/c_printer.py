"""Prints lowered tile IR as C for the CPU target.

On-chip buffers live in the block's scratch area (offsets planned by tilecraft/cpu/storage.py);
`local.var` buffers are plain C scalars; with bounds checks on, every access is checked and the first
bad one is recorded with its kernel line.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.codegen.c_family import CFamilyPrinter, is_packed, storage_type
from tilecraft.cpu.ir import MatmulCall
from tilecraft.cpu.storage import SCRATCH_SCOPES
from tilecraft.ir import dtype as dt
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.span import Span


@dataclass
class BoundsSite:
    """A checked buffer access, reported when it goes out of bounds."""

    buffer: str
    span: Span | None


class CPrinter(CFamilyPrinter):
    """Writes C statements and expressions for one CPU function."""

    target_name = "the CPU target"
    arena_scopes = SCRATCH_SCOPES
    print_flush = True  # blocks run on worker threads; a crash must not swallow what was printed

    def __init__(
        self, bounds_check: bool = False, sites: list[BoundsSite] | None = None, offsets: dict | None = None
    ) -> None:
        super().__init__(offsets)
        self.bounds_check = bounds_check
        self.sites = sites if sites is not None else []

    # ------------------------------------------------------------------ bounds checks

    def load_raw(self, buf: Buffer, offset: str) -> str:
        raw = super().load_raw(buf, offset)
        if not self.bounds_check:
            return raw
        zero = f"({storage_type(buf.dtype)})0"
        return f"(tc_in_bounds({offset}, {self.extent(buf)}, {self.site(buf)}) ? {raw} : {zero})"

    def store_line(self, buf: Buffer, offset: str, value: str) -> str:
        store = super().store_line(buf, offset, value)
        if not self.bounds_check:
            return store
        return f"if (tc_in_bounds({offset}, {self.extent(buf)}, {self.site(buf)})) {store}"

    def nibble_store_line(self, buf: Buffer, offset: str, nibble: str) -> str:
        store = super().nibble_store_line(buf, offset, nibble)
        if not self.bounds_check:
            return store
        return f"if (tc_in_bounds(({offset}) >> 1, {self.extent(buf)}, {self.site(buf)})) {store}"

    def extent(self, buf: Buffer) -> str:
        """Elements addressable from the buffer's base (for bounds checks); bytes of packed memory."""
        if is_packed(buf):
            strides = self.strides(buf)
            last = " + ".join(f"((int64_t)({self.expr(d)}) - 1) * {s}" for d, s in zip(buf.shape, strides))
            return f"(({last} + 1 + 1) >> 1)" if buf.shape else "1"
        if not buf.strides:
            parts = [f"(int64_t)({self.expr(d)})" for d in buf.shape]
            return " * ".join(parts) if parts else "1"
        parts = [
            f"((int64_t)({self.expr(d)}) - 1) * (int64_t)({self.expr(s)})"
            for d, s in zip(buf.shape, buf.strides)
        ]
        return "(" + " + ".join(parts) + " + 1)"

    def site(self, buf: Buffer) -> int:
        self.sites.append(BoundsSite(buf.name, self.span))
        return len(self.sites)

    # ------------------------------------------------------------------ statements

    def loop_pragma(self, s: S.For) -> str | None:
        reduction = S.annotation(s.annotations, "reduction")
        if reduction is not None:
            target = _reduction_target(s.body)
            op = {"sum": "+", "abssum": "+", "max": "max", "absmax": "max", "min": "min"}[reduction]
            return f"#pragma omp simd reduction({op}:{self.name(target)})" if target is not None else None
        if s.kind is S.ForKind.UNROLLED:
            return "TC_UNROLL"
        if s.kind in (S.ForKind.PARALLEL, S.ForKind.VECTORIZED) and _simd_safe(s.body):
            return "#pragma omp simd"
        return None

    def arena_pointer(self, buf: Buffer, ctype: str, offset: int) -> str:
        return f"{ctype}* const {self.name(buf)} = ({ctype}*)(tc_scratch + {offset});"

    def _s_MatmulCall(self, s: MatmulCall) -> None:
        suffix = "f64" if s.c.dtype == dt.float64 else "f32"
        a = f"{self.name(s.a)} + {self.expr(s.a_offset)}"
        b = f"{self.name(s.b)} + {self.expr(s.b_offset)}"
        c = f"{self.name(s.c)} + {self.expr(s.c_offset)}"
        am, ak = s.a_strides
        shape = f"{s.m}, {s.n}, {s.k}"
        self.line(
            f"tc_matmul_{suffix}({shape}, {a}, {am}, {ak}, {b}, {s.b_row_stride}, {c}, {s.c_row_stride});"
        )


_NOT_SIMD = (S.For, S.While, AtomicUpdate, MatmulCall, S.Print, S.Evaluate)


def _simd_safe(s: S.Stmt) -> bool:
    """An innermost loop of plain loads and stores (atomics and calls must stay scalar)."""
    from tilecraft.ir.visitor import walk

    return not any(isinstance(n, _NOT_SIMD) or _nibble_store(n) for n in walk(s))


def _nibble_store(n) -> bool:
    """A lone store into packed memory: a compare-and-swap loop (a pair of values is a plain byte)."""
    return isinstance(n, S.BufferStore) and is_packed(n.buffer) and n.value.dtype.lanes == 1


def _reduction_target(body: S.Stmt) -> Buffer | None:
    """The local.var accumulator a reduction loop updates, when its body is that single store."""
    if isinstance(body, S.BufferStore) and body.buffer.scope == "local.var":
        return body.buffer
    return None
