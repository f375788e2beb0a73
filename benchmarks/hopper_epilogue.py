"""The epilogue through shared memory on a Hopper GPU: TMA stores (with stmatrix into a 128-byte swizzled
staging tile) against the threads' own stores, in TileLang-style kernels that stage their output through
a shared tile (`T.copy(C_local, C_shared); T.copy(C_shared, C[...])`).

    python benchmarks/hopper_epilogue.py [--json out.json] [--quick] [--jobs N]
    python benchmarks/hopper_epilogue.py --dry [--jobs N]     (no GPU: lower and compile with nvcc only)

Each case runs with `tilecraft.cuda.tma_store` on ("on", the default: TMA store + staging swizzle +
stmatrix) and off ("off": the epilogue as before), and the source is checked to be what the variant
says (TMA stores in "on" where the output's rows are a multiple of 16 bytes, none in "off"):

- GEMM C = A @ B (float32 accumulation) at 4096^3 and 8192^3, float16 and bfloat16, tiles 128x256x64
  and 256x128x64 (256 threads, 3 stages: the staging tile and 4 stages of these tiles do not fit in
  227 KiB), and the T.Persistent form of 256x128x64 (one block per SM); torch.matmul is the peer.
- Ragged GEMMs, float16, 128x256x64: 1000x1032x520 (ragged in M and N, through TMA stores that the
  hardware clips at the edges) and 1000x1030x520 (rows of 2060 bytes: no tensor map, both variants store
  with the threads). C is the head of a larger buffer whose tail holds a sentinel, which must survive.
- Flash attention forward (benchmarks/hopper_attention.py's kernel: TileLang's example_mha_fwd_bhsd,
  whose O_shared tile is the staging tile), B8 H16 S4096 D128 float16, causal and not, against SDPA.

GEMMs are checked by the relative (Frobenius) error against torch's float32 matmul, attention by the max
abs error against SDPA; times are CUDA-event medians taken in alternating rounds (benchmarks/cuda.py's
side_by_side_ms). All kernels are compiled first in parallel worker processes (hopper_check.prewarm),
which fill tilecraft's disk cache. The table gives TFLOP/s and the ratios on/off and on/peer; the JSON
goes to --json (else $OUT/hopper_epilogue.json when $OUT is set, else ./hopper_epilogue.json). The exit
status is 1 if any result is wrong, any case fails to compile or run, or a variant's source is not what
it should be.
"""

# No `from __future__ import annotations`: the kernels' parameter annotations name variables of the
# enclosing functions, which string annotations would not capture.
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.hopper_check import prewarm  # noqa: E402

SWITCH = "tilecraft.cuda.tma_store"
VARIANTS = {"on": {}, "off": {SWITCH: False}}
GEMM_SIZES = [(4096, 4096, 4096), (8192, 8192, 8192)]
RAGGED = [(1000, 1032, 520), (1000, 1030, 520)]
CONFIGS = [  # block_M, block_N, block_K, threads, stages, persistent
    (128, 256, 64, 256, 3, False),
    (256, 128, 64, 256, 3, False),
    (256, 128, 64, 256, 3, True),
    # the staging tile takes the stage tiles' bytes after the loop (warp_specialize._split_scopes)
    (256, 128, 64, 256, 4, False),
    (128, 256, 64, 256, 4, False),
]
RAGGED_CONFIG = CONFIGS[0]
DTYPES = ("float16", "bfloat16")
ATTENTION = (8, 16, 4096)
TOLERANCE = {"float16": 5e-3, "bfloat16": 2e-2}
ATTENTION_TOLERANCE = 2e-2  # max abs error of float16 outputs of magnitude < 1
SENTINEL_ELEMS = 4096
DRY_TARGET = "cuda -arch=sm_90a -sm_count=132"
DRY_SMS = 132


