"""Issue 29: one attention forward written three ways, each timed against TileLang's own example and
SDPA, so that a kernel's speed is seen to follow from what it computes rather than from its text.

The three tilecraft texts: benchmarks/hopper_attention.py's `build` (TileLang's example_mha_fwd_bhsd as
written), the conformance kernel built from macros (tilecraft/testing/conformance/attention_bhsd.py),
and `rewritten` below (the trip count as a loop from an explicit start, the scale folded into the scores
before the row max, copies at offsets instead of slices, T.clear, other names). TileLang's side is its
example's `flashattn` at the same tiles (128 x 128, 2 stages, 256 threads), imported from
`--examples` with TileLang from `--tilelang-site` in this process (tilecraft does not hook `tilelang`
unless run under tilecraft.compat, so both compilers live side by side). Every kernel's output is
checked against SDPA before it is timed; times are CUPTI kernel time (tilecraft.profiler.do_bench).
tests/cuda/test_attention_styles.py checks without a GPU that the three texts lower to one kernel shape.

    python benchmarks/attention_styles.py [--examples TL/examples --tilelang-site SITE] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: tilecraft, benchmarks.X

DIM, BM, BN, STAGES, THREADS = 128, 128, 128, 2, 256
SIZE = (8, 16, 4096)  # batch, heads, seq: the measurement
TOLERANCE = 2e-2


def rewritten(batch: int, heads: int, seq: int, causal: bool):
    """The same computation as hopper_attention.build, written another way: the loop from an explicit
    start, the scale folded into the scores before the row max, copies at offsets, T.clear."""
    import tilecraft.language as T

    scale = (1.0 / DIM) ** 0.5 * 1.44269504
    shape = [batch, heads, seq, DIM]

    @T.prim_func
    def attention(
        Q: T.Tensor(shape, "float16"),
        K: T.Tensor(shape, "float16"),
        V: T.Tensor(shape, "float16"),
        Out: T.Tensor(shape, "float16"),
    ):
        with T.Kernel(T.ceildiv(seq, BM), heads, batch, threads=THREADS) as (bx, by, bz):
            q_tile = T.alloc_shared([BM, DIM], "float16")
            k_tile = T.alloc_shared([BN, DIM], "float16")
            v_tile = T.alloc_shared([BN, DIM], "float16")
            o_tile = T.alloc_shared([BM, DIM], "float16")
            s = T.alloc_fragment([BM, BN], "float32")
            p = T.alloc_fragment([BM, BN], "float16")
            o = T.alloc_fragment([BM, DIM], "float32")
            m = T.alloc_fragment([BM], "float32")
            m_old = T.alloc_fragment([BM], "float32")
            alpha = T.alloc_fragment([BM], "float32")
            row_sum = T.alloc_fragment([BM], "float32")
            denom = T.alloc_fragment([BM], "float32")
            T.copy(Q[bz, by, bx * BM, 0], q_tile)
            T.clear(o)
            T.clear(denom)
            T.fill(m, -T.infinity("float32"))
            last = T.min(T.ceildiv(seq, BN), T.ceildiv((bx + 1) * BM, BN)) if causal else T.ceildiv(seq, BN)
            for t in T.Pipelined(0, last, num_stages=STAGES):
                T.copy(K[bz, by, t * BN, 0], k_tile)
                for i, j in T.Parallel(BM, BN):
                    keep = (bx * BM + i >= t * BN + j) if causal else (t * BN + j < seq)
                    s[i, j] = T.if_then_else(keep, 0, -T.infinity("float32"))
                T.gemm(q_tile, k_tile, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(BM, BN):
                    s[i, j] = s[i, j] * scale
                T.copy(m, m_old)
                T.reduce_max(s, m, dim=1, clear=False)
                for i in T.Parallel(BM):
                    alpha[i] = T.exp2(m_old[i] - m[i])
                for i, j in T.Parallel(BM, BN):
                    s[i, j] = T.exp2(s[i, j] - m[i])
                T.reduce_sum(s, row_sum, dim=1)
                for i in T.Parallel(BM):
                    denom[i] = denom[i] * alpha[i] + row_sum[i]
                T.copy(s, p)
                for i, j in T.Parallel(BM, DIM):
                    o[i, j] = o[i, j] * alpha[i]
                T.copy(V[bz, by, t * BN, 0], v_tile)
                T.gemm(p, v_tile, o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(BM, DIM):
                o[i, j] = o[i, j] / denom[i]
            T.copy(o, o_tile)
            T.copy(o_tile, Out[bz, by, bx * BM, 0])

    return attention


def texts(batch: int, heads: int, seq: int, causal: bool) -> dict:
    """The three tilecraft texts of one attention forward, by name."""
    from benchmarks import hopper_attention
    from tilecraft.testing.conformance.attention_bhsd import mha_fwd_bhsd

    return {
        "benchmark": hopper_attention.build(batch, heads, seq, causal),
        "macros": mha_fwd_bhsd(batch, heads, seq, DIM, causal, BM, BN, STAGES, THREADS),
        "rewritten": rewritten(batch, heads, seq, causal),
    }


def tilelang_kernel(examples: str, site: str, causal: bool):
    """TileLang's example_mha_fwd_bhsd at the same tiles, compiled by TileLang."""
    sys.path.insert(0, site)
    sys.path.insert(0, str(Path(examples) / "flash_attention"))
    import example_mha_fwd_bhsd as example

    batch, heads, seq = SIZE
    # out_idx=[3]: the kernel takes Q, K, V and returns the output (allocated per call: no kernel launched)
    return example.flashattn(batch, heads, seq, seq, DIM, causal, block_M=BM, block_N=BN, num_stages=STAGES,
                             threads=THREADS)  # fmt: skip


