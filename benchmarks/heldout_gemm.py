"""The held-out GEMM shapes of issue 29 against cuBLAS (torch's matmul) on one GPU, side by side.

    python benchmarks/heldout_gemm.py [--json out.json]

Shapes no tilecraft benchmark was tuned on: bf16 16384 x 2048 x 1024 (a wide, shallow MLP projection) and
f16 4000^3 (ragged: 4000 is not a multiple of any tile). Each tile configuration of `benchmarks/cuda.py`'s
GEMM text is compiled, checked against torch's matmul (relative error) and timed with CUDA events beside
cuBLAS in alternating rounds; the best configuration's ratio is the figure (cuBLAS / tilecraft time).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from benchmarks.cuda import GEMM_CONFIGS, check, side_by_side_ms, tc_matmul  # noqa: E402

SHAPES = [(16384, 2048, 1024, "bfloat16"), (4000, 4000, 4000, "float16")]
# benchmarks/cuda.py's configurations and the 64-deep ones benchmarks/gemm_sweep.py found best at 4096^3
CONFIGS = [*GEMM_CONFIGS, (128, 256, 64, 256, 4), (256, 128, 64, 256, 4), (128, 128, 64, 128, 4)]


def bench_shape(m: int, n: int, k: int, dtype: str) -> dict:
    torch_dtype = getattr(torch, dtype)
    a = torch.randn(m, k, device="cuda", dtype=torch_dtype)
    b = torch.randn(k, n, device="cuda", dtype=torch_dtype)
    ref = a @ b
    flops = 2 * m * n * k
    rows = []
    for cfg in CONFIGS:
        try:
            kernel = tc_matmul(m, n, k, *cfg, dtype)
            check(f"gemm {m}x{n}x{k} {dtype} {cfg}", kernel(a, b), ref, 2e-2)
        except (Exception, SystemExit) as err:  # noqa: BLE001 - report and try the next configuration
            print(f"  {cfg}: {type(err).__name__}: {str(err)[:200]}", flush=True)
            continue
        t_cublas, t_tc = side_by_side_ms(lambda: a @ b, lambda: kernel(a, b))  # noqa: B023
        rows.append({"config": cfg, "cublas_tflops": flops / t_cublas / 1e9, "tilecraft_tflops": flops / t_tc / 1e9,
                     "ratio": t_cublas / t_tc})  # fmt: skip
        print(f"  {cfg}: tilecraft {flops / t_tc / 1e9:.0f} TFLOP/s, cuBLAS {flops / t_cublas / 1e9:.0f}, "
              f"ratio {t_cublas / t_tc:.3f}", flush=True)  # fmt: skip
    best = max(rows, key=lambda r: r["ratio"]) if rows else None
    return {"shape": [m, n, k], "dtype": dtype, "configs": rows, "best": best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    print(torch.cuda.get_device_name(), flush=True)
    results = []
    for m, n, k, dtype in SHAPES:
        print(f"{dtype} {m}x{n}x{k}", flush=True)
        results.append(bench_shape(m, n, k, dtype))
        best = results[-1]["best"]
        if best:
            print(f"best {best['config']}: {best['tilecraft_tflops']:.0f} vs cuBLAS {best['cublas_tflops']:.0f} "
                  f"TFLOP/s = {best['ratio']:.3f}x", flush=True)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
