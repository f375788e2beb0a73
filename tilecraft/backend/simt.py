"""`SimtTarget`: the hardware facts a SIMT backend gives the shared SIMT passes.

The shared passes (`infer-layouts`, `lower-to-threads` and the SIMT tile-op lowerings) split a block's
threads into thread groups, choose a default layout and combine partial results across threads. Every
number that takes, and every instruction that moves a value between threads, depends on the hardware,
so a backend states them here and hands a `SimtFacts` function (target -> `SimtTarget`) to the passes
its pipeline builds. No shared module assumes a warp of 32 (the boundary test checks it): a wavefront
of 64 or a sub-group of 16 is a different `SimtTarget`, not an edit of shared code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tilecraft.errors import BackendError

if TYPE_CHECKING:
    from tilecraft.backend.target import Target
    from tilecraft.ir.expr import Expr
    from tilecraft.ir.stmt import Stmt
    from tilecraft.transform.thread_groups import ThreadGroup

# (value, mask) -> the value `value` has in the lane whose index is this lane's XOR `mask`; every lane
# of the thread group runs it together. `mask` is a power of two below the group width.
LaneExchange = Callable[["Expr", int], "Expr"]
# (kind, value) -> `value` combined over every lane of the thread group ("sum", "max" or "min"), which
# every lane receives (a SIMD-group or wave reduction instruction); None where the target has no such
# instruction for that kind or dtype, and the lanes exchange values bit by bit instead.
GroupReduction = Callable[[str, "Expr"], "Expr | None"]
# (threads, index) -> a barrier among the threads of one part of a block only (`threads`: a ThreadGroup of
# whole thread groups running a branch on the thread index, transform/thread_groups.py; `index` numbers the
# kernel's distinct parts from 0, for targets whose partial barriers are numbered).
PartialBarrier = Callable[["ThreadGroup", int], "Stmt"]


@dataclass(frozen=True)
class SimtTarget:
    """What the shared SIMT passes ask of the hardware instead of assuming it.

    * `width`: threads of one thread group, which run in lockstep and may exchange registers (a warp,
      a wavefront, a SIMD group, a sub-group). Fragment layouts name a thread by (lane, group) =
      (tid % width, tid / width), and a block has at least `width` threads.
    * `max_threads`: threads one block may have.
    * `vector_bytes`: the widest access one thread makes at once; the default layout gives each thread
      runs of this many bytes of the innermost dim.
    * `exchange`: how a lane reads another lane's value (a warp shuffle), or None when the target has
      no such instruction or does not use it: cross-thread reductions then go through shared memory.
    * `reduce_group`: a whole-group reduction instruction, used when a reduction's partners are every
      lane of the group (needs `exchange`), or None.
    * `partial_barrier`: a barrier among some of a block's threads (a numbered hardware barrier), which the
      code of a branch on the thread index (`if T.get_thread_binding() < 32:`) needs around its shared
      memory; None when the target has none (such code is then an error where it needs a barrier).
    """

    width: int
    max_threads: int
    vector_bytes: int
    exchange: LaneExchange | None = None
    reduce_group: GroupReduction | None = None
    partial_barrier: PartialBarrier | None = None

    def __post_init__(self) -> None:
        for name in ("width", "max_threads", "vector_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value & (value - 1):
                raise BackendError(f"SimtTarget.{name} must be a power of two >= 1, got {value!r}")
        if self.max_threads < self.width:
            raise BackendError(
                f"SimtTarget: max_threads ({self.max_threads}) is below the thread-group width "
                f"({self.width}); a block must hold at least one whole thread group"
            )
        if self.exchange is not None and not callable(self.exchange):
            raise BackendError(
                "SimtTarget.exchange must be a callable (value, mask) -> value, or None for targets that "
                "reduce across threads through shared memory"
            )
        if self.partial_barrier is not None and not callable(self.partial_barrier):
            raise BackendError(
                "SimtTarget.partial_barrier must be a callable (threads, index) -> statement, or None"
            )
        if self.reduce_group is not None and (self.exchange is None or not callable(self.reduce_group)):
            raise BackendError(
                "SimtTarget.reduce_group must be a callable (kind, value) -> value or None, and needs an "
                "exchange (the lanes of a partial group still exchange bit by bit)"
            )

    @property
    def lane_bits(self) -> int:
        """log2(width): thread-index bits that name a lane within its group."""
        return self.width.bit_length() - 1


# What a backend passes to the shared SIMT passes: the facts for the target being lowered (an
# architecture may change them, e.g. wave32 and wave64 GPUs of one vendor).
SimtFacts = Callable[["Target"], SimtTarget]