def flops(causal: bool) -> float:
    batch, heads, seq = SIZE
    total = 4.0 * batch * heads * seq * seq * DIM
    return total / 2 if causal else total


def measure(name: str, run, ref, causal: bool) -> dict:
    """`run()` launches the kernel and returns its output."""
    import torch

    from tilecraft.profiler import do_bench

    row = {"text": name, "causal": causal, "ok": False, "max_abs_err": None, "ms": None, "tflops": None,
           "error": None}  # fmt: skip
    try:
        out = run()
        torch.cuda.synchronize()
        row["max_abs_err"] = float((out.float() - ref.float()).abs().max())
        row["ok"] = row["max_abs_err"] < TOLERANCE
        if row["ok"]:
            row["ms"] = do_bench(run, backend="cupti")
            row["tflops"] = flops(causal) / row["ms"] / 1e9
        else:
            row["error"] = f"wrong result: max abs error {row['max_abs_err']:.3g}"
    except Exception as err:  # a failure is recorded and the run goes on
        row["error"] = f"{type(err).__name__}: {err}"
        traceback.print_exc(limit=3)
    print(f"{'causal' if causal else 'full':>6} {name:>10}: " + (f"{row['tflops']:.1f} TFLOP/s ({row['ms']:.3f} ms)"
          if row["tflops"] else f"FAIL {row['error']}"), flush=True)  # fmt: skip
    return row


def main() -> int:
    import torch
    import torch.nn.functional as F

    import tilecraft

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", help="TileLang's examples directory (its example_mha_fwd_bhsd)")
    parser.add_argument("--tilelang-site", help="site-packages holding TileLang")
    parser.add_argument("--json", default="attention_styles.json")
    args = parser.parse_args()
    batch, heads, seq = SIZE
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn((batch, heads, seq, DIM), device="cuda", dtype=torch.float16, generator=gen)
               for _ in range(3))  # fmt: skip
    out = torch.empty_like(q)
    rows = []
    for causal in (False, True):
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        rows.append(
            measure(
                "sdpa", lambda c=causal: F.scaled_dot_product_attention(q, k, v, is_causal=c), ref, causal
            )
        )
        if args.examples and args.tilelang_site:
            try:
                tl = tilelang_kernel(args.examples, args.tilelang_site, causal)
                rows.append(measure("tilelang", lambda t=tl: t(q, k, v), ref, causal))
            except Exception as err:
                print(f"TileLang's kernel: {type(err).__name__}: {err}", flush=True)
        for name, func in texts(batch, heads, seq, causal).items():
            kernel = tilecraft.compile(func, target="cuda")
            out.fill_(float("nan"))  # poisoned: a kernel that writes nothing fails the check
            rows.append(measure(name, lambda kk=kernel: (kk(q, k, v, out), out)[1], ref, causal))
    for causal in (False, True):
        by = {r["text"]: r for r in rows if r["causal"] == causal}
        peer = (by.get("tilelang") or {}).get("ms")
        ratios = ", ".join(f"{n} {peer / r['ms']:.2f}x" for n, r in by.items()
                           if peer and r["ms"] and n not in ("tilelang", "sdpa"))  # fmt: skip
        print(f"{'causal' if causal else 'full'}: ratio to TileLang (its time / ours): {ratios or '-'}")
    Path(args.json).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
