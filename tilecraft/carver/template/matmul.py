"""`MatmulTemplate`: tilings of `C = A @ B` for a device, ranked by an estimated time.

Each candidate is a block tile `block_M x block_N` split into thread-group tiles `warp_M x warp_N` (each a
multiple of the device's tensor instruction shape, at most 64 x 64 so the accumulator fits in
registers), a reduction step `block_K`, and the device's pipeline stages, kept only if the stages' A and
B tiles fit in the device's shared memory per block. Its time is the larger of

* memory: every block reads its rows of A and columns of B once (`tiles * (block_M + block_N) * K`
  elements) and C is written once, at the device's memory bandwidth;
* compute: the busiest SM does `ceil(tiles / SMs)` blocks' padded multiply-adds at its share of the
  peak rate, slowed by small thread-group tiles (an m x n tile spends about `m + n` operand loads per
  `m * n` multiply-adds, charged as `8 * (m + n)` extra multiply-adds);

so ragged edges (padding), too few blocks for the device (partial waves) and narrow tiles (operand
traffic) all cost. A device without peak figures is ranked with a generic ratio (100 TFLOPs, 1000 GB/s).
The rasterization plan is a column panel `sqrt(SMs)` wide when A and B do not fit in L2 together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilecraft.carver.arch.arch_base import TileDevice
from tilecraft.carver.roller.hint import Hint
from tilecraft.carver.roller.rasterization import NoRasterization, Rasterization2DColumn
from tilecraft.carver.template.base import BaseTemplate
from tilecraft.ir import dtype as dt

BLOCK_SIZES = (16, 32, 64, 128, 256)
WARP_SIZES = (16, 32, 64)
STEP_SIZES = (16, 32, 64, 128)
MAX_THREADS = 1024
ACCUMULATOR_REGISTERS = 128  # 32-bit registers per thread an accumulator may take
GENERIC_TFLOPS, GENERIC_GBPS = 100.0, 1000.0


@dataclass
class MatmulTemplate(BaseTemplate):
    """`C[M, N] = A[M, K] @ B[K, N]` (B is `[N, K]` when `trans_B`, TileLang's default; A is `[K, M]` when
    `trans_A`), inputs of `in_dtype`, accumulated in `accum_dtype`, written as `out_dtype`, plus a bias
    row when `with_bias`."""

    M: int | None = None
    N: int | None = None
    K: int | None = None
    trans_A: bool = False
    trans_B: bool = True
    in_dtype: str = "float16"
    out_dtype: str = "float16"
    accum_dtype: str = "float16"
    with_bias: bool = False

    def __post_init__(self) -> None:
        for name in ("M", "N", "K"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"MatmulTemplate: {name} must be a positive int, got {value!r}")
        for name in ("in_dtype", "out_dtype", "accum_dtype"):
            setattr(self, name, str(dt.as_dtype(getattr(self, name))))

    def get_hardware_aware_configs(self, arch: TileDevice, topk: int = 10) -> list[Hint]:
        candidates = list(_candidates(self, arch))
        if not candidates:
            raise ValueError(
                f"MatmulTemplate: no tiling of {self.M}x{self.N}x{self.K} fits {arch} (shared memory "
                f"{arch.smem_cap} bytes per block)"
            )
        step_bytes = dt.as_dtype(self.in_dtype).bytes
        # Ties (the estimate does not see the reduction step once it divides K) go to larger tiles, then
        # 128-byte steps (the usual block_K: 64 half-precision elements), then fewer threads.
        candidates.sort(
            key=lambda h: (
                h.estimated_ms,
                -h.block[0] * h.block[1],
                abs(h.rstep[0] * step_bytes - 128),
                h.threads,
            )
        )
        plan = _rasterization(self, arch)
        for hint in candidates[:topk]:
            hint.rasterization_plan = plan
        return candidates[:topk]

    def initialize_function(self):
        """A tile kernel computing the template (64 x 64 tiles, 32-wide steps, 128 threads)."""
        return _matmul_kernel(self, 64, 64, 32, 128)

    def params_as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def _candidates(t: MatmulTemplate, arch: TileDevice):
    width = arch.warp_size or 32
    instr_m, instr_n = _instruction_shape(arch)
    in_bytes = dt.as_dtype(t.in_dtype).bytes
    acc_words = max(1, dt.as_dtype(t.accum_dtype).bytes // 4)
    stages = max(1, arch.pipeline_stages)
    for bm in _sizes(BLOCK_SIZES, t.M, instr_m):
        for bn in _sizes(BLOCK_SIZES, t.N, instr_n):
            for bk in _sizes(STEP_SIZES, t.K, 16):
                smem = stages * (bm + bn) * bk * in_bytes
                if arch.smem_cap and smem > arch.smem_cap:
                    continue
                for wm in (w for w in WARP_SIZES if w <= bm and bm % w == 0 and w % instr_m == 0):
                    for wn in (w for w in WARP_SIZES if w <= bn and bn % w == 0 and w % instr_n == 0):
                        threads = (bm // wm) * (bn // wn) * width
                        if threads > MAX_THREADS or wm * wn * acc_words > ACCUMULATOR_REGISTERS * width:
                            continue
                        yield _hint(t, arch, (bm, bn, bk, wm, wn), threads, stages, smem)


def _sizes(options, extent: int, granule: int) -> list[int]:
    """Tile sizes that are multiples of `granule` and no larger than `extent` rounded up to a power of two
    (a tile much larger than the problem only computes padding)."""
    limit = max(granule, 1 << (extent - 1).bit_length())
    return [s for s in options if s % granule == 0 and s <= limit]


def _instruction_shape(arch: TileDevice) -> tuple[int, int]:
    try:
        shapes = arch.get_avaliable_tensorintrin_shapes()
    except NotImplementedError:
        shapes = [[16, 16]]  # the m16n8k16 / 16x16 MFMA granule every tensor-core target has
    return int(shapes[0][0]), int(shapes[0][1])


def _hint(t: MatmulTemplate, arch: TileDevice, tile, threads: int, stages: int, smem: int) -> Hint:
    bm, bn, bk, wm, wn = tile
    hint = Hint()
    hint.arch, hint.use_tc = arch, True
    hint.block, hint.warp, hint.rstep = [bm, bn], [wm, wn], [bk]
    hint.pipeline_stage, hint.use_async = stages, stages > 1
    hint.threads, hint.smem_bytes = threads, smem
    hint.waves, hint.estimated_ms = _estimate(t, arch, tile, threads, smem)
    return hint


def _estimate(t: MatmulTemplate, arch: TileDevice, tile, threads: int, smem: int) -> tuple[int, float]:
    bm, bn, bk, wm, wn = tile
    sms = max(1, arch.compute_max_core)
    tflops = arch.peak_tflops or GENERIC_TFLOPS
    gbps = arch.memory_bandwidth_GBps or GENERIC_GBPS
    tiles = math.ceil(t.M / bm) * math.ceil(t.N / bn)
    k_padded = math.ceil(t.K / bk) * bk
    per_sm = max(1, min((arch.smem_cap or smem) // max(smem, 1), (2 * MAX_THREADS) // threads))
    waves = math.ceil(tiles / (sms * per_sm))
    operand_cost = 1 + 8 * (wm + wn) / (wm * wn)
    # the busiest SM computes ceil(tiles / SMs) tiles at its share of the peak
    compute = math.ceil(tiles / sms) * 2 * bm * bn * k_padded * operand_cost / (tflops * 1e12 / sms)
    in_bytes, out_bytes = dt.as_dtype(t.in_dtype).bytes, dt.as_dtype(t.out_dtype).bytes
    traffic = tiles * (bm + bn) * k_padded * in_bytes + t.M * t.N * out_bytes
    memory = traffic / (gbps * 1e9)
    return waves, max(compute, memory) * 1e3


def _rasterization(t: MatmulTemplate, arch: TileDevice):
    operands = (t.M + t.N) * t.K * dt.as_dtype(t.in_dtype).bytes
    if not arch.l2_cache_size_bytes or operands <= arch.l2_cache_size_bytes or arch.compute_max_core < 4:
        return NoRasterization()
    return Rasterization2DColumn(int(arch.compute_max_core**0.5))


def _matmul_kernel(t: MatmulTemplate, bm: int, bn: int, bk: int, threads: int):
    import tilecraft.language as T

    M, N, K = t.M, t.N, t.K
    a_shape, b_shape = ((K, M) if t.trans_A else (M, K)), ((N, K) if t.trans_B else (K, N))
    a_tile, b_tile = ((bk, bm) if t.trans_A else (bm, bk)), ((bn, bk) if t.trans_B else (bk, bn))

    @T.macro
    def tile_product(A, B, acc, bx, by):
        A_s = T.alloc_shared(a_tile, t.in_dtype)
        B_s = T.alloc_shared(b_tile, t.in_dtype)
        T.clear(acc)
        for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
            if t.trans_A:
                T.copy(A[k * bk, by * bm], A_s)
            else:
                T.copy(A[by * bm, k * bk], A_s)
            if t.trans_B:
                T.copy(B[bx * bn, k * bk], B_s)
            else:
                T.copy(B[k * bk, bx * bn], B_s)
            T.gemm(A_s, B_s, acc, transpose_A=t.trans_A, transpose_B=t.trans_B)

    @T.prim_func
    def matmul(
        A: T.Tensor(a_shape, t.in_dtype), B: T.Tensor(b_shape, t.in_dtype), C: T.Tensor((M, N), t.out_dtype)
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            acc = T.alloc_fragment((bm, bn), t.accum_dtype)
            tile_product(A, B, acc, bx, by)
            T.copy(acc, C[by * bm, bx * bn])

    @T.prim_func
    def matmul_bias(
        A: T.Tensor(a_shape, t.in_dtype),
        B: T.Tensor(b_shape, t.in_dtype),
        Bias: T.Tensor((N,), t.accum_dtype),
        C: T.Tensor((M, N), t.out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            acc = T.alloc_fragment((bm, bn), t.accum_dtype)
            tile_product(A, B, acc, bx, by)
            for i, j in T.Parallel(bm, bn):
                if bx * bn + j < N:
                    acc[i, j] += Bias[bx * bn + j]
            T.copy(acc, C[by * bm, bx * bn])

    return matmul_bias if t.with_bias else matmul


__all__ = ["MatmulTemplate"]
