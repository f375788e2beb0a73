"""Statements only the CUDA pipeline produces; its code generator prints them."""

from __future__ import annotations

from typing import ClassVar

from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Expr, node
from tilecraft.ir.stmt import Stmt

# KernelLaunch annotation: the second argument of __launch_bounds__ (blocks per SM the kernel's registers
# must allow); a warp-specialized kernel needs it for setmaxnreg (warp_specialize.RegisterSplit)
MIN_BLOCKS_PER_SM = "min_blocks_per_sm"


@node
class GemmCall(Stmt):
    """One block tile of `C += op(A) @ op(B)` on tensor cores (`tc::gemm_ss` / `tc::gemm_rs` /
    `tc::gemm_wgmma` / `tc::gemm_wgmma_rs`).

    `a` and `b` are swizzled 16-bit shared tiles, swizzled float32 tiles of a TF32 gemm (`tf32`),
    K-major 8-bit integer tiles swizzled as 16-bit pairs (`int8`),
    K-major float8 tiles for "wgmma" (`tc::gemm_wgmma_fp8`),
    or plain row-major float8 tiles that `tc::gemm_ss_fp8` widens to float16 in registers (`a` is a
    register fragment for the "rs" and "wgmma_rs" variants);
    `c` is the accumulator fragment's register array in the mma (wgmma) layout. For "wgmma"/"wgmma_rs",
    `warps_m` x `warps_n` is the grid of warpgroups and `atom_a` / `atom_b` the swizzle row widths (in
    elements) of the operands' canonical layouts.
    """

    variant: str
    a: Buffer
    b: Buffer
    c: Buffer
    m: int
    n: int
    k: int
    warps_m: int
    warps_n: int
    trans_a: bool
    trans_b: bool
    bf16: bool
    a_offset: Expr | int = 0
    b_offset: Expr | int = 0
    atom_a: int = 0
    atom_b: int = 0
    # "wgmma" only: wgmma groups left in flight when the call returns (1 inside a pipelined k loop whose
    # stages are retired by the next call; WgmmaWait after the loop completes the last one)
    wait: int = 0
    # mma.sync variants: the thread's warp within the thread group running the gemm, when that group is
    # not the whole block (a branch on the thread index); None: threadIdx.x / 32
    warp: Expr | None = None

    @property
    def tf32(self) -> bool:
        """A TF32 gemm: float32 operands (only T.tfloat32 requests reach the tensor cores with them),
        m16n8k8 .tf32 instructions (tc::gemm_ss_tf32 / gemm_rs_tf32)."""
        return self.b.dtype.name == "float32"

    @property
    def int8(self) -> bool:
        """An 8-bit integer gemm into int32: m16n8k32 .s8/.u8 instructions (tc::gemm_ss_i8 / gemm_rs_i8)."""
        return self.c.dtype.name == "int32"

    @property
    def float8_wgmma(self) -> bool:
        """A "wgmma" call of float8 operands: m64nNk32 instructions (tc::gemm_wgmma_fp8)."""
        return self.variant == "wgmma" and self.a.dtype.kind == "float8"


@node
class AsyncCopy(Stmt):
    """`cp.async` of `bytes` bytes from `src[src_offset]` to `dst[dst_offset]` (element offsets).

    When `valid` is false the destination is zero-filled and the source is not read.
    """

    dst: Buffer
    dst_offset: Expr
    src: Buffer
    src_offset: Expr
    bytes: int
    valid: Expr


@node
class AsyncCommit(Stmt):
    """Close the current group of async copies."""


@node
class AsyncWait(Stmt):
    """Wait until at most `pending` groups of async copies are still in flight."""

    pending: int


@node
class VectorCopy(Stmt):
    """Move `bytes` contiguous bytes from `src[src_offset]` to `dst[dst_offset]` in one access."""

    dst: Buffer
    dst_offset: Expr
    src: Buffer
    src_offset: Expr
    bytes: int


@node
class VectorZero(Stmt):
    """Set `bytes` contiguous bytes at `dst[dst_offset]` to zero in one access."""

    dst: Buffer
    dst_offset: Expr
    bytes: int


