"""GEMM tile configurations, warpgroup policies and block rasterization on sm_90a, against cuBLAS.

    python benchmarks/gemm_sweep.py [--json out.json] [--jobs N] [--sizes 4096,8192] [--dtypes float16]
    python benchmarks/gemm_sweep.py --profile-one CONFIG_INDEX SIZE DTYPE   (one call, for ncu)

TileLang's examples/gemm/example_gemm.py text (NN layout) with the tile configuration, the T.gemm policy
and an optional `T.use_swizzle(panel)` as parameters, and its example_gemm_persistent.py text (one block
per SM walking the tiles with `T.Persistent`, in row groups of `panel`). The policy decides how the consumer warpgroups
split the tile: for 128x256 with two warpgroups, Square gives each 128x128 (two m64n128 wgmma per k16
step) and FullRow gives each 64x256 (one m64n256). Every kernel is compiled first in worker processes
(filling tilecraft's disk cache), then checked against torch's matmul and timed beside it in
alternating rounds (CUDA-event medians, benchmarks/hopper_check.py's method). Thread-block clusters
(`cluster_dims`) with and without TMA multicast of the tile a cluster's blocks share.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.hopper_check import TOLERANCE, median_ms, prewarm  # noqa: E402
from tilecraft.ir.expr import convert  # noqa: E402
from tilecraft.transform.rasterize import panel_order  # noqa: E402

MULTICAST = (("tilecraft.cuda.tma_multicast", True),)  # off by default
CONFIGS = [  # block_M, block_N, block_K, threads, stages, policy, swizzle panel (0: none; < 0: the panels of
    # single blocks, written in the kernel text), persistent, cluster, pass configs (as items)
    (128, 256, 64, 256, 4, "FullRow", 0, False, (1, 1), ()),
    (256, 128, 64, 256, 4, "Square", 4, False, (1, 1), ()),
    (256, 128, 64, 256, 4, "Square", 4, False, (2, 1), MULTICAST),
    (256, 128, 64, 256, 4, "Square", 4, False, (2, 1), ()),
    (256, 128, 64, 256, 4, "Square", 4, False, (1, 2), MULTICAST),
    (256, 128, 64, 256, 4, "Square", 4, False, (1, 2), ()),
    (256, 128, 64, 256, 4, "Square", -4, False, (1, 1), ()),
    (256, 128, 64, 256, 4, "Square", -4, False, (2, 1), ()),
    (128, 256, 64, 256, 4, "FullRow", -4, False, (2, 1), ()),
    (128, 256, 64, 256, 4, "FullRow", 8, True, (1, 1), ()),
]
# blocks of a persistent kernel: one per SM (one block of 384 threads fits an SM at these tiles)
SMS = int(os.environ.get("GEMM_SWEEP_SMS", "132"))


def build(m, n, k, block_m, block_n, block_k, threads, stages, policy, panel, persistent, cluster, dtype):
    """`cluster`: (x, y) blocks per thread-block cluster over (N tiles, M tiles); (2, 1) pairs blocks
    that share their A tile (multicast where the pass configs switch it on), (1, 2) pairs sharing B."""
    import tilecraft.language as T

    warp_policy = getattr(T.GemmWarpPolicy, policy)
    if persistent:
        return _persistent(m, n, k, block_m, block_n, block_k, threads, stages, warp_policy, panel, dtype)

    @T.prim_func
    def gemm(A: T.Tensor((m, k), dtype), B: T.Tensor((k, n), dtype), C: T.Tensor((m, n), dtype)):
        grid = (T.ceildiv(n, block_n), T.ceildiv(m, block_m))
        with T.Kernel(*grid, threads=threads, cluster_dims=(*cluster, 1)) as (block_x, block_y):
            A_s = T.alloc_shared((block_m, block_k), dtype)
            B_s = T.alloc_shared((block_k, block_n), dtype)
            C_l = T.alloc_fragment((block_m, block_n), "float32")
            bx, by = block_x, block_y
            if panel < 0:  # the panels of single blocks written out (T.use_swizzle orders whole clusters)
                bx, by = panel_order(block_x, block_y, *(convert(g) for g in grid), -panel)
            T.use_swizzle(panel_size=panel, enable=panel > 0)
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=stages):
                T.copy(A[by * block_m, ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block_n], B_s)
                T.gemm(A_s, B_s, C_l, policy=warp_policy)
            T.copy(C_l, C[by * block_m, bx * block_n])

    return gemm


def _persistent(m, n, k, block_m, block_n, block_k, threads, stages, warp_policy, group, dtype):
    """TileLang's examples/gemm/example_gemm_persistent.py (the T.Persistent form), one block per SM."""
    import tilecraft.language as T

    @T.prim_func
    def gemm(A: T.Tensor((m, k), dtype), B: T.Tensor((k, n), dtype), C: T.Tensor((m, n), dtype)):
        with T.Kernel(SMS, threads=threads) as block:
            A_s = T.alloc_shared((block_m, block_k), dtype)
            B_s = T.alloc_shared((block_k, block_n), dtype)
            C_l = T.alloc_fragment((block_m, block_n), "float32")
            for bx, by in T.Persistent([T.ceildiv(m, block_m), T.ceildiv(n, block_n)], SMS, block, group):
                T.clear(C_l)
                for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=stages):
                    T.copy(A[bx * block_m, ko * block_k], A_s)
                    T.copy(B[ko * block_k, by * block_n], B_s)
                    T.gemm(A_s, B_s, C_l, policy=warp_policy)
                T.copy(C_l, C[bx * block_m, by * block_n])

    return gemm


