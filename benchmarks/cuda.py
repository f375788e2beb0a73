"""tilecraft's CUDA backend against torch (cuBLAS) and Triton, side by side in one process.

    python benchmarks/cuda.py [--quick] [--json out.json]

GEMM (float16, bfloat16) at 4096^3 and 8192^3; elementwise add (float32, bandwidth); row softmax and
RMS norm against torch; host launch overhead (output allocated and passed in; the compiled launcher and the Python path; torch's
`x + 1` and TileLang's call when importable), CUDA-graph replay of 100 tiny kernels, the compiled
launcher's build and warm load; cold compile and warm (cached) load of the GEMM.
Times are CUDA-event medians (triton.testing.do_bench) after warm-up, on random data larger than L2,
taken in alternating rounds (the median of three rounds per contender); every result is checked
against torch before it is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.testing import do_bench  # noqa: E402

import tilecraft  # noqa: E402
import tilecraft.language as T  # noqa: E402
from tilecraft import settings  # noqa: E402

GEMM_CONFIGS = [  # block_M, block_N, block_K, threads, stages
    (128, 128, 32, 128, 4),
    (128, 128, 32, 128, 3),
    (128, 256, 32, 256, 3),
    (256, 128, 32, 256, 3),
    (128, 256, 32, 256, 4),
    (128, 128, 64, 128, 3),
]


def median_ms(fn) -> float:
    return do_bench(fn, warmup=50, rep=300, return_mode="median")


def side_by_side_ms(*fns, rounds: int = 3) -> list[float]:
    """Median times of each function, measured in alternating rounds so that clock or power drift
    over the run does not favour whichever happens to be timed first; the median of the rounds."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, samples in zip(fns, times):
            samples.append(median_ms(fn))
    return [statistics.median(samples) for samples in times]


def rel_error(out, ref) -> float:
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def check(name: str, out, ref, tol: float) -> None:
    err = rel_error(out, ref)
    if not err <= tol:
        raise SystemExit(f"{name}: relative error {err:.2e} > {tol:.0e}; not timing a wrong result")


# ---------------------------------------------------------------- kernels


@tilecraft.jit(out_idx=[-1])
def tc_matmul(M, N, K, block_M, block_N, block_K, threads, stages, dtype):
    @T.prim_func
    def matmul(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_l = T.alloc_fragment((block_M, block_N), "float32")
            T.use_swizzle(panel_size=8)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * block_M, bx * block_N])

    return matmul


@tilecraft.jit(out_idx=[-1])
def tc_add(n, block=4096, threads=256):
    @T.prim_func
    def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=threads) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return add


@tilecraft.jit(out_idx=[-1])
def tc_softmax(m, n, threads=256):
    @T.prim_func
    def softmax(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(m, threads=threads) as bx:
            x = T.alloc_fragment((1, n), "float32")
            mx = T.alloc_fragment((1,), "float32")
            sm = T.alloc_fragment((1,), "float32")
            T.copy(X[bx, 0], x)
            T.reduce_max(x, mx, dim=1)
            for i, j in T.Parallel(1, n):
                x[i, j] = T.exp(x[i, j] - mx[i])
            T.reduce_sum(x, sm, dim=1)
            for i, j in T.Parallel(1, n):
                x[i, j] = x[i, j] / sm[i]
            T.copy(x, Y[bx, 0])

    return softmax


@tilecraft.jit(out_idx=[-1])
def tc_rms_norm(m, n, eps=1e-6, threads=256):
    @T.prim_func
    def rms_norm(
        X: T.Tensor((m, n), "bfloat16"), W: T.Tensor((n,), "bfloat16"), Y: T.Tensor((m, n), "bfloat16")
    ):
        with T.Kernel(m, threads=threads) as bx:
            x = T.alloc_fragment((1, n), "float32")
            sq = T.alloc_fragment((1, n), "float32")
            ss = T.alloc_fragment((1,), "float32")
            T.copy(X[bx, 0], x)
            for i, j in T.Parallel(1, n):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, ss, dim=1)
            for i in T.Parallel(1):
                ss[i] = T.rsqrt(ss[i] / n + eps)
            for i, j in T.Parallel(1, n):
                x[i, j] = x[i, j] * ss[i] * W[j]
            T.copy(x, Y[bx, 0])

    return rms_norm


