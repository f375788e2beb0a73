"""The same kernel text compiled by TileLang and by tilecraft, timed side by side with cuBLAS / SDPA.

    python benchmarks/tilelang_contender.py [--quick] [--json out.json]

The kernels are TileLang's own examples (examples/gemm/example_gemm.py with the tile configuration as
parameters, examples/flash_attention/example_mha_fwd_bhsd.py), written once below as functions of the
language module (`T`) and the `jit` decorator, so both compilers read one text. GEMM float16 and
bfloat16 at 4096^3 and 8192^3, each compiler at its best of CONFIGS (chosen at 4096 float16) and both
at TileLang's best; flash attention forward float16 B8 H16 S4096 D128 (128x128 tiles, 2 stages, 256
threads, fast math), causal and not. Every output is checked against torch first. Times are CUDA-event
medians in alternating rounds (benchmarks/cuda.py's method). Needs torch, triton and TileLang
(`pip install tilelang`); without TileLang it says so and exits 2. TileLang 0.1.15 needs
apache-tvm-ffi >= 0.1.11, < 0.1.13 (with 0.1.15.post2 its import fails: "'tl.SwizzleMode' has no enum at
string index 'NONE'"); a config that compiles but fails at launch (TileLang's 4-stage persistent staged
GEMM asks for 256 KiB of shared memory) is recorded as an error.
"""

# No `from __future__ import annotations`: the kernels' parameter annotations name variables of the
# enclosing functions, which string annotations would not capture.
import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from benchmarks.cuda import check, side_by_side_ms  # noqa: E402

CONFIGS = [  # block_M, block_N, block_K, threads, stages[, "persistent": T.Persistent over one block per SM]
    # [, "staged": the examples' own epilogue through a C_shared tile]
    (128, 256, 64, 256, 3),
    (256, 128, 64, 256, 4),
    (128, 128, 64, 128, 3),
    (128, 128, 32, 128, 4),
    (256, 128, 64, 256, 4, "persistent"),
    (256, 128, 64, 256, 3, "persistent"),
    (128, 256, 64, 256, 3, "staged"),
    (256, 128, 64, 256, 3, "staged"),
    (256, 128, 64, 256, 3, "persistent", "staged"),
    (256, 128, 64, 256, 4, "staged"),
    (128, 256, 64, 256, 4, "staged"),
    (256, 128, 64, 256, 4, "persistent", "staged"),  # C_shared split in column blocks (tilecraft)
]
ATTENTION = dict(batch=8, heads=16, seq=4096, dim=128, block_M=128, block_N=128, stages=2, threads=256)


def languages() -> dict[str, SimpleNamespace]:
    """tilecraft always; TileLang when it imports (a real one: the compat hook is not installed here)."""
    import tilecraft
    import tilecraft.language as tc_T

    found = {"tilecraft": SimpleNamespace(jit=tilecraft.jit, T=tc_T, fast_math={"tl.enable_fast_math": True})}
    try:
        import tilelang
        import tilelang.language as tl_T
    except Exception as err:  # noqa: BLE001 - any import failure means "no TileLang here"
        print(f"TileLang does not import: {type(err).__name__}: {err}", flush=True)
        return found
    found["tilelang"] = SimpleNamespace(
        jit=tilelang.jit, T=tl_T, fast_math={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True}
    )
    return found


def gemm_program(lang, M, N, K, block_M, block_N, block_K, threads, stages, dtype, staged=False):
    """TileLang's examples/gemm/example_gemm.py, its tile configuration made parameters; `staged`: its
    epilogue through C_shared (else C stored from the fragment, so 4 stages of 256x128x64 fit)."""
    T = lang.T

    @lang.jit(out_idx=[-1])
    def matmul():
        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
                A_shared = T.alloc_shared((block_M, block_K), dtype)
                B_shared = T.alloc_shared((block_K, block_N), dtype)
                C_local = T.alloc_fragment((block_M, block_N), "float32")
                T.clear(C_local)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
                if staged:
                    C_shared = T.alloc_shared((block_M, block_N), dtype)
                    T.copy(C_local, C_shared)
                    T.copy(C_shared, C[by * block_M, bx * block_N])
                else:
                    T.copy(C_local, C[by * block_M, bx * block_N])

        return main

    return matmul()