@node
class VectorStore(Stmt):
    """Store `values` (of `dst`'s dtype, 8, 16 or 32 bits each, 4 to 16 bytes together, or a pair of
    8-bit values) to the contiguous
    elements `dst[dst_offset]`, ... in one access; `dst_offset` is a multiple of `len(values)`."""

    dst: Buffer
    dst_offset: Expr
    values: tuple[Expr, ...]


@node
class VectorLoad(Stmt):
    """Load the `count` contiguous elements `src[src_offset]`, ... (of `src`'s dtype, 8, 16 or 32 bits
    each, 4 to 16 bytes together) in one access, and write each, converted to `dst`'s dtype, to the
    registers `dst[dst_offset]`, ..., `dst[dst_offset + count - 1]`; `src_offset` is a multiple of
    `count` (the access is aligned)."""

    dst: Buffer
    dst_offset: Expr
    src: Buffer
    src_offset: Expr
    count: int


@node
class TmaLoad(Stmt):
    """One `cp.async.bulk.tensor` of the box at `coords` (elements, innermost dim first) of the global
    buffer `src`, through the tensor map (src, `box`, `swizzle`), into `dst[dst_offset]` (elements of
    the shared tile; the box lands there in the swizzled layout the map names). `multicast`: the box
    lands at that offset of every block of the cluster's `multicast` blocks, and completes on each one's
    barrier at the same offset (0: this block's alone; transform/multicast.py)."""

    dst: Buffer
    dst_offset: Expr
    src: Buffer
    box: tuple[int, ...]
    swizzle: int
    coords: tuple[Expr, ...]
    # coordinates in src's own dims: a view (`T.Tensor(shape, dtype, A.data)`) stays a view here, and
    # codegen encodes its map over A's memory with the view's dims (lower-buffer-views reads this)
    keeps_views: ClassVar[bool] = True
    multicast: int = 0


@node
class TmaCopy(Stmt):
    """A tile loaded by TMA: one elected thread announces `bytes` on mbarrier `stage` of `ring` and
    issues `loads`, which complete on it. Ring 0 is the kernel's synchronous barrier: every thread
    waits for the tile right after the issue. Other rings belong to a pipelined loop, which waits
    with MbarWait where it consumes the stage. `elected`: the statement already runs on one thread
    alone (a warp-specialized producer), so it issues without electing one."""

    loads: tuple[TmaLoad, ...]
    bytes: int
    ring: int = 0
    stage: Expr | int = 0
    elected: bool = False


@node
class MbarWait(Stmt):
    """Every thread waits for a phase of mbarrier `stage` of `ring`: the current one, tracked by a phase
    bit per barrier that the wait flips, or, when `parity` is given, the phase of that parity (the
    warp-specialized rings compute it from the iteration)."""

    ring: int
    stage: Expr | int
    parity: Expr | None = None


@node
class MbarArrive(Stmt):
    """Lane 0 of every warp that runs it arrives once on mbarrier `stage` of `ring` (a consumer warp
    releasing a pipeline stage to the producer); the ring counts one arrival per such warp. `converge`:
    a `__syncwarp()` first, where the warp's lanes read the stage with their own loads (not one wgmma
    the whole warpgroup waited for), so lane 0 arrives only after every lane's reads."""

    ring: int
    stage: Expr | int
    converge: bool = False
    # > 1: lane r of the warp arrives on block r's barrier of the cluster's `cluster` blocks instead
    cluster: int = 0


@node
class ProducerLoop(Stmt):
    """The producer half of a warp-specialized pipeline (made by inject-software-pipeline): `body`
    issues every tile of the loop and runs on one thread of an extra warpgroup, which the
    warp-specialize pass adds after the `consumer_threads` the kernel was written for; until then
    it stands where the loop stood, before the consumer half. `general`: the consumer half runs other
    code than wgmma gemms (flash attention's softmax), which takes the registers of
    warp_specialize.GENERAL_SPLITS."""

    body: Stmt
    consumer_threads: int
    general: bool = False


@node
class ProducerExit(Stmt):
    """The producer warpgroup's threads leave the kernel (`return`): the consumers' epilogue, which
    follows the producer / consumer branch, is not theirs, and no register of it stays live on their
    path (ptxas would otherwise keep the consumers' accumulators across the producer's 24-40 registers
    and spill them). Only the consumers' named barriers may follow, no block or cluster barrier."""


