"""TMA multicast of the tiles a thread-block cluster's blocks share (sm_90a, warp-specialized GEMMs).

In `T.Kernel(ceildiv(N, bn), ceildiv(M, bm), cluster_dims=(2, 1, 1))` the two blocks of a cluster differ
only in `bx`, so they load the same A tile at every k (its coordinates do not use `bx`). Each of them then
loads 1/C of that tile's rows and multicasts it into the same stage of every block of the cluster, so A
crosses the L2 once per cluster instead of once per block (cuBLAS's 1x2 clusters do this). Opt-in with
the pass config SWITCH: on an H200 it measured slower than the same clusters with plain loads.

The protocol of the warp-specialized GEMM changes in two places (pipeline.py `_specialized`):
- each block's full barrier receives the bytes of its whole stage as before: the rows it loaded and the
  rows its peers multicast complete on the barrier at the same offset of every destination block;
- a producer now writes into its peers' stages, so it may refill stage s only once the consumers of
  every block of the cluster released it: the empty barriers count C arrivals per consumer warp, and
  lane r of each consumer warp arrives on block r's barrier (a remote `mbarrier.arrive` through `mapa`).
The barriers' initialisation is published to the cluster (a cluster barrier after it), and the blocks
meet at a cluster barrier before they exit: a block must not leave while a peer may still arrive on its
barriers (codegen, `tc_cluster_sync`).

Which copies: a TMA copy of the specialized loop whose coordinates, the lets above the loop inlined, do
not use the block index along the cluster's axis (so every block of a cluster loads the same tile), in
a loop whose trip count does not use it either (every block runs the same stages), with boxes whose
rows split into C slices of whole 8-row swizzle periods (each slice lands where the unsplit box would
have put those rows). Clusters along more than one axis, and pipelines inside T.Persistent (the tiles
of a wave's blocks are not provably shared), keep plain loads, with a note under TILECRAFT_VERBOSE.
"""

from __future__ import annotations

import dataclasses

from tilecraft.cuda.ir import MbarArrive, TmaCopy, TmaLoad
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.visitor import BufferKeepingMutator, free_vars, substitute, walk

# Pass config, off by default: on an H200 every GEMM measured ran 1.5-3% slower with multicast than in the
# same clusters with plain loads (benchmarks/NOTES-cuda.md, item 19); True multicasts the shared tiles.
SWITCH = "tilecraft.cuda.tma_multicast"
SWIZZLE_PERIOD_ROWS = 8  # a 32/64/128-byte swizzle repeats every 8 rows of its span
MULTICAST = "TMA loads are not multicast in the cluster"


@dataclasses.dataclass(frozen=True)
class ClusterShare:
    """The cluster of a kernel whose pipelined loop may multicast: `size` blocks along the grid axis
    whose block index is `block_var`; `lets`: the values of the lets above the loop."""

    size: int
    block_var: E.Var
    lets: dict

    def shares(self, copy: TmaCopy, extent: E.Expr) -> str | None:
        """Why the cluster's blocks cannot share `copy`'s tile (None: they can)."""
        exprs = substitute((extent, *(c for load in copy.loads for c in load.coords)), self.lets)
        exprs = _ClusterIndex(self.block_var, self.size).mutate(exprs)
        if any(v is self.block_var for v in free_vars(exprs[1:])):
            return f"the tile's coordinates use {self.block_var.name}, along which the cluster runs"
        if any(v is self.block_var for v in free_vars(exprs[0])):
            return f"the loop's trip count uses {self.block_var.name}, along which the cluster runs"
        rows = {load.box[row_axis(load.box)] for load in copy.loads}
        if any(r % (self.size * SWIZZLE_PERIOD_ROWS) for r in rows):
            return (
                f"the tile's {min(rows)} rows do not split into {self.size} slices of 8-row swizzle periods"
            )
        return None


class _ClusterIndex(BufferKeepingMutator):
    """`block // d` for a multiple d of the cluster's size is one value for all the blocks of a cluster
    (they are C * q .. C * q + C - 1): it becomes a variable of its own, so that what is left of the block
    index is what differs between them (T.use_swizzle's renumbering of whole clusters uses it so)."""

    def __init__(self, block: E.Var, size: int) -> None:
        super().__init__()
        self.block, self.size = block, size

    def mutate_FloorDiv(self, e: E.FloorDiv) -> E.Expr:
        divisor = E.const_value(e.b)
        if e.a is self.block and isinstance(divisor, int) and divisor > 0 and divisor % self.size == 0:
            return E.Var(e.dtype, f"{self.block.name}_cluster")
        return self.generic_mutate(e)


def cluster_share(launch: S.KernelLaunch, lets: dict) -> tuple[ClusterShare | None, str | None]:
    """The kernel's cluster as a ClusterShare, or why its loads cannot be multicast ((None, None): no
    cluster)."""
    dims = S.annotation(launch.annotations, S.CLUSTER_DIMS)
    if dims is None:
        return None, None
    axes = [axis for axis, c in enumerate(dims) if c > 1]
    if len(axes) != 1:
        return None, f"cluster_dims={dims} spans more than one grid axis (multicast needs one)"
    return ClusterShare(dims[axes[0]], launch.block_vars[axes[0]], lets), None


def cluster_rank() -> E.Expr:
    """The block's rank in its cluster (`%cluster_ctarank`): along the one clustered axis, block % C."""
    return E.Call(dt.int32, "cluster_ctarank", ())


def multicast_copy(copy: TmaCopy, size: int) -> TmaCopy:
    """`copy` with each box cut into `size` row slices: this block loads slice `rank` and multicasts it
    to every block of the cluster (the bytes each block's barrier receives stay the whole tile's)."""
    rank = cluster_rank()
    loads = []
    for load in copy.loads:
        axis = row_axis(load.box)
        rows = load.box[axis] // size
        coords = list(load.coords)
        coords[axis] = E.add(coords[axis], E.mul(rank, rows))
        offset = E.add(load.dst_offset, E.mul(rank, rows * load.box[0]))
        box = (*load.box[:axis], rows, *load.box[axis + 1 :])
        loads.append(
            dataclasses.replace(load, box=box, coords=tuple(coords), dst_offset=offset, multicast=size)
        )
    return dataclasses.replace(copy, loads=tuple(loads))


def row_axis(box: tuple[int, ...]) -> int:
    """The entry of a box (innermost first) that holds the tile's rows: the one after the columns whose
    extent is not 1 (op/tma_store.py `tma_box`), the second for a one-row box."""
    return next((k for k in range(1, len(box)) if box[k] != 1), 1)


def multicasts(body: S.Stmt) -> bool:
    """The kernel multicasts (its blocks write into each other's shared memory and barriers)."""
    return any((isinstance(n, TmaLoad) and n.multicast) or (isinstance(n, MbarArrive) and n.cluster > 1)
               for n in walk(body))  # fmt: skip