def persistent_gemm_program(lang, M, N, K, block_M, block_N, block_K, threads, stages, dtype, staged=False):
    """TileLang's examples/gemm/example_gemm_persistent.py (its `T.Persistent` form, one block per SM);
    `staged`: the example's epilogue through C_shared, else example_gemm.py's from the fragment (the
    C_shared tile and four stages of 256x128x64 do not fit in shared memory together)."""
    T = lang.T
    sm_num = torch.cuda.get_device_properties(0).multi_processor_count

    @lang.jit(out_idx=[-1])
    def matmul():
        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
            with T.Kernel(sm_num, threads=threads) as (block_id):
                A_shared = T.alloc_shared((block_M, block_K), dtype)
                B_shared = T.alloc_shared((block_K, block_N), dtype)
                C_local = T.alloc_fragment((block_M, block_N), "float32")
                if staged:
                    C_shared = T.alloc_shared((block_M, block_N), dtype)
                for bx, by in T.Persistent([T.ceildiv(M, block_M), T.ceildiv(N, block_N)], sm_num, block_id):
                    T.clear(C_local)
                    for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                        T.copy(A[bx * block_M, k * block_K], A_shared)
                        T.copy(B[k * block_K, by * block_N], B_shared)
                        T.gemm(A_shared, B_shared, C_local)
                    if staged:
                        T.copy(C_local, C_shared)
                        T.copy(C_shared, C[bx * block_M, by * block_N])
                    else:
                        T.copy(C_local, C[bx * block_M, by * block_N])

        return main

    return matmul()


def program(lang, size, cfg, dtype):
    """The GEMM of `cfg` (CONFIGS) at size^3: example_gemm.py's text, or the persistent example's."""
    make = persistent_gemm_program if "persistent" in cfg[5:] else gemm_program
    return make(lang, size, size, size, *cfg[:5], dtype, staged="staged" in cfg[5:])


