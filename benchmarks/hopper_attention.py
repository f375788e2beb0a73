"""Flash-attention forward on a Hopper GPU: correctness and speed of tilecraft's sm_90a paths (wgmma for
Q @ K^T and, with P in registers, "wgmma_rs" for P @ V; TMA loads) and of the Ampere path
(`tl.disable_wgmma`: mma.sync), against torch's scaled_dot_product_attention. The sm_90a paths: `overlap`
(the default: a producer warpgroup issues K and V, the kernel's threads compute, and the next Q @ K^T and
the previous P @ V are in flight while the softmax runs), `sm90` (the same without the overlap:
`tilecraft.cuda.gemm_softmax_overlap` False), `ring` (`tilecraft.cuda.warp_specialize_general` False:
every thread issues and waits on one mbarrier ring, a block barrier per tile).

    python benchmarks/hopper_attention.py [--json out.json] [--reps N]

The kernel is TileLang's example_mha_fwd_bhsd written in tilecraft's language (block_M 128, block_N
128, 2 stages, 256 threads, float16, D 128). Sizes: B8 H16 S4096 (measured) and B1 H2 S1000 (ragged
sequence, correctness only), non-causal and causal. Correctness is the max abs error of the output
against SDPA's; speed the median TFLOP/s (CUDA events) of each path and of SDPA. Every failure (compile
error, wrong result, launch error) is printed and recorded, and the run goes on. The JSON goes to
--json, else to $OUT/hopper_attention.json when $OUT is set, else ./hopper_attention.json.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BLOCK_M, BLOCK_N, STAGES, THREADS, DIM = 128, 128, 2, 256, 128
SIZES = [(8, 16, 4096), (1, 2, 1000)]  # (batch, heads, seq); the first is measured
MEASURED = SIZES[0]
PATHS = {
    "sm90": {"tilecraft.cuda.gemm_softmax_overlap": False},
    "overlap": {},  # the default: the general schedule with the overlap
    "ring": {"tilecraft.cuda.warp_specialize_general": False},  # no producer for a loop with a softmax
    "ampere": {"tl.disable_wgmma": True},
}
TOLERANCE = 2e-2  # max abs error of float16 outputs of magnitude < 1


def build(batch: int, heads: int, seq: int, causal: bool, dim: int = DIM):
    """TileLang's example_mha_fwd_bhsd (online softmax, P kept in registers for P @ V)."""
    import tilecraft.language as T

    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, heads, seq, dim]
    dtype, accum = "float16", "float32"

    @T.prim_func
    def mha_fwd(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(shape, dtype),
        V: T.Tensor(shape, dtype),
        Output: T.Tensor(shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq, BLOCK_M), heads, batch, threads=THREADS) as (bx, by, bz):
            Q_shared = T.alloc_shared([BLOCK_M, dim], dtype)
            K_shared = T.alloc_shared([BLOCK_N, dim], dtype)
            V_shared = T.alloc_shared([BLOCK_N, dim], dtype)
            O_shared = T.alloc_shared([BLOCK_M, dim], dtype)
            acc_s = T.alloc_fragment([BLOCK_M, BLOCK_N], accum)
            acc_s_cast = T.alloc_fragment([BLOCK_M, BLOCK_N], dtype)
            acc_o = T.alloc_fragment([BLOCK_M, dim], accum)
            scores_max = T.alloc_fragment([BLOCK_M], accum)
            scores_max_prev = T.alloc_fragment([BLOCK_M], accum)
            scores_scale = T.alloc_fragment([BLOCK_M], accum)
            scores_sum = T.alloc_fragment([BLOCK_M], accum)
            logsum = T.alloc_fragment([BLOCK_M], accum)

            T.copy(Q[bz, by, bx * BLOCK_M : (bx + 1) * BLOCK_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum))
            loop_range = (
                T.min(T.ceildiv(seq, BLOCK_N), T.ceildiv((bx + 1) * BLOCK_M, BLOCK_N))
                if causal
                else T.ceildiv(seq, BLOCK_N)
            )
            for k in T.Pipelined(loop_range, num_stages=STAGES):
                T.copy(K[bz, by, k * BLOCK_N : (k + 1) * BLOCK_N, :], K_shared)
                if causal:
                    for i, j in T.Parallel(BLOCK_M, BLOCK_N):
                        acc_s[i, j] = T.if_then_else(
                            bx * BLOCK_M + i >= k * BLOCK_N + j, 0, -T.infinity(accum)
                        )
                else:
                    for i, j in T.Parallel(BLOCK_M, BLOCK_N):
                        acc_s[i, j] = T.if_then_else(k * BLOCK_N + j >= seq, -T.infinity(accum), 0)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(BLOCK_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(BLOCK_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(BLOCK_M, BLOCK_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(BLOCK_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(BLOCK_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, by, k * BLOCK_N : (k + 1) * BLOCK_N, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(BLOCK_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * BLOCK_M : (bx + 1) * BLOCK_M, :])

    return mha_fwd


def compile_one(size, causal: bool, path: str):
    """The compiled kernel and what its source runs on (gemm variants, TMA)."""
    import tilecraft

    kernel = tilecraft.compile(
        build(*size, causal), out_idx=[3], target="cuda", pass_configs=PATHS[path] or None
    )
    source = kernel.get_kernel_source() if hasattr(kernel, "get_kernel_source") else ""
    parts = [name for name, call in (("wgmma", "tc::gemm_wgmma<"), ("wgmma_rs", "tc::gemm_wgmma_rs<"),
                                     ("mma.sync", "tc::gemm_ss<"), ("mma.sync-rs", "tc::gemm_rs<"),
                                     ("tma", "tc_tma_load<"), ("ws", "tc_setmaxnreg_inc<"),
                                     ("overlap", "tc_wgmma_wait<1>")) if call in source]  # fmt: skip
    return kernel, "+".join(parts) or "?"


def median_ms(fn, warmup: int, reps: int) -> float:
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


def flops(size, causal: bool) -> float:
    batch, heads, seq = size
    total = 4.0 * batch * heads * seq * seq * DIM  # two matmuls
    return total / 2 if causal else total


def run_case(size, causal: bool, path: str, qkv, ref, reps: int) -> dict:
    import torch

    row = {"size": list(size), "causal": causal, "path": path, "variant": None, "compile_s": None,
           "max_abs_err": None, "ok": False, "tflops": None, "error": None}  # fmt: skip
    try:
        start = time.perf_counter()
        kernel, row["variant"] = compile_one(size, causal, path)
        row["compile_s"] = time.perf_counter() - start
        out = kernel(*qkv)
        torch.cuda.synchronize()
        err = float((out.float() - ref.float()).abs().max())
        row["max_abs_err"] = err
        row["ok"] = err < TOLERANCE  # NaN fails too
        if not row["ok"]:
            row["error"] = f"wrong result: max abs error {err:.3g}"
        if size == MEASURED:
            row["tflops"] = flops(size, causal) / median_ms(lambda: kernel(*qkv), 3, reps) / 1e9
    except Exception as err:
        row["error"] = f"{type(err).__name__}: {err}"
        traceback.print_exc(limit=3)
        with contextlib.suppress(Exception):
            torch.cuda.synchronize()
    return row


def main() -> int:
    import torch
    import torch.nn.functional as F

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=None)
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    began = time.perf_counter()
    rows = []
    for size in SIZES:
        batch, heads, seq = size
        gen = torch.Generator(device="cuda").manual_seed(seq)
        qkv = [torch.randn((batch, heads, seq, DIM), device="cuda", dtype=torch.float16, generator=gen)
               for _ in range(3)]  # fmt: skip
        for causal in (False, True):
            ref = F.scaled_dot_product_attention(*qkv, is_causal=causal)
            sdpa = None
            if size == MEASURED:
                sdpa = flops(size, causal) / median_ms(
                    lambda c=causal, x=qkv: F.scaled_dot_product_attention(*x, is_causal=c), 3, args.reps
                ) / 1e9  # fmt: skip
            for path in PATHS:
                row = run_case(size, causal, path, qkv, ref, args.reps)
                row["sdpa_tflops"] = sdpa
                rows.append(row)
                print(format_row(row), flush=True)
    report(rows, time.perf_counter() - began)
    out = args.json or (str(Path(os.environ["OUT"]) / "hopper_attention.json") if os.environ.get("OUT") else
                        "hopper_attention.json")  # fmt: skip
    Path(out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    print(f"json: {out}")
    return 0 if all(r["ok"] for r in rows) else 1


def format_row(r: dict) -> str:
    size = "B{}H{}S{}".format(*r["size"])
    tf = f"{r['tflops']:6.1f} TFLOP/s" if r["tflops"] else "      -       "
    sdpa = f"SDPA {r['sdpa_tflops']:6.1f}" if r.get("sdpa_tflops") else ""
    err = f"{r['max_abs_err']:.2e}" if r["max_abs_err"] is not None else "-"
    status = "ok" if r["ok"] else f"FAIL {r['error']}"
    causal = "causal" if r["causal"] else "full"
    return f"{size:>12} {causal:>6} {r['path']:>7} ({r['variant']}) {tf} {sdpa} err {err}  {status}"


def report(rows: list[dict], seconds: float) -> None:
    print(f"\n# summary (measured size): TFLOP/s {' / '.join(PATHS)} / SDPA (ratio of each to SDPA)")
    for causal in (False, True):
        by = {r["path"]: r for r in rows if tuple(r["size"]) == MEASURED and r["causal"] == causal}
        rates = [by.get(p, {}).get("tflops") or 0 for p in PATHS]
        sdpa = next((r.get("sdpa_tflops") for r in by.values() if r.get("sdpa_tflops")), 0) or 0
        ratios = " ".join(f"{x / sdpa:.2f}x" if sdpa else "-" for x in rates)
        measured = " / ".join(f"{x:6.1f}" for x in rates)
        print(f"{'causal' if causal else 'full':>6}: {measured} / {sdpa:6.1f} ({ratios})")
    failures = [r for r in rows if not r["ok"]]
    print(f"\n{len(rows) - len(failures)} of {len(rows)} kernels correct ({seconds:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
