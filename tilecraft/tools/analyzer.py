"""`tilecraft.tools.Analyzer`: TileLang's roofline estimate of a kernel from its tile IR.

`Analyzer.analysis(func, device)` counts, over the whole grid:

* FLOPs: `2 * M * N * K` per `T.gemm` (times a batch of leading dims), as TileLang counts them;
  elementwise arithmetic is not counted;
* global bytes: every region of a global buffer that a tile op names (`T.copy`, `T.fill`, `T.gemm`,
  `T.reduce`, atomics ...) moves its elements once (a global-to-global copy counts both sides), and every
  scalar load or store of a global buffer moves one element.

Each count is multiplied by the grid's size and the trip counts of the loops around it; both branches of
an `if` are counted (an upper bound). Sizes must be static: bind `T.const` symbols first
(`kernel.get_tir(N=...)`). The estimated time is the larger of bytes / bandwidth and FLOPs / peak, with
the device model's `memory_bandwidth_GBps` and `peak_tflops`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tilecraft.errors import KernelError, TilecraftError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith.analyzer import simplify
from tilecraft.ir.buffer import BufferRegion
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.visitor import children, substitute, walk

GLOBAL = "global"


@dataclass(frozen=True)
class AnalysisResult:
    """TileLang's result fields: counts over the grid, and the roofline time in seconds."""

    total_flops: int
    total_global_bytes: int
    estimated_time: float
    expected_tflops: float | None
    expected_bandwidth_GBps: float


class Analyzer:
    """Counts FLOPs and global bytes of a PrimFunc (or every function of an IRModule)."""

    def __init__(self, fn: PrimFunc | IRModule, device: Any) -> None:
        if isinstance(fn, PrimFunc):
            fn = IRModule.from_func(fn)
        if not isinstance(fn, IRModule):
            raise TilecraftError(f"Analyzer takes a PrimFunc or an IRModule, got {type(fn).__name__}")
        self.fn = fn
        self.device = device
        self.total_flops = 0
        self.total_global_bytes = 0
        # Names bound before a size uses them (`OH = (H + 2 * P - K) // S + 1`, then a grid of N * OH * OW).
        self.lets: dict[E.Var, E.Expr] = {}

    def ir_pass(self) -> Analyzer:
        """Count every function's FLOPs and global bytes."""
        for func in self.fn.functions:
            self._stmt(func.body, 1)
        return self

    def calculate(self) -> AnalysisResult:
        """The roofline estimate from the counts and the device's peak rates."""
        bandwidth = self._rate("memory_bandwidth_GBps")
        peak = self._rate("peak_tflops") if self.total_flops else getattr(self.device, "peak_tflops", None)
        memory_time = self.total_global_bytes / (bandwidth * 1e9)
        compute_time = self.total_flops / (peak * 1e12) if self.total_flops else 0.0
        return AnalysisResult(
            total_flops=self.total_flops,
            total_global_bytes=self.total_global_bytes,
            estimated_time=max(memory_time, compute_time),
            expected_tflops=peak,
            expected_bandwidth_GBps=bandwidth,
        )

    @classmethod
    def analysis(cls, fn: PrimFunc | IRModule, device: Any) -> AnalysisResult:
        """Count, then estimate: TileLang's one-call form."""
        return cls(fn, device).ir_pass().calculate()

    def _rate(self, name: str) -> float:
        value = getattr(self.device, name, None)
        if value is None:
            raise TilecraftError(
                f"Analyzer: device {self.device!r} has no {name} (its model is not in its backend's table); "
                f"set it on the device object, e.g. device.{name} = ..."
            )
        return float(value)

    def _stmt(self, s: S.Stmt, times: int) -> None:
        if isinstance(s, S.KernelLaunch):
            self._exprs(s.grid, times)
            self._stmt(s.body, times * math.prod(self._static(g, s, "grid extent") for g in s.grid))
        elif isinstance(s, S.For):
            self._exprs((s.min, s.extent), times)
            self._stmt(s.body, times * self._static(s.extent, s, "loop extent"))
        elif isinstance(s, S.LetStmt):
            self._exprs((s.value,), times)
            self.lets[s.var] = substitute(s.value, self.lets)
            self._stmt(s.body, times)
        elif isinstance(s, S.While):
            raise KernelError(
                "Analyzer cannot count a while loop: its trip count is known only at run time", s.span
            )
        elif isinstance(s, S.TileOp):
            self._tile_op(s, times)
        else:
            if isinstance(s, S.BufferStore):
                self._access(s.buffer, s.value.dtype, times)
            for value in children(s):
                self._child(value, times)

    def _child(self, value: Any, times: int) -> None:
        if isinstance(value, S.Stmt):
            self._stmt(value, times)
        elif isinstance(value, E.Expr):
            self._exprs((value,), times)
        elif isinstance(value, tuple):
            for item in value:
                self._child(item, times)

    def _tile_op(self, op: S.TileOp, times: int) -> None:
        regions = [v for v in children(op) if isinstance(v, BufferRegion)]
        for region in regions:
            if region.buffer.scope == GLOBAL:
                elements = math.prod(self._static(e, op, "region extent") for e in region.shape)
                self.total_global_bytes += elements * region.buffer.dtype.bytes * times
            self._exprs(tuple(x for r in region.ranges for x in (r.min, r.extent)), times)
        if isinstance(op, S.Gemm):
            self.total_flops += gemm_flops(op) * times
        for value in children(op):
            if isinstance(value, E.Expr):
                self._exprs((value,), times)

    def _exprs(self, exprs: tuple[E.Expr, ...], times: int) -> None:
        for node in walk(exprs):
            if isinstance(node, E.BufferLoad):
                self._access(node.buffer, node.dtype, times)

    def _access(self, buffer: Any, dtype: Any, times: int) -> None:
        if buffer.scope == GLOBAL:
            self.total_global_bytes += dtype.bytes * times

    def _static(self, e: E.Expr, where: S.Stmt, what: str) -> int:
        return _static(substitute(e, self.lets), where, what)


def gemm_flops(op: S.Gemm) -> int:
    """`2 * M * N * K` of one T.gemm, times the product of C's leading (batch) dims."""
    c = [_static(e, op, "gemm extent") for e in op.c.shape]
    a = [_static(e, op, "gemm extent") for e in op.a.shape]
    if len(c) < 2 or len(a) < 2:
        raise KernelError("Analyzer: a gemm's A and C need at least two dims", op.span)
    k = a[-2] if op.transpose_a else a[-1]
    return 2 * math.prod(c) * k


def _static(e: E.Expr, where: S.Stmt, what: str) -> int:
    value = E.const_value(simplify(e))
    if not isinstance(value, int):
        raise KernelError(
            f"Analyzer needs static sizes, but a {what} is {e}",
            where.span,
            hint="give compile-time symbols their values first, e.g. kernel.get_tir(N=1024, ...)",
        )
    return value


__all__ = ["AnalysisResult", "Analyzer", "gemm_flops"]