@tilecraft.jit(out_idx=[-1])
def tc_tiny(n=32):
    @T.prim_func
    def tiny(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(n):
                B[i] = A[i] + 1.0

    return tiny


@triton.jit
def triton_matmul_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    num_m, num_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = pid // (GROUP * num_n)
    first_m = group * GROUP
    size_m = min(num_m - first_m, GROUP)
    pid_m = first_m + (pid % (GROUP * num_n)) % size_m
    pid_n = (pid % (GROUP * num_n)) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * sam + rk[None, :] * sak
    pb = b + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(pa), tl.load(pb))
        pa += BK * sak
        pb += BK * sbk
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(c.dtype.element_ty))


def triton_matmul(a, b):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, 128) * triton.cdiv(N, 256),)
    triton_matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                               c.stride(1), BM=128, BN=256, BK=64, GROUP=8, num_warps=8, num_stages=3)  # fmt: skip
    return c


# ---------------------------------------------------------------- benchmarks


def best_gemm_config(dtype: str, size: int, configs) -> tuple:
    a = torch.randn(size, size, device="cuda", dtype=getattr(torch, dtype))
    b = torch.randn(size, size, device="cuda", dtype=getattr(torch, dtype))
    ref = a @ b
    best = None
    for cfg in configs:
        try:
            kernel = tc_matmul(size, size, size, *cfg, dtype)
            check(f"gemm {dtype} {cfg}", kernel(a, b), ref, 2e-2)
        except Exception as err:  # noqa: BLE001 - report and try the next configuration
            print(f"  config {cfg}: {type(err).__name__}: {str(err)[:300]}", flush=True)
            continue
        ms = median_ms(lambda: kernel(a, b))  # noqa: B023
        print(f"  config {cfg}: {2 * size**3 / ms / 1e9:.0f} TFLOP/s", flush=True)
        if best is None or ms < best[0]:
            best = (ms, cfg)
    return best[1] if best else configs[0]


def bench_gemm(dtype: str, size: int, cfg) -> dict:
    torch_dtype = getattr(torch, dtype)
    a = torch.randn(size, size, device="cuda", dtype=torch_dtype)
    b = torch.randn(size, size, device="cuda", dtype=torch_dtype)
    ref = a @ b
    kernel = tc_matmul(size, size, size, *cfg, dtype)
    check("tilecraft gemm", kernel(a, b), ref, 2e-2)
    check("triton gemm", triton_matmul(a, b), ref, 2e-2)
    flops = 2 * size**3
    t_torch, t_triton, t_tc = side_by_side_ms(
        lambda: a @ b, lambda: triton_matmul(a, b), lambda: kernel(a, b)
    )
    return {"torch_tflops": flops / t_torch / 1e9, "triton_tflops": flops / t_triton / 1e9,
            "tilecraft_tflops": flops / t_tc / 1e9, "ratio_vs_cublas": t_torch / t_tc, "config": cfg}  # fmt: skip


def bench_add(n: int = 1 << 28) -> dict:
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    kernel = tc_add(n)
    check("add", kernel(a, b), a + b, 1e-7)
    moved = 3 * 4 * n
    t_torch, t_tc = side_by_side_ms(lambda: a + b, lambda: kernel(a, b))
    return {"torch_tbs": moved / t_torch / 1e9, "tilecraft_tbs": moved / t_tc / 1e9, "ratio": t_torch / t_tc}