@node
class SetMaxNReg(Stmt):
    """`setmaxnreg.inc` / `.dec`: the warpgroup running it moves to `regs` registers per thread."""

    regs: int
    increase: bool


@node
class NamedBarrier(Stmt):
    """`bar.sync barrier, threads`: a barrier among the `threads` threads that reach it (the consumer
    warpgroups of a warp-specialized kernel, which must not wait for the producer)."""

    barrier: int
    threads: int


@node
class MbarRing(Stmt):
    """Declares `ring` as `stages` mbarriers of the kernel, each completing a phase after `arrivals`
    arrivals: TmaCopy arrivals (one per copy of a stage) and their bytes (ring 0, the synchronous one:
    1 and 1), or MbarArrive arrivals (one per consumer warp: a warp-specialized pipeline's empty ring)."""

    ring: int
    stages: int
    arrivals: int = 1


@node
class WgmmaWait(Stmt):
    """Wait until at most `pending` wgmma groups are in flight, then pin the accumulators `c`; `keep`: the
    16-bit register A operands of the groups waited for ("wgmma_rs"), kept alive up to here."""

    pending: int
    c: tuple[Buffer, ...]
    keep: tuple[Buffer, ...] = ()


@node
class TmaStore(Stmt):
    """One `cp.async.bulk.tensor` of the box at `coords` (elements, innermost dim first) of the global
    buffer `dst`, through the tensor map (dst, `box`, `swizzle`), from `src[src_offset]` (elements of the
    shared tile, which holds the box in the swizzled layout the map names). Elements of the box past
    the tensor's edge are not written."""

    dst: Buffer
    src: Buffer
    src_offset: Expr
    box: tuple[int, ...]
    swizzle: int
    coords: tuple[Expr, ...]
    keeps_views: ClassVar[bool] = True  # as TmaLoad's


@node
class TmaStoreCopy(Stmt):
    """A shared tile stored to global memory by TMA: one elected thread issues `stores` and commits them
    as one bulk async-group. The tile's writers must have fenced their generic-proxy writes for the
    async proxy and met at a barrier before (the printer fences before every barrier of a kernel that
    has TMA stores); the TMA unit reads the tile until the issuing thread's TmaStoreWait."""

    stores: tuple[TmaStore, ...]

    @property
    def tiles(self) -> tuple[Buffer, ...]:
        return tuple(dict.fromkeys(s.src for s in self.stores))


@node
class TmaStoreWait(Stmt):
    """The thread that issues TMA stores waits until all but its `pending` most recently committed bulk
    async-groups have finished reading their shared sources (`cp.async.bulk.wait_group.read pending`);
    a barrier after it lets the others overwrite `tiles`, whose newest stores are older than those
    `pending` groups. Barrier insertion sees it as a read of `tiles`, so the next write of a tile is
    placed after a barrier that follows this wait."""

    tiles: tuple[Buffer, ...]
    pending: int = 0


@node
class StMatrix(Stmt):
    """`stmatrix.sync.aligned.m8n8.x{count}.shared.b16`: the warp stores `count` 8x8 matrices of 16-bit
    elements; `values` are this thread's 2 * count elements (of `dst`'s dtype), two per matrix, and
    `dst_offset` the element offset in `dst` of the 8-element row this thread addresses (row lane % 8
    of matrix lane / 8: 16 contiguous bytes, 16-byte aligned)."""

    dst: Buffer
    dst_offset: Expr
    values: tuple[Expr, ...]
    count: int


def shared_accesses(node) -> tuple[tuple[Buffer, ...], tuple[Buffer, ...]] | None:
    """The buffers a CUDA statement reads and writes, for barrier insertion (None: not ours)."""
    if isinstance(node, GemmCall):
        return (node.a, node.b), (node.c,)
    if isinstance(node, (AsyncCopy, VectorCopy, VectorLoad)):
        return (node.src,), (node.dst,)
    if isinstance(node, TmaCopy):
        return (), tuple(load.dst for load in node.loads)
    if isinstance(node, (VectorZero, VectorStore, StMatrix)):
        return (), (node.dst,)
    if isinstance(node, TmaStoreCopy):
        return node.tiles, ()
    if isinstance(node, TmaStoreWait):
        return node.tiles, ()
    return None
