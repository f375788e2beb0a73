"""The CuTe DSL variant on a GPU machine that does not have the CuTe DSL (docs/cutedsl.md, "Running on a
GPU machine without the DSL").

    python benchmarks/cutedsl.py prebuild [DIR]   # here, with the DSL (pip install 'tilecraft[cutedsl]'), no GPU
    python benchmarks/cutedsl.py device [DIR]     # on the GPU (sm_90a), without the DSL

`prebuild` lowers every conformance kernel and the GEMM benchmark kernels for `cuda -arch=sm_90a
-backend=cutedsl`, compiles them with the CuTe DSL to cubins (no GPU needed) and exports each
(`CachedExecutionBackend.export`: the cubin, the generated Python, the artifact as JSON) to DIR
(default benchmarks/results/cutedsl-exports, a few MB: small enough to travel with a device call).
`device` loads each export with `tilecraft.load` (no compiler), runs the conformance kernels against
their float64 references, and times the float16 GEMM at 4096^3 against the cuda backend (compiled
there by NVRTC/nvcc from the same kernel text) and cuBLAS (torch.matmul). Results go to stdout and, as
JSON, to $OUT (or DIR).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
# benchmarks/cuda.py would shadow NVIDIA's `cuda` package (cuda-python, which the DSL and the driver import)
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

import numpy as np  # noqa: E402

import tilecraft  # noqa: E402
import tilecraft.language as T  # noqa: E402

TARGET = "cuda -arch=sm_90a -backend=cutedsl"
DEFAULT_DIR = HERE / "results" / "cutedsl-exports"
GEMM_SIZE = 4096
# block_M, block_N, block_K, threads, stages (the mma.sync configurations of benchmarks/cuda.py)
GEMM_CONFIGS = [
    (128, 128, 32, 128, 3),
    (128, 128, 32, 128, 4),
    (128, 256, 32, 256, 3),
    (128, 128, 64, 128, 3),
]


def matmul(M, N, K, block_M, block_N, block_K, threads, stages, dtype="float16"):
    """benchmarks/cuda.py's GEMM, as the same kernel text for both backends."""

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
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

    return gemm


def gemm_name(cfg) -> str:
    return "gemm_f16_4096_" + "x".join(map(str, cfg))


# ---------------------------------------------------------------- prebuild (with the DSL, no GPU)


def export(func, ctx, path: Path) -> None:
    from tilecraft.jit.lower import lower_uncached

    artifact = lower_uncached(func, ctx)
    backend = ctx.execution_backend()
    backend.export(backend.build(artifact, ctx), path)


def prebuild(out: Path) -> int:
    from tilecraft.backend import create_backend_context
    from tilecraft.errors import LoweringError
    from tilecraft.testing import conformance as kit

    ctx = create_backend_context(TARGET, execution_backend="cutedsl", require_available=False)
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, dict] = {}
    jobs = [(c.name, c.build) for c in kit.CASES] + [
        (gemm_name(c), lambda c=c: matmul(GEMM_SIZE, GEMM_SIZE, GEMM_SIZE, *c)) for c in GEMM_CONFIGS
    ]
    for name, build in jobs:
        start = time.perf_counter()
        try:
            export(build(), ctx, out / name)
            index[name] = {"status": "exported"}
        except LoweringError as err:
            index[name] = {"status": "refused" if err.unsupported in ctx.backend.unsupported else "failed",
                           "reason": str(err).splitlines()[0], "limit": err.unsupported}  # fmt: skip
        except Exception as err:  # noqa: BLE001 - recorded, the next kernel is built
            index[name] = {"status": "failed", "reason": f"{type(err).__name__}: {str(err).splitlines()[0]}"}
        print(
            f"{name}: {index[name]['status']} ({time.perf_counter() - start:.1f} s) {index[name].get('reason', '')}",
            flush=True,
        )
    (out / "index.json").write_text(json.dumps({"target": TARGET, "kernels": index}, indent=1))
    failed = [n for n, v in index.items() if v["status"] == "failed"]
    print(f"{sum(v['status'] == 'exported' for v in index.values())} exported, "
          f"{sum(v['status'] == 'refused' for v in index.values())} refused (declared limits), {len(failed)} failed")  # fmt: skip
    return 1 if failed else 0


# ---------------------------------------------------------------- device (the GPU, without the DSL)


