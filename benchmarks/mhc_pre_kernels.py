"""Issue 29: the two kernels of TileLang's examples/deepseek_mhc/example_mhc_pre.py timed one by one (CUPTI),
and the TF32 gemm (with its row sums of squares) checked against torch in float32.

From TileLang's example directory, under tilecraft (the example's own kernels, unchanged):

    cd <tilelang>/examples/deepseek_mhc && python -m tilecraft.compat <tilecraft>/benchmarks/mhc_pre_kernels.py

and under TileLang itself (the baseline) with plain `python` instead of `python -m tilecraft.compat`.
Without the example (`--builtin`, from anywhere), a copy of its gemm kernel written for tilecraft runs
alone. The gemm is TF32 (`T.tfloat32` operands): against a float32 torch matmul its relative error is
about 3e-4 (operands rounded to a 10-bit mantissa); an error near 1e-6 would mean float32 math, one of
order 1 a wrong result. `--json FILE` writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def builtin_gemm(target: str):
    """example_mhc_pre.py's mhc_pre_gemm_sqrsum_tilelang (lines 134-195), as written there, for tilecraft
    (its layout hint on x_smem_16 left out: tilecraft drops on-chip layout hints)."""
    import tilecraft
    from tilecraft import language as T

    @tilecraft.jit(target=target)
    def mhc_pre_gemm_sqrsum(x, fn, out, sqrsum, hc_mult3: int, hc_hidden_size: int, token_block: int = 32,
                            hidden_block: int = 256):  # fmt: skip
        num_tokens = T.dynamic("num_tokens")
        x: T.Tensor((num_tokens, hc_hidden_size), T.bfloat16)
        fn: T.Tensor((hc_mult3, hc_hidden_size), T.tfloat32)
        out: T.Tensor((num_tokens, hc_mult3), T.float32)
        sqrsum: T.Tensor((num_tokens), T.float32)

        with T.Kernel(T.ceildiv(num_tokens, token_block)) as px:
            out_frag = T.alloc_fragment((token_block, 32), T.float32)
            sqrsum_part = T.alloc_fragment((token_block, 4), T.float32)
            T.clear(out_frag)
            T.clear(sqrsum_part)
            for pz in T.Pipelined(hc_hidden_size // hidden_block, num_stages=2):
                x_smem_16 = T.alloc_shared((token_block, hidden_block), T.bfloat16)
                fn_smem = T.alloc_shared((32, hidden_block), T.tfloat32)
                T.copy(x[px * token_block, pz * hidden_block], x_smem_16)
                T.copy(fn[0, pz * hidden_block], fn_smem)
                x_frag_16 = T.alloc_fragment((token_block, hidden_block), T.bfloat16)
                T.copy(x_smem_16, x_frag_16)
                x_frag = T.alloc_fragment((token_block, hidden_block), T.tfloat32)
                T.copy(x_frag_16, x_frag)
                for jj in T.serial(hidden_block // 4):
                    for i, j in T.Parallel(token_block, 4):
                        sqrsum_part[i, j] += x_frag[i, jj * 4 + j] * x_frag[i, jj * 4 + j]
                T.gemm(x_frag, fn_smem, out_frag, transpose_A=False, transpose_B=True, clear_accum=False)
            sqrsum_l = T.alloc_fragment(token_block, T.float32)
            T.reduce_sum(sqrsum_part, sqrsum_l)
            for i in T.Parallel(token_block):
                sqrsum[px * token_block + i] = sqrsum_l[i]
            for i, j in T.Parallel(token_block, 32):
                if j < hc_mult3:
                    out[px * token_block + i, j] = out_frag[i, j]

    return mhc_pre_gemm_sqrsum


def relative_error(got, ref) -> float:
    return float((got.double() - ref.double()).norm() / ref.double().norm().clamp_min(1e-30))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--builtin", action="store_true", help="time the built-in copy of the gemm kernel alone"
    )
    parser.add_argument(
        "--example-dir", default=os.getcwd(), help="where example_mhc_pre.py is (default: cwd)"
    )
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--target", default="auto", help="--builtin only: the tilecraft target")
    parser.add_argument("--no-bench", action="store_true", help="check the results only")
    parser.add_argument("--json", help="write the numbers to this file")
    args = parser.parse_args()

    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # the reference is float32
    n, hidden, hc = args.tokens, args.hidden, 4
    h2, h3 = hc * hc, hc * 2 + hc * hc
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator().manual_seed(42)
    residual = torch.randn((n, hc, hidden), generator=gen).bfloat16().to(device)
    fn = (torch.randn((h3, hc * hidden), generator=gen) * 1e-4).to(device)
    rf = residual.view(n, hc, hidden)
    gm = torch.empty(1, n, h3, dtype=torch.float32, device=device)
    gs = torch.empty(1, n, dtype=torch.float32, device=device)
    kernels = {}
    if args.builtin:
        gemm_kernel = builtin_gemm(args.target)
        kernels["gemm_sqrsum"] = lambda: gemm_kernel(rf.view(n, hc * hidden), fn, gm.squeeze(0), gs.squeeze(0), h3,
                                                     hc * hidden)  # fmt: skip
    else:
        sys.path.insert(0, args.example_dir)
        import example_mhc_pre as E

        d = E.generate_test_data(n=n, hc_mult=hc, hidden_size=hidden, rms_eps=1e-6, hc_pre_eps=1e-6,
                                 hc_sinkhorn_eps=1e-6, hc_post_mult_value=1.0, sinkhorn_repeat=10)  # fmt: skip
        residual, fn, sc, base = d["residual"], d["fn"], d["hc_scale"], d["hc_base"]
        rf = residual.view(n, hc, hidden)
        post = torch.empty(n, hc, dtype=torch.float32, device=device)
        comb = torch.empty(n, h2, dtype=torch.float32, device=device)
        li = torch.empty(n, hidden, dtype=torch.bfloat16, device=device)
        kernels["gemm_sqrsum"] = lambda: E.mhc_pre_gemm_sqrsum_tilelang(
            rf.view(n, hc * hidden), fn, gm.squeeze(0), gs.squeeze(0), h3, hc * hidden
        )
        kernels["big_fuse"] = lambda: E.mhc_pre_big_fuse_tilelang(
            gm, gs, sc, base, rf, post, comb, li, hidden, 1e-6, 1e-6, 1e-6, 1.0, 10, 1, hc
        )
    for run in kernels.values():
        run()
    if device == "cuda":
        torch.cuda.synchronize()
    x = rf.reshape(n, -1).float()
    results = {
        "tokens": n,
        "hidden": hidden,
        "gemm_relative_error_vs_float32": relative_error(gm[0], x @ fn.float().T),
        "sqrsum_relative_error": relative_error(gs[0], (x * x).sum(-1)),
    }
    if not args.no_bench:
        if args.builtin:
            from tilecraft.profiler.bench import do_bench
        else:  # TileLang's, or under tilecraft.compat tilecraft's
            from tilelang.profiler import do_bench

        for name, run in kernels.items():
            results[f"{name}_ms"] = float(do_bench(run, backend="cupti"))
    for key, value in results.items():
        print(f"{key}: {value:.4g}" if isinstance(value, float) else f"{key}: {value}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