def compile_one(spec):
    import tilecraft

    size, cfg, dtype = spec
    configs = dict(cfg[-1]) or None
    return tilecraft.compile(build(size, size, size, *cfg[:-1], dtype), out_idx=[-1], target="cuda",
                             pass_configs=configs)  # fmt: skip


def label(cfg) -> str:
    bm, bn, bk, threads, stages, policy, panel, persistent, cluster, configs = cfg
    if persistent:
        return f"{bm}x{bn}x{bk}/{threads}t/{stages}st/{policy}/persistent-g{panel}"
    clusters = f"/cluster{cluster[0]}x{cluster[1]}" if cluster != (1, 1) else ""
    if cluster != (1, 1) and configs == MULTICAST:
        clusters += "-multicast"
    swizzle = f"/swz{panel}" if panel > 0 else f"/panels{-panel}" if panel < 0 else ""
    return f"{bm}x{bn}x{bk}/{threads}t/{stages}st/{policy}" + swizzle + clusters


def measure(size, dtype, errors, rounds: int) -> list[dict]:
    import torch

    gen = torch.Generator(device="cuda").manual_seed(size)
    tdt = getattr(torch, dtype)
    a = torch.randn(size, size, device="cuda", dtype=tdt, generator=gen)
    b = torch.randn(size, size, device="cuda", dtype=tdt, generator=gen)
    ref = (a.float() @ b.float()).to(tdt).float()
    flops = 2 * size**3
    rows, fns = [], [lambda: torch.matmul(a, b)]
    for cfg in CONFIGS:
        spec = (size, cfg, dtype)
        row = {"size": size, "dtype": dtype, "config": label(cfg)}
        rows.append(row)
        if spec in errors:
            row["error"] = errors[spec]
            continue
        try:
            kernel = compile_one(spec)
            out = kernel(a, b)
            err = ((out.float() - ref).norm() / ref.norm()).item()
        except Exception as exc:  # a launch error is a result too
            row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            continue
        row["rel_error"] = err
        if not err <= TOLERANCE[dtype]:
            row["error"] = f"wrong result: relative error {err:.2e}"
            continue
        row["fn"] = len(fns)
        fns.append(lambda k=kernel: k(a, b))
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, s in zip(fns, samples):
            s.append(median_ms(fn))
    cublas = flops / statistics.median(samples[0]) / 1e9
    for row in rows:
        row["cublas_tflops"] = cublas
        if "fn" in row:
            row["tflops"] = flops / statistics.median(samples[row.pop("fn")]) / 1e9
            row["vs_cublas"] = row["tflops"] / cublas
    return rows


def profile_one(index: int, size: int, dtype: str) -> None:
    """Warm-up calls, then one kernel call and one cuBLAS call (for `ncu --launch-skip`)."""
    import torch

    kernel = compile_one((size, CONFIGS[index], dtype))
    a = torch.randn(size, size, device="cuda", dtype=getattr(torch, dtype))
    b = torch.randn(size, size, device="cuda", dtype=getattr(torch, dtype))
    for _ in range(3):
        kernel(a, b)
    torch.cuda.synchronize()
    kernel(a, b)
    torch.matmul(a, b)
    torch.cuda.synchronize()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=None)
    parser.add_argument("--jobs", type=int, default=max(1, min(14, (os.cpu_count() or 2) - 2)))
    parser.add_argument("--sizes", default="4096,8192,3000")
    parser.add_argument("--dtypes", default="float16,bfloat16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile-one", nargs=3, metavar=("CONFIG", "SIZE", "DTYPE"))
    args = parser.parse_args()
    if args.profile_one:
        profile_one(int(args.profile_one[0]), int(args.profile_one[1]), args.profile_one[2])
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    dtypes = args.dtypes.split(",")
    specs = [(s, cfg, d) for s in sizes for d in dtypes for cfg in CONFIGS]
    errors = prewarm(specs, args.jobs, compile_one)
    rows = []
    for size in sizes:
        for dtype in dtypes:
            group = measure(size, dtype, errors, args.rounds)
            rows += group
            for r in group:
                figure = f"{r['tflops']:6.1f} TFLOP/s {r['vs_cublas']:.3f}x" if "tflops" in r else r["error"]
                print(
                    f"{size} {dtype:8s} {r['config']:34s} {figure}  (cuBLAS {r['cublas_tflops']:.1f})",
                    flush=True,
                )
    path = args.json or (os.path.join(os.environ["OUT"], "gemm_sweep.json") if "OUT" in os.environ else None)
    if path:
        Path(path).write_text(json.dumps(rows, indent=1))
    return 1 if any("wrong result" in r.get("error", "") for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
