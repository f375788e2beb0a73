"""TileLang's bshd attention (K[b, rows, h, :]) at its regression configs, on each sm_90a path: correctness
against torch's SDPA and kernel time (median of CUDA events), to decide the defaults of NOTES item 4.

Paths: `default` (4-D TMA boxes, a producer warpgroup, the gemm-softmax overlap), `no_overlap`
(`tilecraft.cuda.gemm_softmax_overlap` False), `no_ws` (`tl.disable_warp_specialized`: the kernel's threads
issue the TMA loads and wait for them; one stage means no overlap at all), `no_tma` (`tl.disable_tma_lower`:
the cp.async / vector loads the kernels had before). Every path compiles with fast math, as the examples do.

    python benchmarks/bshd_paths.py [--reps N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.hopper_attention import median_ms  # noqa: E402

FAST = {"tl.enable_fast_math": True}
PATHS = {
    "default": {},
    "no_overlap": {"tilecraft.cuda.gemm_softmax_overlap": False},
    "no_ws": {"tl.disable_warp_specialized": True},
    "no_tma": {"tl.disable_tma_lower": True},
}
# name -> (mha_fwd_bshd arguments: batch, heads, seq, dim, causal, block_m, block_n, stages, threads, groups),
# the paths to run; the sizes are those of TileLang's regression functions
CASES = {
    "mha_fwd_bshd (1 stage, 128x128)": ((1, 32, 256, 128, False, 128, 128, 1, 128, 1), list(PATHS)),
    # mha_inference's split kernel: 128x64 tiles, 2 stages, 128 threads, 512 keys per block (a batch of 4 for
    # its 4 splits of KV_CTX 2048; 512 queries, not 128)
    "mha_inference-like (128x64)": (
        (4, 32, 512, 128, False, 128, 64, 2, 128, 1),
        ["default", "no_overlap", "no_tma"],
    ),
    "gqa_fwd_bshd (2 stages, 64x64)": ((1, 16, 1024, 128, False, 64, 64, 2, 128, 16), ["default", "no_tma"]),
}


def run(name: str, args, path: str, reps: int) -> dict:
    import torch

    import tilecraft
    from tilecraft.testing.conformance.attention_bshd import mha_fwd_bshd

    batch, heads, seq, dim, causal, *_, groups = args
    row = {"case": name, "path": path, "ok": False, "ms": None, "err": None, "variant": None, "error": None}
    try:
        start = time.perf_counter()
        kernel = tilecraft.compile(mha_fwd_bshd(*args), out_idx=[3], target="cuda",
                                   pass_configs={**FAST, **PATHS[path]})  # fmt: skip
        row["compile_s"] = round(time.perf_counter() - start, 1)
        source = kernel.get_kernel_source()
        row["variant"] = "+".join(n for n, s in (("tma4d", "tc_tma_load<4>"), ("ws", "tc_setmaxnreg_inc<"),
                                                 ("overlap", "tc_wgmma_wait<1>")) if s in source) or "plain"  # fmt: skip
        gen = torch.Generator(device="cuda").manual_seed(0)
        q = torch.randn(batch, seq, heads, dim, device="cuda", dtype=torch.float16, generator=gen)
        k, v = (torch.randn(batch, seq, heads // groups, dim, device="cuda", dtype=torch.float16, generator=gen)
                for _ in range(2))  # fmt: skip
        out = kernel(q, k, v)
        ref = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2).repeat_interleave(groups, 1),
            v.transpose(1, 2).repeat_interleave(groups, 1), is_causal=causal,
        ).transpose(1, 2)  # fmt: skip
        row["err"] = float((out.float() - ref.float()).abs().max())
        row["ok"] = row["err"] < 2e-2
        row["ms"] = median_ms(lambda: kernel(q, k, v), 5, reps)
    except Exception as err:  # noqa: BLE001 - every failure is recorded and the run goes on
        row["error"] = f"{type(err).__name__}: {err}"
        traceback.print_exc(limit=3)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    for name, (kernel_args, paths) in CASES.items():
        for path in paths:
            row = run(name, kernel_args, path, args.reps)
            rows.append(row)
            ms = f"{row['ms']:.4f} ms" if row["ms"] else "-"
            print(f"{name:34s} {path:11s} {row['variant'] or '':20s} {ms:>12s}  err {row['err']}  "
                  f"{'ok' if row['ok'] else 'FAIL ' + str(row['error'] or '')}", flush=True)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