def gemm(m, n, k, block_m, block_n, block_k, threads, stages, persistent, dtype, sms):
    """TileLang's examples/gemm/example_gemm.py with its C_shared epilogue (or the T.Persistent form of
    example_gemm_persistent.py over `sms` blocks): C = A @ B, float32 accumulation."""
    import tilecraft.language as T

    if persistent:

        @T.prim_func
        def persistent_gemm(
            A: T.Tensor((m, k), dtype), B: T.Tensor((k, n), dtype), C: T.Tensor((m, n), dtype)
        ):
            with T.Kernel(sms, threads=threads) as block:
                A_s = T.alloc_shared((block_m, block_k), dtype)
                B_s = T.alloc_shared((block_k, block_n), dtype)
                C_s = T.alloc_shared((block_m, block_n), dtype)
                C_l = T.alloc_fragment((block_m, block_n), "float32")
                for bx, by in T.Persistent([T.ceildiv(m, block_m), T.ceildiv(n, block_n)], sms, block):
                    T.clear(C_l)
                    for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=stages):
                        T.copy(A[bx * block_m, ko * block_k], A_s)
                        T.copy(B[ko * block_k, by * block_n], B_s)
                        T.gemm(A_s, B_s, C_l)
                    T.copy(C_l, C_s)
                    T.copy(C_s, C[bx * block_m, by * block_n])

        return persistent_gemm

    @T.prim_func
    def staged_gemm(A: T.Tensor((m, k), dtype), B: T.Tensor((k, n), dtype), C: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_m, block_k), dtype)
            B_s = T.alloc_shared((block_k, block_n), dtype)
            C_s = T.alloc_shared((block_m, block_n), dtype)
            C_l = T.alloc_fragment((block_m, block_n), "float32")
            T.use_swizzle(panel_size=8)
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=stages):
                T.copy(A[by * block_m, ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block_n], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C_s)
            T.copy(C_s, C[by * block_m, bx * block_n])

    return staged_gemm


# ---------------------------------------------------------------- the cases


def specs(quick: bool = False) -> list[tuple]:
    """Every (kind, shape, config, dtype, variant) to compile and run."""
    sizes = GEMM_SIZES[:1] if quick else GEMM_SIZES
    dtypes = DTYPES[:1] if quick else DTYPES
    out = [("gemm", s, c, d, v) for s in sizes for d in dtypes for c in CONFIGS for v in VARIANTS]
    out += [("gemm", s, RAGGED_CONFIG, "float16", v) for s in RAGGED for v in VARIANTS]
    out += [("attention", ATTENTION, causal, "float16", v) for causal in (False, True) for v in VARIANTS]
    return out


def build(spec, sms: int):
    kind, shape, cfg, dtype, _ = spec
    if kind == "gemm":
        return gemm(*shape, *cfg, dtype, sms)
    from benchmarks.hopper_attention import build as attention

    return attention(*shape, cfg)


def expects_tma_store(spec) -> bool:
    """The "on" variant stores through TMA where the output's rows are a multiple of 16 bytes."""
    kind, shape, _, _, variant = spec
    row = shape[1] if kind == "gemm" else 128  # attention's rows are D = 128 elements
    return variant == "on" and (row * 2) % 16 == 0


def source_problem(spec, source: str) -> str | None:
    """Why the kernel's source is not what the variant says (None: it is)."""
    kernel = source[source.find('extern "C"') :]
    stores = "tc_tma_store<" in kernel
    if stores != expects_tma_store(spec):
        return f"the source {'has' if stores else 'has no'} TMA store, against the variant's expectation"
    if spec[4] == "off" and "tc_stmatrix_x" in kernel:
        return "the 'off' variant uses stmatrix"
    return None


def compile_spec(spec):
    """Worker and main process: the compiled kernel of `spec` on this machine's GPU."""
    import tilecraft

    sms = _sms()
    kernel = tilecraft.compile(build(spec, sms), target="cuda", pass_configs=VARIANTS[spec[4]] or None)
    problem = source_problem(spec, kernel.get_kernel_source())
    if problem is not None:
        raise RuntimeError(problem)
    return kernel


def _sms() -> int:
    import torch

    return torch.cuda.get_device_properties(0).multi_processor_count


# ---------------------------------------------------------------- dry mode (no GPU)


def dry_one(spec) -> str | None:
    """Lower `spec` for sm_90a and compile it with nvcc; the error, or None."""
    import tilecraft

    art = tilecraft.lower(build(spec, DRY_SMS), target=DRY_TARGET, pass_configs=VARIANTS[spec[4]] or None)
    source = art.device_sources["cuda-source"]
    problem = source_problem(spec, source)
    if problem is not None:
        return problem
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cu"
        path.write_text(source)
        cmd = ["nvcc", "-arch=sm_90a", "-cubin", "-O3", "-o", str(Path(tmp) / "k.cubin"), str(path)]
        done = subprocess.run(cmd, capture_output=True, text=True)
    return None if done.returncode == 0 else f"nvcc failed: {done.stderr[-2000:]}"


def _dry_worker(chunk):
    out = []
    for spec in chunk:
        try:
            out.append((spec, dry_one(spec)))
        except Exception as err:  # reported by the main process
            out.append((spec, f"{type(err).__name__}: {err}"))
    return out