def run_conformance(directory: Path, index: dict) -> dict:
    from tilecraft.backend.execution_registry import get_spec, implementation
    from tilecraft.testing import conformance as kit
    from tilecraft.testing.conformance.runner import rel_error

    backend = implementation(get_spec("cutedsl"))
    results = {}
    for case in kit.CASES:
        entry = index.get(case.name, {"status": "missing"})
        if entry["status"] != "exported":
            results[case.name] = {"verdict": "skip", "reason": entry.get("reason", entry["status"])}
            continue
        try:
            kernel = tilecraft.load(directory / case.name)
            rng = np.random.default_rng(zlib.crc32(case.name.encode()))
            arrays = case.inputs(rng)
            expected = case.reference([a.copy() for a in arrays])
            device = [backend.to_device(a) for a in arrays]
            kernel(*device)
            errors = {i: rel_error(backend.to_host(device[i]), ref) for i, ref in expected.items()}
            ok = all(e <= case.tol for e in errors.values())
            worst = max(errors.values()) if errors else 0.0
            results[case.name] = {"verdict": "pass" if ok else "fail", "rel_error": worst, "tol": case.tol}
        except Exception as err:  # noqa: BLE001 - recorded, the next kernel runs
            results[case.name] = {"verdict": "fail", "reason": f"{type(err).__name__}: {err}",
                                  "trace": traceback.format_exc()[-2000:]}  # fmt: skip
        r = results[case.name]
        print(f"{case.name}: {r['verdict']} {r.get('rel_error', '')} {r.get('reason', '')[:300]}", flush=True)
    return results


def time_ms(fn, warmup: int = 10, rounds: int = 50) -> float:
    """Median of CUDA-event times of `rounds` calls (torch's events, the L2 not flushed: 4096^3 is compute bound)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def run_gemm(directory: Path, index: dict) -> dict:
    import torch

    n = GEMM_SIZE
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    ref = a.double() @ b.double()
    flops = 2 * n**3

    def checked(fn, what):
        c = torch.empty(n, n, device="cuda", dtype=torch.float16)
        fn(c)
        err = float((c.double() - ref).norm() / ref.norm())
        if not err <= 2e-2:
            raise AssertionError(f"{what}: relative error {err:.2e}")
        return c, err

    out = {"size": n, "cublas_tflops": None, "cutedsl": {}, "cuda": {}}
    out["cublas_tflops"] = flops / time_ms(lambda: a @ b) / 1e9
    for cfg in GEMM_CONFIGS:
        name = gemm_name(cfg)
        makers = (("cutedsl", lambda name=name: tilecraft.load(directory / name)),
                  ("cuda", lambda cfg=cfg: tilecraft.compile(matmul(n, n, n, *cfg), target="cuda")))  # fmt: skip
        for label, make in makers:
            if label == "cutedsl" and index.get(name, {}).get("status") != "exported":
                out[label][name] = {"error": index.get(name, {}).get("reason", "not exported")}
                continue
            try:
                kernel = make()
                c, err = checked(lambda c, k=kernel: k(a, b, c), f"{label} {name}")
                ms = time_ms(lambda k=kernel, c=c: k(a, b, c))
                out[label][name] = {"tflops": flops / ms / 1e9, "ms": ms, "rel_error": err}
            except Exception as err:  # noqa: BLE001 - recorded, the next configuration runs
                out[label][name] = {"error": f"{type(err).__name__}: {str(err)[:500]}"}
            print(f"gemm {label} {cfg}: {out[label][name]}", flush=True)
    out["cublas_tflops_after"] = flops / time_ms(lambda: a @ b) / 1e9
    return out


def device(directory: Path) -> int:
    import torch

    index = json.loads((directory / "index.json").read_text())["kernels"]
    print(
        f"device: {torch.cuda.get_device_name()}; tilecraft {tilecraft.__version__}; exports from {directory}",
        flush=True,
    )
    results = {"device": torch.cuda.get_device_name(), "conformance": run_conformance(directory, index)}
    results["gemm"] = run_gemm(directory, index)
    verdicts = [r["verdict"] for r in results["conformance"].values()]
    summary = {v: verdicts.count(v) for v in ("pass", "fail", "skip")}
    results["summary"] = summary
    g = results["gemm"]
    best = {k: max((v.get("tflops", 0) for v in g[k].values()), default=0) for k in ("cutedsl", "cuda")}
    print(
        f"conformance on {results['device']}: {summary['pass']} passed, {summary['fail']} failed, {summary['skip']} skipped"
    )
    print(f"GEMM f16 {GEMM_SIZE}^3 TFLOP/s: cutedsl {best['cutedsl']:.0f}, cuda {best['cuda']:.0f}, "
          f"cuBLAS {g['cublas_tflops']:.0f} / {g['cublas_tflops_after']:.0f}")  # fmt: skip
    dest = Path(os.environ.get("OUT", directory))
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "cutedsl_device.json").write_text(json.dumps(results, indent=1))
    return 1 if summary["fail"] else 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("prebuild", "device"):
        print(__doc__)
        return 2
    directory = Path(argv[1]) if len(argv) > 1 else DEFAULT_DIR
    return prebuild(directory) if argv[0] == "prebuild" else device(directory)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