def bench_softmax(m: int = 16384, n: int = 4096) -> dict:
    x = torch.randn(m, n, device="cuda")
    kernel = tc_softmax(m, n)
    check("softmax", kernel(x), torch.softmax(x.double(), dim=1), 1e-5)
    t_torch, t_tc = side_by_side_ms(lambda: torch.softmax(x, dim=1), lambda: kernel(x))
    moved = 2 * 4 * m * n
    return {"torch_tbs": moved / t_torch / 1e9, "tilecraft_tbs": moved / t_tc / 1e9, "ratio": t_torch / t_tc}


def bench_rms_norm(m: int = 16384, n: int = 4096) -> dict:
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    kernel = tc_rms_norm(m, n)
    ref = torch.nn.functional.rms_norm(x.float(), (n,), w.float(), 1e-6)
    check("rms norm", kernel(x, w), ref, 1e-2)
    t_torch, t_tc = side_by_side_ms(
        lambda: torch.nn.functional.rms_norm(x, (n,), w, 1e-6), lambda: kernel(x, w)
    )
    moved = 2 * 2 * m * n
    return {"torch_tbs": moved / t_torch / 1e9, "tilecraft_tbs": moved / t_tc / 1e9, "ratio": t_torch / t_tc}


def _host_us_per_call(fn, batches: int = 100, batch: int = 100) -> float:
    """Host time per call: batches of calls timed on the host clock, the device drained (untimed)
    between batches, so the launch queue never fills and the GPU's own time per tiny kernel (which
    depends on its clock, often idle-low here) cannot leak into the figure; the median batch."""
    for _ in range(batch):
        fn()
    samples = []
    for _ in range(batches):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - start) / batch * 1e6)
    torch.cuda.synchronize()
    return statistics.median(samples)


def _launch_contenders(a, b) -> dict:
    """name -> a call of a 32-element `x + 1` kernel, output allocated or passed in (`b`)."""
    contenders = {}
    for mode in ("compiled", "python"):
        with settings.override(TILECRAFT_LAUNCHER=mode):
            allocating = tilecraft.compile(tc_tiny.func(32), out_idx=[-1])
            given = tilecraft.compile(tc_tiny.func(32))
            check(f"tiny ({mode})", allocating(a), a + 1, 1e-7)
            given(a, b)
            check(f"tiny ({mode}, given)", b, a + 1, 1e-7)
        contenders[f"tilecraft_{mode}_allocated"] = lambda k=allocating: k(a)
        contenders[f"tilecraft_{mode}_given"] = lambda k=given: k(a, b)
    contenders["torch_allocated"] = lambda: a + 1.0
    contenders["torch_given"] = lambda: torch.add(a, 1.0, out=b)
    try:
        from benchmarks._tilelang_tiny import tiny as tilelang_tiny
    except ImportError as err:
        print(f"launch: TileLang not importable ({err}); not compared", flush=True)
        return contenders
    tl_allocating, tl_given = tilelang_tiny(32), tilelang_tiny(32, out_idx=())
    check("tiny (TileLang)", tl_allocating(a), a + 1, 1e-7)
    contenders["tilelang_allocated"] = lambda: tl_allocating(a)
    contenders["tilelang_given"] = lambda: tl_given(a, b)
    return contenders


def bench_graph_replay(kernels: int = 100, replays: int = 50) -> dict:
    """Device time per kernel of a CUDA graph of `kernels` tiny tilecraft launches, replayed."""
    a = torch.randn(32, device="cuda")
    kernel = tilecraft.compile(tc_tiny.func(32), out_idx=[-1])
    kernel(a)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        x = a
        for _ in range(kernels):
            x = kernel(x)
    graph.replay()
    torch.cuda.synchronize()
    check("graph replay", x, a + kernels, 1e-5)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    host_start = time.perf_counter()
    for _ in range(replays):
        graph.replay()
    torch.cuda.synchronize()
    host = (time.perf_counter() - host_start) / (replays * kernels) * 1e6
    return {"graph_us_per_kernel": start.elapsed_time(end) * 1e3 / (replays * kernels),
            "graph_wall_us_per_kernel": host}  # fmt: skip