def dry(all_specs, jobs: int) -> int:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    chunks = [all_specs[i::jobs] for i in range(jobs)]
    failures = 0
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for result in pool.map(_dry_worker, [c for c in chunks if c]):
            for spec, err in result:
                failures += err is not None
                print(f"{label(spec):>58}: {'ok' if err is None else 'FAIL ' + err}", flush=True)
    print(f"\n{len(all_specs) - failures} of {len(all_specs)} kernels lowered and compiled for sm_90a")
    return 1 if failures else 0


# ---------------------------------------------------------------- measuring


def gemm_group(shape, cfg, dtype, errors) -> list[dict]:
    """Both variants and torch.matmul on shared inputs: correctness (with the sentinel) and time."""
    import torch

    from benchmarks.cuda import rel_error, side_by_side_ms

    m, n, k = shape
    tdt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
    a = torch.randn((m, k), device="cuda", dtype=tdt, generator=gen)
    b = torch.randn((k, n), device="cuda", dtype=tdt, generator=gen)
    ref = a.float() @ b.float()
    sentinel = torch.tensor(-12345.0, dtype=tdt, device="cuda")
    rows, calls = [], {}
    for variant in VARIANTS:
        spec = ("gemm", shape, cfg, dtype, variant)
        row = _row(spec)
        rows.append(row)
        if spec in errors:
            row["error"] = "compile: " + errors[spec]
            continue
        try:
            kernel = compile_spec(spec)
            buf = torch.full((m * n + SENTINEL_ELEMS,), float(sentinel), dtype=tdt, device="cuda")
            c = buf[: m * n].view(m, n)
            kernel(a, b, c)
            torch.cuda.synchronize()
            row["error_value"] = rel_error(c.float(), ref)
            tail_ok = bool((buf[m * n :] == sentinel).all())
            row["ok"] = row["error_value"] <= TOLERANCE[dtype] and tail_ok
            if not tail_ok:
                row["error"] = "the kernel wrote past the end of C"
            elif not row["ok"]:
                row["error"] = f"wrong result: relative error {row['error_value']:.3g}"
            calls[variant] = lambda kernel=kernel, c=c: kernel(a, b, c)
        except Exception as err:
            row["error"] = f"{type(err).__name__}: {err}"
            traceback.print_exc(limit=3)
    good = [v for v in VARIANTS if v in calls and next(r for r in rows if r["variant"] == v)["ok"]]
    if shape in GEMM_SIZES and good:
        times = side_by_side_ms(*(calls[v] for v in good), lambda: torch.matmul(a, b))
        flops = 2.0 * m * n * k
        peer = flops / times[-1] / 1e9
        for v, ms in zip(good, times):
            row = next(r for r in rows if r["variant"] == v)
            row["tflops"], row["peer_tflops"] = flops / ms / 1e9, peer
    return rows


def attention_group(causal: bool, errors) -> list[dict]:
    import torch
    import torch.nn.functional as F

    from benchmarks.cuda import side_by_side_ms

    batch, heads, seq = ATTENTION
    gen = torch.Generator(device="cuda").manual_seed(seq)
    qkv = [torch.randn((batch, heads, seq, 128), device="cuda", dtype=torch.float16, generator=gen)
           for _ in range(3)]  # fmt: skip
    ref = F.scaled_dot_product_attention(*qkv, is_causal=causal)
    rows, calls = [], {}
    for variant in VARIANTS:
        spec = ("attention", ATTENTION, causal, "float16", variant)
        row = _row(spec)
        rows.append(row)
        if spec in errors:
            row["error"] = "compile: " + errors[spec]
            continue
        try:
            kernel = compile_spec(spec)
            out = torch.empty_like(qkv[0])
            kernel(*qkv, out)
            torch.cuda.synchronize()
            row["error_value"] = float((out.float() - ref.float()).abs().max())
            row["ok"] = row["error_value"] < ATTENTION_TOLERANCE  # NaN fails too
            if not row["ok"]:
                row["error"] = f"wrong result: max abs error {row['error_value']:.3g}"
            else:
                calls[variant] = lambda kernel=kernel, out=out: kernel(*qkv, out)
        except Exception as err:
            row["error"] = f"{type(err).__name__}: {err}"
            traceback.print_exc(limit=3)
    good = [v for v in VARIANTS if v in calls]
    if good:
        times = side_by_side_ms(
            *(calls[v] for v in good), lambda: F.scaled_dot_product_attention(*qkv, is_causal=causal)
        )
        flops = 4.0 * batch * heads * seq * seq * 128 / (2 if causal else 1)
        for v, ms in zip(good, times):
            row = next(r for r in rows if r["variant"] == v)
            row["tflops"], row["peer_tflops"] = flops / ms / 1e9, flops / times[-1] / 1e9
    return rows


