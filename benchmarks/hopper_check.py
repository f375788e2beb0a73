"""One-call check of the sm_90a gemm paths on a Hopper GPU: correctness and speed of warp-specialized
TMA + mbarrier pipelines with wgmma ("ws", the default: a producer warpgroup issues the loads), the same
ring without the producer ("tma": `tl.disable_warp_specialized`), wgmma with cp.async loads ("wgmma":
`tl.disable_tma_lower`), the Ampere path ("ampere": mma.sync, `tl.disable_wgmma`) and torch.matmul (cuBLAS).

    python benchmarks/hopper_check.py [--json out.json] [--quick] [--jobs N]

For float16 and bfloat16, transposes NN / NT / TN, tile configs 128x128x32 (128 threads, 4 stages),
128x128x64 (128, 3), 128x256x64 (256, 3), 64x128x64 (128, 3), and sizes 4096^3, 8192^3 and two ragged
ones with K not a multiple of the tile (1000x1030x520: rows of 1030 elements keep B of NN on cp.async;
1000x1032x520: every operand through TMA): the relative (Frobenius) error of each kernel's output
against torch's float32 matmul of the same inputs, and the median TFLOP/s (CUDA events) of the
tilecraft paths and of torch.matmul (the Ampere path is measured at 8192^3 only with --all). All
kernels are compiled first, in parallel worker processes that fill tilecraft's disk cache, so the
measuring process only loads them. Every failure (compile error, wrong result, launch error) is printed
and recorded, and the run goes on. The JSON goes to --json, else to $OUT/hopper_check.json when $OUT is
set, else ./hopper_check.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CONFIGS = [  # block_M, block_N, block_K, threads, stages
    (128, 128, 32, 128, 4),
    (128, 128, 64, 128, 3),
    (128, 256, 64, 256, 3),
    (64, 128, 64, 128, 3),
]
DTYPES = ("float16", "bfloat16")
LAYOUTS = ("NN", "NT", "TN")
SIZES = [(4096, 4096, 4096), (8192, 8192, 8192), (1000, 1030, 520), (1000, 1032, 520)]
PATHS = {
    "ws": {},
    "tma": {"tl.disable_warp_specialized": True},
    "wgmma": {"tl.disable_tma_lower": True},
    "ampere": {"tl.disable_wgmma": True},
}
BIG = (8192, 8192, 8192)
TOLERANCE = {"float16": 5e-3, "bfloat16": 2e-2}


def build(m, n, k, block_m, block_n, block_k, threads, stages, dtype, layout, cluster=(1, 1), panel=8,
          dynamic_m=False):  # fmt: skip
    """The GEMM as a TileLang-style kernel: C (dtype) = op(A) @ op(B), float32 accumulation.

    `cluster`: (x, y) blocks per thread-block cluster over (N tiles, M tiles), the grid rounded up to whole
    clusters (T.copy skips what lies past C's edges); `panel`: T.use_swizzle's (0: none); `dynamic_m`: M
    a dynamic dim, its grid dim not rounded (benchmarks/cluster_check.py's refused launch)."""
    import tilecraft.language as T

    ta, tb = layout[0] == "T", layout[1] == "T"
    mm = T.dynamic("m") if dynamic_m else m
    a_shape, b_shape = ((k, mm) if ta else (mm, k)), ((n, k) if tb else (k, n))
    a_tile, b_tile = (
        ((block_k, block_m) if ta else (block_m, block_k)),
        ((block_n, block_k) if tb else (block_k, block_n)),
    )
    cx, cy = cluster
    gx = T.ceildiv(T.ceildiv(n, block_n), cx) * cx
    gy = T.ceildiv(mm, block_m) if dynamic_m else T.ceildiv(T.ceildiv(m, block_m), cy) * cy

    @T.prim_func
    def gemm(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((mm, n), dtype)):
        with T.Kernel(gx, gy, threads=threads, cluster_dims=(cx, cy)) as (bx, by):
            A_s = T.alloc_shared(a_tile, dtype)
            B_s = T.alloc_shared(b_tile, dtype)
            C_l = T.alloc_fragment((block_m, block_n), "float32")
            T.use_swizzle(panel_size=panel, enable=panel > 0)
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=stages):
                if ta:
                    T.copy(A[ko * block_k, by * block_m], A_s)
                else:
                    T.copy(A[by * block_m, ko * block_k], A_s)
                if tb:
                    T.copy(B[bx * block_n, ko * block_k], B_s)
                else:
                    T.copy(B[ko * block_k, bx * block_n], B_s)
                T.gemm(A_s, B_s, C_l, transpose_A=ta, transpose_B=tb)
            T.copy(C_l, C[by * block_m, bx * block_n])

    return gemm


def compile_one(spec):
    """The compiled kernel of spec = (size, config, dtype, layout, path) and the source's gemm call."""
    import tilecraft

    size, cfg, dtype, layout, path = spec
    func = build(*size, *cfg, dtype, layout)
    kernel = tilecraft.compile(func, out_idx=[-1], target="cuda", pass_configs=PATHS[path] or None)
    source = kernel.get_kernel_source() if hasattr(kernel, "get_kernel_source") else ""
    source = source[source.find('extern "C"') :]  # the kernels, not the header
    variant = "wgmma" if "tc::gemm_wgmma<" in source else "mma.sync" if "tc::gemm_ss<" in source else "?"
    if "tc_tma_load<" in source:
        variant += "+tma"
    if "tc_setmaxnreg_inc<" in source:
        variant += "+ws"
    return kernel, variant


def _prewarm(specs, compile_fn=None):
    """Worker: compile specs into the disk cache with `compile_fn` (compile_one); (spec, error or None,
    seconds) for each."""
    compile_fn = compile_fn or compile_one
    out = []
    for spec in specs:
        start = time.perf_counter()
        try:
            compile_fn(spec)
            out.append((spec, None, time.perf_counter() - start))
        except Exception as err:  # recorded, reported by the main process
            out.append((spec, f"{type(err).__name__}: {err}", time.perf_counter() - start))
    return out


def prewarm(specs, jobs, compile_fn=None):
    """Compile `specs` in `jobs` spawned worker processes (`compile_fn`: a module-level function of a
    spec, compile_one by default); spec -> error for those that failed."""
    import multiprocessing

    errors, seconds = {}, []
    chunks = [specs[i::jobs] for i in range(jobs)]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        for fut in as_completed([pool.submit(_prewarm, c, compile_fn) for c in chunks if c]):
            try:
                for spec, err, took in fut.result():
                    seconds.append(took)
                    if err:
                        errors[spec] = err
            except Exception as err:
                print(f"prewarm worker failed: {err}", flush=True)
    if seconds:
        print(f"compiled {len(seconds)} kernels, median {statistics.median(seconds):.2f} s each", flush=True)
    return errors


def median_ms(fn, warmup=5, reps=20):
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def inputs(size, dtype, layout):
    import torch

    m, n, k = size
    tdt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
    a = torch.randn((k, m) if layout[0] == "T" else (m, k), device="cuda", dtype=tdt, generator=gen)
    b = torch.randn((n, k) if layout[1] == "T" else (k, n), device="cuda", dtype=tdt, generator=gen)
    op_a = a.t() if layout[0] == "T" else a
    op_b = b.t() if layout[1] == "T" else b
    return a, b, op_a, op_b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=None)
    parser.add_argument("--quick", action="store_true", help="only 4096^3 and the ragged size, float16")
    parser.add_argument("--jobs", type=int, default=max(1, min(14, (os.cpu_count() or 2) - 2)))
    parser.add_argument("--all", action="store_true", help="the Ampere path at 8192^3 too")
    args = parser.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    sizes = SIZES if not args.quick else [SIZES[0], SIZES[2], SIZES[3]]
    dtypes = DTYPES if not args.quick else DTYPES[:1]
    specs = [
        (s, c, d, lay, p)
        for s in sizes for c in CONFIGS for d in dtypes for lay in LAYOUTS for p in paths_for(s, args.all)
    ]  # fmt: skip
    t0 = time.perf_counter()
    compile_errors = prewarm(specs, args.jobs)
    print(
        f"compiled {len(specs)} kernels in {time.perf_counter() - t0:.1f} s ({len(compile_errors)} failed)",
        flush=True,
    )

    rows: list[dict] = []
    for size in sizes:
        for dtype in dtypes:
            for layout in LAYOUTS:
                rows += measure_group(size, dtype, layout, compile_errors, paths_for(size, args.all))
                torch.cuda.empty_cache()
    report(rows)
    out = Path(args.json) if args.json else Path(os.environ.get("OUT", ".")) / "hopper_check.json"
    out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    print(f"wrote {out}", flush=True)
    return 0