def mha_program(lang, batch, heads, seq, dim, is_causal, block_M, block_N, stages, threads):
    """TileLang's examples/flash_attention/example_mha_fwd_bhsd.py (seq_q == seq_kv), fast math on."""
    T = lang.T
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, heads, seq, dim]
    dtype, accum_dtype = "float16", "float32"

    @lang.jit(out_idx=[3], pass_configs=lang.fast_math)
    def flashattn():
        @T.prim_func
        def main(
            Q: T.Tensor(shape, dtype),
            K: T.Tensor(shape, dtype),
            V: T.Tensor(shape, dtype),
            Output: T.Tensor(shape, dtype),
        ):
            with T.Kernel(T.ceildiv(seq, block_M), heads, batch, threads=threads) as (bx, by, bz):
                Q_shared = T.alloc_shared([block_M, dim], dtype)
                K_shared = T.alloc_shared([block_N, dim], dtype)
                V_shared = T.alloc_shared([block_N, dim], dtype)
                O_shared = T.alloc_shared([block_M, dim], dtype)
                acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
                acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
                acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
                scores_max = T.alloc_fragment([block_M], accum_dtype)
                scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
                scores_scale = T.alloc_fragment([block_M], accum_dtype)
                scores_sum = T.alloc_fragment([block_M], accum_dtype)
                logsum = T.alloc_fragment([block_M], accum_dtype)

                T.copy(Q[bz, by, bx * block_M : (bx + 1) * block_M, :], Q_shared)
                T.fill(acc_o, 0)
                T.fill(logsum, 0)
                T.fill(scores_max, -T.infinity(accum_dtype))
                loop_range = (
                    T.min(T.ceildiv(seq, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                    if is_causal
                    else T.ceildiv(seq, block_N)
                )
                for k in T.Pipelined(loop_range, num_stages=stages):
                    T.copy(K[bz, by, k * block_N : (k + 1) * block_N, :], K_shared)
                    if is_causal:
                        for i, j in T.Parallel(block_M, block_N):
                            q_idx = bx * block_M + i
                            k_idx = k * block_N + j
                            acc_s[i, j] = T.if_then_else(q_idx >= k_idx, 0, -T.infinity(acc_s.dtype))
                    else:
                        for i, j in T.Parallel(block_M, block_N):
                            acc_s[i, j] = T.if_then_else(k * block_N + j >= seq, -T.infinity(acc_s.dtype), 0)
                    T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                    T.copy(scores_max, scores_max_prev)
                    T.fill(scores_max, -T.infinity(accum_dtype))
                    T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                    for i in T.Parallel(block_M):
                        scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                    for i in T.Parallel(block_M):
                        scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                    T.reduce_sum(acc_s, scores_sum, dim=1)
                    for i in T.Parallel(block_M):
                        logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                    T.copy(acc_s, acc_s_cast)
                    for i, j in T.Parallel(block_M, dim):
                        acc_o[i, j] *= scores_scale[i]
                    T.copy(V[bz, by, k * block_N : (k + 1) * block_N, :], V_shared)
                    T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] /= logsum[i]
                T.copy(acc_o, O_shared)
                T.copy(O_shared, Output[bz, by, bx * block_M : (bx + 1) * block_M, :])

        return main

    return flashattn()


def compile_all(jobs: dict) -> dict:
    """name -> (kernel, compile seconds) or (None, the error); compiled in threads (the compilers run
    their toolchains in subprocesses or release the GIL)."""

    def one(item):
        name, make = item
        start = time.perf_counter()
        try:
            return name, (make(), time.perf_counter() - start)
        except Exception as err:  # noqa: BLE001 - report and go on
            return name, (None, f"{type(err).__name__}: {str(err)[:400]}")

    with ThreadPoolExecutor(max_workers=int(os.environ.get("CONTENDER_JOBS", "8"))) as pool:
        return dict(pool.map(one, jobs.items()))


def tflops(flops: float, ms: float) -> float:
    return flops / ms / 1e9


def bench_gemms(langs, sizes, dtypes) -> dict:
    jobs = {}
    for name, lang in langs.items():
        for cfg in CONFIGS:
            jobs[(name, "float16", 4096, cfg)] = lambda lang=lang, cfg=cfg: program(
                lang, 4096, cfg, "float16"
            )
    compiled = compile_all(jobs)
    results: dict = {"configs": {}}
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    ref = a @ b
    best: dict = {}
    for (name, _, _, cfg), (kernel, info) in compiled.items():
        key = f"{name} {cfg}"
        if kernel is None:
            results["configs"][key] = {"error": info}
            print(f"  {key}: {info}", flush=True)
            continue
        try:
            check(key, kernel(a, b), ref, 2e-2)
        except (SystemExit, Exception) as err:  # noqa: BLE001 - a wrong result, or a launch that fails
            results["configs"][key] = {"error": f"{type(err).__name__}: {str(err)[:400]}"}
            print(f"  {key}: {err}", flush=True)
            continue
        (ms,) = side_by_side_ms(lambda kernel=kernel: kernel(a, b), rounds=3)
        results["configs"][key] = {"tflops": tflops(2 * 4096**3, ms), "compile_s": info}
        print(f"  {key}: {tflops(2 * 4096**3, ms):.0f} TFLOP/s (compiled in {info:.1f} s)", flush=True)
        if name not in best or ms < best[name][0]:
            best[name] = (ms, cfg)
    results["best_config"] = {name: cfg for name, (_, cfg) in best.items()}
    jobs = {}
    for dtype in dtypes:
        for size in sizes:
            for name, (_, cfg) in best.items():
                jobs[(name, dtype, size)] = lambda lang=langs[name], cfg=cfg, size=size, dtype=dtype: program(
                    lang, size, cfg, dtype
                )
    compiled = compile_all(jobs)
    for dtype in dtypes:
        for size in sizes:
            results[f"{dtype}_{size}"] = _time_gemm(compiled, best, dtype, size)
    return results


def _time_gemm(compiled, best, dtype, size) -> dict:
    torch_dtype = getattr(torch, dtype)
    a = torch.randn(size, size, device="cuda", dtype=torch_dtype)
    b = torch.randn(size, size, device="cuda", dtype=torch_dtype)
    ref = a @ b
    names, fns = ["cublas"], [lambda: a @ b]
    for name in best:
        kernel, info = compiled[(name, dtype, size)]
        if kernel is None:
            print(f"gemm {dtype} {size} {name}: {info}", flush=True)
            continue
        check(f"{name} gemm {dtype} {size}", kernel(a, b), ref, 2e-2)
        names.append(name)
        fns.append(lambda kernel=kernel: kernel(a, b))
    times = side_by_side_ms(*fns)
    out = {n: tflops(2 * size**3, t) for n, t in zip(names, times)}
    print(
        f"gemm {dtype} {size}: " + ", ".join(f"{n} {v:.0f}" for n, v in out.items()) + " TFLOP/s", flush=True
    )
    return out


def bench_attention(langs, causal: bool) -> dict:
    p = ATTENTION
    jobs = {name: (lambda lang=lang: mha_program(lang, p["batch"], p["heads"], p["seq"], p["dim"], causal,
                                                  p["block_M"], p["block_N"], p["stages"], p["threads"]))
            for name, lang in langs.items()}  # fmt: skip
    compiled = compile_all(jobs)
    shape = (p["batch"], p["heads"], p["seq"], p["dim"])
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(3))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    flops = 4 * p["batch"] * p["heads"] * p["seq"] ** 2 * p["dim"] * (0.5 if causal else 1.0)
    names, fns = ["sdpa"], [lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)]
    for name, (kernel, info) in compiled.items():
        if kernel is None:
            print(f"attention causal={causal} {name}: {info}", flush=True)
            continue
        check(f"{name} attention causal={causal}", kernel(q, k, v), ref, 2e-2)
        names.append(name)
        fns.append(lambda kernel=kernel: kernel(q, k, v))
    times = side_by_side_ms(*fns)
    out = {n: tflops(flops, t) for n, t in zip(names, times)}
    print(f"attention causal={causal}: " + ", ".join(f"{n} {v:.0f}" for n, v in out.items()) + " TFLOP/s",
          flush=True)  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="4096 only, float16 only")
    parser.add_argument("--only", choices=("gemm", "attention"), default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    langs = languages()
    if "tilelang" not in langs:
        raise SystemExit(2)
    import tilelang

    results: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                     "tilelang": getattr(tilelang, "__version__", "?")}  # fmt: skip
    out = args.json or (Path(os.environ["OUT"]) / "tilelang_contender.json" if "OUT" in os.environ else None)

    def save() -> None:  # after each part, so a run stopped at its time limit keeps what it measured
        if out:
            Path(out).write_text(json.dumps(results, indent=2, default=str))

    if args.only in (None, "attention"):
        results["attention"] = {}
        for causal in (False, True):
            results["attention"][f"causal={causal}"] = bench_attention(langs, causal)
            save()
    if args.only in (None, "gemm"):
        sizes, dtypes = ((4096,), ("float16",)) if args.quick else ((4096, 8192), ("float16", "bfloat16"))
        results["gemm"] = bench_gemms(langs, sizes, dtypes)
        save()


if __name__ == "__main__":
    main()