def bench_launcher_build() -> dict:
    """The compiled launcher's build in a fresh cache, and its load in a warm process (imports excluded)."""
    code = ("import time; from tilecraft.execution import native, cache; t = time.perf_counter(); "
            "assert native.launcher_module() is not None; print((time.perf_counter() - t) * 1e3)")  # fmt: skip
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "TILECRAFT_CACHE_DIR": cache, "TILECRAFT_LAUNCHER": "compiled",
               "PYTHONPATH": str(Path(__file__).resolve().parents[1])}  # fmt: skip
        def run() -> float:
            done = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
            return float(done.stdout)

        cold = run()
        warm = statistics.median(run() for _ in range(5))
    return {"launcher_build_ms": cold, "launcher_warm_load_ms": warm}


def bench_launch(rounds: int = 5) -> dict:
    """Host time per call of each contender (`_host_us_per_call`), in alternating rounds; the median of
    the rounds. Also one back-to-back figure, which the GPU's time per kernel bounds."""
    a = torch.randn(32, device="cuda")
    b = torch.empty(32, device="cuda")
    contenders = _launch_contenders(a, b)
    samples: dict = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            samples[name].append(_host_us_per_call(fn))
    result = {f"{name}_us": statistics.median(s) for name, s in samples.items()}
    fn = contenders["tilecraft_compiled_allocated"]
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(20000):
        fn()
    torch.cuda.synchronize()
    result["back_to_back_tilecraft_compiled_allocated_us"] = (time.perf_counter() - start) / 20000 * 1e6
    return result


def bench_compile(cfg) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TILECRAFT_CACHE_DIR"] = cache
        start = time.perf_counter()
        tilecraft.compile(tc_matmul.func(4096, 4096, 4096, *cfg, "bfloat16"), out_idx=[-1])
        cold = time.perf_counter() - start
        start = time.perf_counter()
        tilecraft.compile(tc_matmul.func(4096, 4096, 4096, *cfg, "bfloat16"), out_idx=[-1])
        warm = time.perf_counter() - start
    return {"cold_compile_s": cold, "warm_load_ms": warm * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="only the 4096 GEMMs and no config sweep")
    parser.add_argument("--json", default=None)
    parser.add_argument("--launch-only", action="store_true", help="only the launch, graph and launcher figures")
    args = parser.parse_args()
    results: dict = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
    }
    results["launch"] = bench_launch()
    print(f"launch: {results['launch']}", flush=True)
    results["graph"] = bench_graph_replay()
    print(f"graph: {results['graph']}", flush=True)
    results["launcher"] = bench_launcher_build()
    print(f"launcher: {results['launcher']}", flush=True)
    if args.launch_only:
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2, default=str))
        return
    for dtype in ("float16", "bfloat16"):
        configs = GEMM_CONFIGS[:1] if args.quick else GEMM_CONFIGS
        print(f"gemm {dtype}: choosing a config at 4096", flush=True)
        cfg = best_gemm_config(dtype, 4096, configs)
        for size in (4096,) if args.quick else (4096, 8192):
            results[f"gemm_{dtype}_{size}"] = bench_gemm(dtype, size, cfg)
            print(f"gemm {dtype} {size}: {results[f'gemm_{dtype}_{size}']}", flush=True)
    for name, fn in (
        ("add_f32", bench_add),
        ("softmax_f32", bench_softmax),
        ("rms_norm_bf16", bench_rms_norm),
    ):
        results[name] = fn()
        print(f"{name}: {results[name]}", flush=True)
    results["launch_after_benchmarks"] = bench_launch()  # the same, once the GPU has been busy
    print(f"launch_after_benchmarks: {results['launch_after_benchmarks']}", flush=True)
    results["compile"] = bench_compile(results["gemm_bfloat16_4096"]["config"])
    print(f"compile: {results['compile']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