def paths_for(size, everything: bool) -> list[str]:
    """The paths measured at `size`: the Ampere path's 8192^3 figures are known (NOTES-cuda.md item 10)."""
    return [p for p in PATHS if everything or p != "ampere" or tuple(size) != BIG]


def measure_group(size, dtype, layout, compile_errors, paths) -> list[dict]:
    """torch.matmul and every config on both paths for one size, dtype and layout, on shared inputs."""
    import torch

    flops = 2 * size[0] * size[1] * size[2]
    try:
        a, b, op_a, op_b = inputs(size, dtype, layout)
        ref = op_a.float() @ op_b.float()
        torch_tflops = flops / median_ms(lambda: torch.matmul(op_a, op_b)) / 1e9
    except Exception as err:
        print(f"torch {size} {dtype} {layout}: {type(err).__name__}: {err}", flush=True)
        return []
    rows = []
    for cfg in CONFIGS:
        for path in paths:
            row = measure((size, cfg, dtype, layout, path), a, b, ref, flops, compile_errors)
            row["torch_tflops"] = torch_tflops
            print(format_row(row), flush=True)
            rows.append(row)
    return rows


def measure(spec, a, b, ref, flops, compile_errors) -> dict:
    import torch

    size, cfg, dtype, layout, path = spec
    row = {"size": list(size), "config": list(cfg), "dtype": dtype, "layout": layout, "path": path,
           "variant": None, "rel_error": None, "ok": False, "tflops": None, "error": None}  # fmt: skip
    if spec in compile_errors:
        row["error"] = "compile: " + compile_errors[spec]
        return row
    try:
        kernel, row["variant"] = compile_one(spec)
        out = kernel(a, b)
        torch.cuda.synchronize()
        err = float((out.float() - ref).norm() / ref.norm())
        row["rel_error"] = err
        row["ok"] = err < TOLERANCE[dtype]
        if not row["ok"]:
            row["error"] = f"wrong result: relative error {err:.3g}"
        row["tflops"] = flops / median_ms(lambda: kernel(a, b)) / 1e9
    except Exception as err:
        row["error"] = f"{type(err).__name__}: {err}"
        traceback.print_exc(limit=2)
        with contextlib.suppress(Exception):
            torch.cuda.synchronize()
    return row


