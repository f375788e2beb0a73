"""The mbarrier protocol of TMA pipelines without a producer warpgroup, executed without a GPU.

`tl.disable_warp_specialized` (TileLang's flash decoding, fused MoE) gives a loop whose body has code
besides its gemms a ring per copy (software_pipeline._per_tile), and a TMA load outside a pipeline its
own barrier when its wait moves down to the tile's first reader (late_waits.py). Every warp of the block
runs the lowered kernel as a separate process under random schedules, as in test_warp_specialize_protocol
(whose barriers, tiles and checks this reuses): warp 0's first thread issues the TMA copies, every warp
waits on a barrier's phase with the parity it keeps per (ring, stage), `__syncthreads` holds a warp until
every warp has reached it, and transfers land at random later times. Checked: no deadlock, every gemm
reads the tile of its own iteration (landed; a refill before every warp is done with the stage would hand
a slow warp the next tile), and every tile loaded is read by every warp.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

import tilecraft
import tilecraft.language as T
from benchmarks.hopper_attention import build as attention
from tests.cuda.passes.kernels import decode_tiles_kernel
from tests.cuda.test_warp_specialize_protocol import Process, World, _launch, run_to_the_end
from tilecraft.cuda.ir import GemmCall, MbarRing, MbarWait, TmaCopy
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.visitor import Mutator, walk
from tilecraft.testing.conformance import attention_bshd as AS
from tilecraft.testing.conformance import register_operands as R
from tilecraft.testing.conformance import regressions as D
from tilecraft.transform.simt.barriers import PIPELINED_BUFFERS, is_sync

NO_PRODUCER = {"tl.disable_warp_specialized": True}
BLOCK_BARRIER = -1  # the named-barrier slot __syncthreads takes in the simulation


class Warp(Process):
    """One warp of a block without a producer: warp 0 issues the copies, each warp keeps its own phase
    bits, and a block barrier waits for every warp. A staged tile's i-th read must find its i-th copy; a
    tile loaded outside the pipeline (Q), read in every iteration, the latest copy."""

    def __init__(self, world: World, index: int, body: S.Stmt, env: dict, staged: set[str]) -> None:
        self.index, self.bits, self.staged = index, {}, staged
        super().__init__(world, f"warp {index}", [body], env)

    def _stmt(self, s: S.Stmt) -> Iterator[None]:
        if is_sync(s):
            return self._block_barrier()
        return super()._stmt(s)

    def _block_barrier(self) -> Iterator[None]:
        world = self.world
        generation = world.generations.get(BLOCK_BARRIER, 0)
        world.named[BLOCK_BARRIER] = world.named.get(BLOCK_BARRIER, 0) + 1
        if world.named[BLOCK_BARRIER] == world.warps:
            world.named[BLOCK_BARRIER], world.generations[BLOCK_BARRIER] = 0, generation + 1
        while world.generations.get(BLOCK_BARRIER, 0) == generation:
            yield

    def _MbarWait(self, s: MbarWait) -> Iterator[None]:  # noqa: N802
        assert s.parity is None, "a ring without a producer keeps its parity per thread"
        key = (s.ring, self.value(s.stage))
        bar, parity = self.world.barriers[key], self.bits.get(key, 0)
        while not bar.passed(parity):
            yield
        self.bits[key] = parity ^ 1

    def _TmaCopy(self, s: TmaCopy) -> Iterator[None]:  # noqa: N802
        if self.index == 0:  # the block's leader thread issues; the other warps go on
            yield from super()._TmaCopy(s)
        else:
            yield

    def _GemmCall(self, s: GemmCall) -> Iterator[None]:  # noqa: N802
        for buf, offset in ((s.a, s.a_offset), (s.b, s.b_offset)):
            if buf.name not in self.world.tiles:
                continue
            tile = self.world.stage_of(buf.name, self.value(offset))
            if buf.name in self.staged:
                number = self._count(("gemm", buf.name))
            else:
                number = self.world.stages_loaded(buf.name) - 1
            assert tile.landed and tile.iteration == number, f"{self.name}: tile {number} of {buf.name}: {tile}"
        yield


def simulate_block(launch: S.KernelLaunch, block: dict[str, int], seed: int) -> list[Warp]:
    rings = {n.ring: (n.stages, n.arrivals) for n in walk(launch.body) if isinstance(n, MbarRing)}
    tiles = {}
    for copy in (n for n in walk(launch.body) if isinstance(n, TmaCopy)):
        for load in copy.loads:
            tiles[load.dst.name] = math.prod(E.const_value(d) for d in load.dst.shape) // rings[copy.ring][0]
    staged = {buf.name for n in walk(launch.body) if isinstance(n, S.For)
              for buf in S.annotation(n.annotations, PIPELINED_BUFFERS) or ()}  # fmt: skip
    warps = launch.threads[0] // 32
    world = World(rings, tiles, warps)
    env = {v: block.get(v.name, 0) for v in launch.block_vars}
    procs = [Warp(world, w, launch.body, {**env, launch.thread_vars[0]: 32 * w}, staged) for w in range(warps)]
    world.stages_loaded = lambda name: procs[0].runs.get(("copy", name), 0)
    run_to_the_end(procs, world.transfers, seed, f"seed {seed}")
    loaded = {key[1]: n for key, n in procs[0].runs.items() if key[0] == "copy" and key[1] in staged}
    for warp in procs:
        read = {key[-1]: n for key, n in warp.runs.items() if key[0] != "copy"}
        assert read == loaded, f"{warp.name} read {read}, the copies loaded {loaded}"
    return procs


KERNELS = {
    # name: (kernel, block indices to run)
    "decode-tiles": (lambda: decode_tiles_kernel(2), [{}]),
    "decode-tiles-one-stage": (lambda: decode_tiles_kernel(1), [{}]),
    "attention": (lambda: attention(1, 2, 512, False), [{"bx": 0}]),
    "attention-causal": (lambda: attention(1, 2, 512, True), [{"bx": b} for b in range(4)]),
    "bshd-one-stage": (lambda: AS.mha_fwd_bshd(*AS.CONFIGS["one_stage"]), [{"bx": 2}]),
    "register-a-one-stage": (R.fragment_a_from_global, [{"bx": 1}]),
    "decode-scores-one-stage": (D.decode_scores, [{}]),
}
SEEDS = range(8)


@pytest.mark.parametrize("name", list(KERNELS))
def test_the_per_tile_rings_run_without_deadlock_or_stale_tiles(name):
    make, blocks = KERNELS[name]
    launch = _launch(make(), NO_PRODUCER)
    assert not any(isinstance(n, MbarWait) and n.parity is not None for n in walk(launch.body)), name
    assert any(isinstance(n, S.For) and S.annotation(n.annotations, PIPELINED_BUFFERS)
               for n in walk(launch.body)), f"{name}: no pipelined loop"  # fmt: skip
    for block in blocks:
        for seed in SEEDS:
            simulate_block(launch, block, seed)


class _NoBarrierBeforeRefills(Mutator):
    """The pipeline without the barriers in its loop: a warp may refill a stage another still reads."""

    def mutate_Buffer(self, buf):
        return buf

    def mutate_SeqStmt(self, s: S.SeqStmt) -> S.Stmt:
        kept = [self.mutate(c) for c in s.stmts]
        if any(isinstance(n, TmaCopy) for c in s.stmts for n in walk(c)) and any(
            isinstance(n, MbarWait) for c in s.stmts for n in walk(c)
        ):
            kept = [c for c in kept if not is_sync(c)]
        return S.seq(*kept)


def test_the_simulator_catches_a_refill_without_its_barrier():
    launch = _launch(decode_tiles_kernel(2), NO_PRODUCER)
    broken = _NoBarrierBeforeRefills().mutate(launch)
    # a warp refilling early either hands a slow warp the next tile, or runs the barrier's phase on twice
    # so that the slow warp's parity never comes round again
    with pytest.raises(AssertionError, match="tile .* of|deadlock"):
        for seed in range(40):
            simulate_block(broken, {}, seed)


def _decode(v_copy_before_its_gemm: bool):
    """Flash decoding written two ways: both copies at the top of the body (this kit's style), or V's copy
    right before P @ V (TileLang's example_gqa_decode)."""

    @T.prim_func
    def decode(Q: T.Tensor((64, 64), "float16"), K: T.Tensor((1024, 64), "float16"),
               V: T.Tensor((1024, 64), "float16"), Out: T.Tensor((64, 64), "float32")):  # fmt: skip
        with T.Kernel(1, threads=128):
            Qs = T.alloc_shared((64, 64), "float16")
            Ks = T.alloc_shared((64, 64), "float16")
            Vs = T.alloc_shared((64, 64), "float16")
            S_f = T.alloc_fragment((64, 64), "float32")
            P = T.alloc_fragment((64, 64), "float16")
            Of = T.alloc_fragment((64, 64), "float32")
            T.copy(Q, Qs)
            T.clear(Of)
            for k in T.Pipelined(16, num_stages=2):
                T.copy(K[k * 64, 0], Ks)
                if not v_copy_before_its_gemm:
                    T.copy(V[k * 64, 0], Vs)
                T.clear(S_f)
                T.gemm(Qs, Ks, S_f, transpose_B=True)
                T.copy(S_f, P)
                if v_copy_before_its_gemm:
                    T.copy(V[k * 64, 0], Vs)
                T.gemm(P, Vs, Of)
            T.copy(Of, Out)

    return decode


def test_where_a_copy_stands_in_the_body_does_not_change_the_code():
    """Each tile is waited for before its first reader, wherever its copy is written: both texts lower to
    the same CUDA."""
    sources = [
        tilecraft.lower(_decode(late), target="cuda -arch=sm_90a", execution_backend="nvrtc",
                        pass_configs=NO_PRODUCER).source("cuda-source")
        for late in (False, True)
    ]  # fmt: skip
    assert sources[0] == sources[1]
