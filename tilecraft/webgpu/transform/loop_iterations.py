"""How many loop passes one invocation runs, checked against the adapter's `max_loop_iterations`.

Mesa's llvmpipe (lavapipe's Vulkan driver, and what wgpu finds on a machine without a GPU) guards
shaders against endless loops with one counter per invocation (gallivm's loop limiter,
`LP_MAX_TGSI_LOOP_ITERATIONS` = 65535): every pass through the end of *any* loop decrements it, and once
it is spent every loop ends after the pass it is in. Nothing reports it: the kernel finishes with
whatever its truncated loops computed (a float16 GEMM of 128x128 blocks on 128 threads came back NaN
from K = 512 on: 128 accumulator elements x 512 = 65536 passes of the innermost loop). GPU drivers have
no such counter; the target's `max_loop_iterations` is 0 there.

The count follows the driver: a loop of n iterations entered once costs n passes of its end plus one for
the pass that finds its condition false, so a loop costs `n * (passes of its body + 1) + 1`. Both sides
of a conditional count (SIMD lanes that diverge run both). Trip counts are bounded from the grid, the
block's threads and the enclosing loops; a trip count that depends on a symbolic dim or on data (a
`T.While`, a float32 compare-exchange retried under contention) counts as its fewest passes, so such a
kernel is refused only when its known loops alone are too many. The driver may unroll a short loop
whose trip count it knows (no pass counted then), so the count is an upper bound for known trip counts;
tests/webgpu/test_runtime.py checks it against lavapipe where it crosses the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.backend.pipeline import module_pass
from tilecraft.backend.split import ROLE_ATTR
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith.bounds import bound
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import children, free_vars
from tilecraft.webgpu.target import LOOP_ITERATIONS

HINT = (
    "give each invocation less work: more threads per block (threads=), smaller block tiles (for a GEMM, "
    "block_M * block_N / threads accumulator elements each pass over every k), or split the loop over more "
    "blocks (split-K with T.atomic_add); or run on a GPU adapter, or on the cpu or opencl target. A target "
    "with -max_loop_iterations=0 skips this check (for a driver without the limit)"
)


@dataclass(frozen=True)
class LoopCount:
    """The loop passes of one statement, and whether a trip count was unknown (then counted as its fewest passes)."""

    passes: int
    known: bool = True

    def __add__(self, other: LoopCount) -> LoopCount:
        return LoopCount(self.passes + other.passes, self.known and other.known)


NONE = LoopCount(0)


class _Counter:
    """Counts a kernel body's loop passes, bounding trip counts from the intervals in `ranges` (which it
    extends with the loop variables and let-bound names it meets); `outermost` collects each outermost
    loop with its count."""

    def __init__(self, ranges: dict[E.Var, tuple[int, int]]) -> None:
        self.ranges = ranges
        self.depth = 0
        self.outermost: list[tuple[S.For | S.While, LoopCount]] = []

    def count(self, s: S.Stmt) -> LoopCount:
        if isinstance(s, (S.For, S.While)):
            self.depth += 1
            found = self._for(s) if isinstance(s, S.For) else self._while(s)
            self.depth -= 1
            if self.depth == 0:
                self.outermost.append((s, found))
            return found
        if isinstance(s, AtomicUpdate):
            # a float32 update may be a compare-exchange loop: one pass, more under contention
            return LoopCount(1, known=False) if s.buffer.dtype.is_float else NONE
        if isinstance(s, S.LetStmt):
            self._bind(s.var, s.value)
        total = NONE
        for child in children(s):
            for item in child if isinstance(child, tuple) else (child,):
                if isinstance(item, S.Stmt):
                    total = total + self.count(item)
        return total

    def _for(self, s: S.For) -> LoopCount:
        trips = self._trips(s)
        body = self.count(s.body)
        if trips is None:
            return LoopCount(1, known=False)  # only the pass that leaves it is certain
        return LoopCount(trips * (body.passes + 1) + 1, body.known)

    def _while(self, s: S.While) -> LoopCount:
        return LoopCount(self.count(s.body).passes + 2, known=False)  # at least one iteration and the exit

    def _trips(self, s: S.For) -> int | None:
        """The most iterations the loop runs in any invocation, or None when no bound is known; records
        the loop variable's interval."""
        _, hi = self._interval(s.extent)
        lo_min, hi_min = self._interval(s.min)
        if hi is not None and lo_min is not None and hi_min is not None:
            self.ranges[s.loop_var] = (lo_min, hi_min + max(hi, 1) - 1)
        return None if hi is None else max(hi, 0)

    def _bind(self, var: E.Var, value: E.Expr) -> None:
        lo, hi = self._interval(value)
        if lo is not None and hi is not None:
            self.ranges[var] = (lo, hi)

    def _interval(self, e: E.Expr) -> tuple[int | None, int | None]:
        """`e`'s bounds, where it is an integer of known names only."""
        if e.dtype.kind not in ("int", "uint") or any(v not in self.ranges for v in free_vars(e)):
            return None, None
        iv = bound(e, self.ranges)
        return iv.lo, iv.hi


def launch_ranges(launch: S.KernelLaunch) -> dict[E.Var, tuple[int, int]]:
    """The intervals of the block indices (where the grid is a constant) and of the thread indices."""
    ranges: dict[E.Var, tuple[int, int]] = {}
    for var, extent in zip(launch.block_vars, launch.grid):
        size = E.const_value(extent)
        if isinstance(size, int) and size > 0:
            ranges[var] = (0, size - 1)
    for var, size in zip(launch.thread_vars, launch.threads):
        ranges[var] = (0, size - 1)
    return ranges


def loop_passes(launch: S.KernelLaunch) -> tuple[LoopCount, list[tuple[S.For | S.While, LoopCount]]]:
    """What one invocation of `launch` runs: its loop passes in all, and those of each outermost loop."""
    counter = _Counter(launch_ranges(launch))
    total = counter.count(launch.body)
    return total, counter.outermost


def check_kernel(func: PrimFunc, target) -> None:
    """Refuse a device kernel whose invocations run more loop passes than the target's driver allows."""
    limit = target.attr("max_loop_iterations")
    launch = func.body
    if not limit or not isinstance(launch, S.KernelLaunch):
        return
    total, outermost = loop_passes(launch)
    if total.passes <= limit:
        return
    loop, part = max(outermost, key=lambda item: item[1].passes)
    at_least = "" if total.known else "at least "
    raise LoweringError(
        f"kernel {func.name}: each invocation runs {at_least}{total.passes:,} loop passes ({part.passes:,} in "
        f"this loop and those inside it); this adapter's driver ends every loop once an invocation has run "
        f"{limit:,} (llvmpipe's loop limiter), silently, so the results would be wrong",
        loop.span or launch.span,
        HINT,
        target=target,
        unsupported=LOOP_ITERATIONS,
    )


@module_pass("check-loop-iterations")
def check_loop_iterations(mod: IRModule, ctx) -> IRModule:
    """Every device kernel's invocations run at most the target's `max_loop_iterations` loop passes."""
    for func in mod.functions:
        if func.attr(ROLE_ATTR) == "device":
            check_kernel(func, ctx.target)
    return mod