def format_row(r: dict) -> str:
    size = "x".join(map(str, r["size"]))
    cfg = "{}x{}x{}/{}t/{}s".format(*r["config"])
    tf = f"{r['tflops']:7.1f}" if r["tflops"] else "      -"
    err = f"{r['rel_error']:.2e}" if r["rel_error"] is not None else "-"
    status = "ok" if r["ok"] else f"FAIL {r['error']}"
    return (f"{size:>15} {r['dtype']:>8} {r['layout']} {cfg:>18} {r['path']:>6} ({r['variant']}) "
            f"{tf} TFLOP/s  torch {r.get('torch_tflops', 0):6.1f}  err {err}  {status}")  # fmt: skip


def report(rows: list[dict]) -> None:
    print("\n# summary: TFLOP/s ws / tma / wgmma / ampere / torch (ratios ws:torch, ws:tma)")
    groups = {}
    for r in rows:
        groups.setdefault((tuple(r["size"]), r["dtype"], r["layout"], tuple(r["config"])), {})[r["path"]] = r
    for (size, dtype, layout, cfg), by in groups.items():
        ws, tma, wg, amp = (by.get(p, {}).get("tflops") or 0 for p in PATHS)
        ref = next((r["torch_tflops"] for r in by.values() if r.get("torch_tflops")), 0)
        flag = "" if all(r.get("ok") for r in by.values()) else "  <-- FAILURE"
        print(f"{'x'.join(map(str, size)):>15} {dtype:>8} {layout} {'x'.join(map(str, cfg[:3]))}/{cfg[3]}t/{cfg[4]}s: "
              f"{ws:6.1f} / {tma:6.1f} / {wg:6.1f} / {amp:6.1f} / {ref:6.1f} "
              f"({ws / ref if ref else 0:.2f}x, {ws / tma if tma else 0:.2f}x){flag}")  # fmt: skip
    failures = [r for r in rows if not r["ok"]]
    print(f"\n{len(rows) - len(failures)} of {len(rows)} kernels correct")


if __name__ == "__main__":
    sys.exit(main())