def _row(spec) -> dict:
    kind, shape, cfg, dtype, variant = spec
    return {"kind": kind, "shape": list(shape), "config": cfg if kind == "attention" else list(cfg),
            "dtype": dtype, "variant": variant, "label": label(spec), "ok": False, "error_value": None,
            "tflops": None, "peer_tflops": None, "error": None}  # fmt: skip


def label(spec) -> str:
    kind, shape, cfg, dtype, variant = spec
    if kind == "attention":
        return f"attention B{shape[0]}H{shape[1]}S{shape[2]} {'causal' if cfg else 'full'} {variant}"
    bm, bn, bk, threads, stages, persistent = cfg
    tiles = f"{bm}x{bn}x{bk}/{threads}t/{stages}s" + ("/persistent" if persistent else "")
    return f"gemm {'x'.join(map(str, shape))} {dtype} {tiles} {variant}"


def report(rows: list[dict]) -> None:
    print("\n# TFLOP/s: on (TMA store) / off / peer (torch.matmul or SDPA); ratios on:off, on:peer")
    groups: dict[str, dict] = {}
    for r in rows:
        groups.setdefault(r["label"].rsplit(" ", 1)[0], {})[r["variant"]] = r
    for name, by in groups.items():
        on, off = (by.get(v, {}).get("tflops") or 0 for v in VARIANTS)
        peer = next((r["peer_tflops"] for r in by.values() if r.get("peer_tflops")), 0) or 0
        flag = "" if all(r["ok"] for r in by.values()) else "  <-- FAILURE"
        timed = f"{on:7.1f} / {off:7.1f} / {peer:7.1f}  ({on / off if off else 0:.3f}x, {on / peer if peer else 0:.3f}x)"
        print(f"{name:>58}: {timed if peer else 'correctness only'}{flag}")
    failures = [r for r in rows if not r["ok"]]
    for r in failures:
        print(f"FAILED {r['label']}: {r['error']}")
    print(f"\n{len(rows) - len(failures)} of {len(rows)} results correct")


def measure(all_specs, jobs: int, out_path: Path) -> int:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    began = time.perf_counter()
    errors = prewarm(all_specs, jobs, compile_spec)
    print(f"compiled {len(all_specs)} kernels in {time.perf_counter() - began:.1f} s ({len(errors)} failed)")
    rows: list[dict] = []
    gemms = dict.fromkeys((s[1], s[2], s[3]) for s in all_specs if s[0] == "gemm")
    for shape, cfg, dtype in gemms:
        rows += gemm_group(shape, cfg, dtype, errors)
        for r in rows[-len(VARIANTS) :]:
            print(_line(r), flush=True)
        torch.cuda.empty_cache()
    for causal in dict.fromkeys(s[2] for s in all_specs if s[0] == "attention"):
        rows += attention_group(causal, errors)
        for r in rows[-len(VARIANTS) :]:
            print(_line(r), flush=True)
    report(rows)
    print(f"({time.perf_counter() - began:.0f} s)")
    out_path.write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    print(f"json: {out_path}")
    return 0 if rows and all(r["ok"] for r in rows) else 1


def _line(r: dict) -> str:
    tf = f"{r['tflops']:7.1f} TFLOP/s" if r["tflops"] else "      -        "
    err = f"{r['error_value']:.2e}" if r["error_value"] is not None else "-"
    return f"{r['label']:>64} {tf}  err {err}  {'ok' if r['ok'] else 'FAIL ' + str(r['error'])}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=None)
    parser.add_argument("--dry", action="store_true", help="no GPU: lower and compile every kernel with nvcc")
    parser.add_argument(
        "--quick", action="store_true", help="4096^3 float16 GEMMs, the ragged ones, attention"
    )
    parser.add_argument("--jobs", type=int, default=max(1, min(14, (os.cpu_count() or 2) - 2)))
    args = parser.parse_args()
    all_specs = specs(args.quick)
    if args.dry:
        return dry(all_specs, args.jobs)
    default = (
        Path(os.environ["OUT"]) / "hopper_epilogue.json"
        if os.environ.get("OUT")
        else Path("hopper_epilogue.json")
    )
    return measure(all_specs, args.jobs, Path(args.json) if args.json else default)


if __name__ == "__main__":
    sys.exit(main())
