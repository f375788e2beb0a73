"""float8 GEMM on sm_90a: wgmma m64nNk32 (the default) against the widening mma.sync path
(`tl.disable_wgmma`) and cuBLAS's float8 GEMM (torch._scaled_mm), e4m3 x e4m3 -> float32, A (M, K), B (N, K).

    python benchmarks/fp8_gemm.py [--sizes 4096,8192]

Each output is compared with a float64 product of the same float8 inputs first (relative Frobenius
error printed: wgmma accumulates inside the instruction with fewer bits than float32, so it is not
exact), then timed in alternating rounds (CUDA events, benchmarks/hopper_check.py's method).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import tilecraft  # noqa: E402
import tilecraft.language as T  # noqa: E402
from benchmarks.hopper_check import median_ms  # noqa: E402

CONFIG = dict(bm=128, bn=256, bk=128, threads=256, stages=3)


def fp8_gemm(m, n, k, bm, bn, bk, threads, stages):
    @T.prim_func
    def gemm(A: T.Tensor((m, k), "float8_e4m3fn"), B: T.Tensor((n, k), "float8_e4m3fn"),
             C: T.Tensor((m, n), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float8_e4m3fn")
            B_s = T.alloc_shared((bn, bk), "float8_e4m3fn")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=stages):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[bx * bn, ko * bk], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=True)
            T.copy(C_l, C[by * bm, bx * bn])

    return gemm


def run_size(size: int) -> bool:
    """Check and time the three GEMMs at size^3; False if one is wrong."""
    a = (torch.randn(size, size, device="cuda") * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(size, size, device="cuda") * 2).to(torch.float8_e4m3fn)
    ref = a.double() @ b.double().T
    func = fp8_gemm(size, size, size, **CONFIG)
    paths = {"wgmma": tilecraft.compile(func, out_idx=[-1], target="cuda"),
             "mma.sync": tilecraft.compile(func, out_idx=[-1], target="cuda",
                                           pass_configs={"tl.disable_wgmma": True})}  # fmt: skip
    one = torch.ones((), device="cuda")
    fns = {name: (lambda k=k: k(a, b)) for name, k in paths.items()}
    fns["cublas"] = lambda: torch._scaled_mm(a, b.T, one, one, out_dtype=torch.float32)
    for name, fn in fns.items():
        err = ((fn().double() - ref).norm() / ref.norm()).item()
        print(f"{size} {name}: relative error {err:.2e}", flush=True)
        if not err < 1e-2:
            print(f"{size} {name}: wrong result, not timed", flush=True)
            return False
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(3):
        for name, fn in fns.items():
            samples[name].append(median_ms(fn))
    flops = 2 * size**3
    rates = {name: flops / statistics.median(v) / 1e9 for name, v in samples.items()}
    print(f"{size}: " + ", ".join(f"{n} {r:.0f}" for n, r in rates.items()) + " TFLOP/s; wgmma / cublas "
          f"{rates['wgmma'] / rates['cublas']:.2f}x, wgmma / mma.sync {rates['wgmma'] / rates['mma.sync']:.2f}x",
          flush=True)  # fmt: skip
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,8192")
    args = parser.parse_args()
    ok = [run_size(int(s)) for s in args.sizes.split(",")]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    raise SystemExit(main())
