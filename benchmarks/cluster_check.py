"""Thread-block clusters and TMA multicast on sm_90a: correctness of every multicast form on a GPU.

    python benchmarks/cluster_check.py [--json out.json] [--jobs N]

GEMMs (TileLang's text, NN / NT / TN operand layouts, float16 and bfloat16) launched in clusters of 2
and 4 blocks along the N tiles (the blocks share A: multicast, switched on here) or the M tiles (they
share B), at sizes
that divide the tiles and ragged ones (the grid rounded up to whole clusters), with the warp-specialized
schedule (multicast) and with tl.disable_warp_specialized (clusters without multicast). Each output is
poisoned with NaN before the call and compared with torch's matmul of the same inputs. A dynamic-shape
kernel whose grid the cluster does not divide must be refused before launch. Exit status 1 on any wrong
result. Speed: benchmarks/gemm_sweep.py (its `cluster` configs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.hopper_check import TOLERANCE, inputs, prewarm  # noqa: E402
from benchmarks.hopper_check import build as hopper_gemm  # noqa: E402

TILES = [  # block_M, block_N, block_K, threads, stages
    (128, 128, 64, 128, 3),
    (128, 256, 64, 256, 3),
    (256, 128, 64, 256, 4),
]
SIZES = [(1024, 1024, 1024), (1000, 1032, 520), (520, 2056, 328)]
RAGGED_NO_TMA = (1000, 1030, 520)  # rows of 2060 bytes: B has no tensor map, the loop keeps cp.async
CLUSTERS = [(2, 1), (1, 2), (4, 1)]
LAYOUTS = ["NN", "NT", "TN"]
OFF = {"tl.disable_warp_specialized": True}
MULTICAST = {"tilecraft.cuda.tma_multicast": True}  # off by default (docs/cuda.md, "Thread-block clusters")


def build(m, n, k, tile, dtype, layout, cluster, dynamic=False, panel=0):
    """hopper_check's GEMM in clusters of `cluster` blocks, the grid rounded up to whole clusters (a
    dynamic M is left as it is, so that a size the cluster does not divide is refused at launch)."""
    return hopper_gemm(m, n, k, *tile, dtype, layout, cluster=cluster, panel=panel, dynamic_m=dynamic)


def specs() -> list[tuple]:
    out = []
    for size in SIZES:
        for tile in TILES:
            for cluster in CLUSTERS:
                for layout in LAYOUTS:
                    dtype = "float16" if layout != "TN" else "bfloat16"
                    out.append((size, tile, dtype, layout, cluster, False))
    # clusters without multicast (the ring schedule) and one more dtype per layout at the ragged size
    out += [(SIZES[1], TILES[1], "float16", lay, (2, 1), True) for lay in LAYOUTS]
    out += [(SIZES[1], TILES[2], "bfloat16", "NN", c, False) for c in CLUSTERS]
    out += [(RAGGED_NO_TMA, TILES[1], "float16", "NN", (2, 1), False)]
    # T.use_swizzle panels of whole clusters (3 and 4 cluster rows: the last panel of the ragged sizes
    # is partial), multicast through the renumbering
    out += [(size, TILES[2], "float16", lay, c, False, panel) for size in SIZES for lay in ("NN", "TN")
            for c in CLUSTERS[:2] for panel in (3, 4)]  # fmt: skip
    return out


def compile_one(spec):
    import tilecraft

    size, tile, dtype, layout, cluster, ring, *panel = spec
    func = build(*size, tile, dtype, layout, cluster, panel=panel[0] if panel else 0)
    return tilecraft.compile(func, target="cuda", pass_configs=OFF if ring else MULTICAST)


def run(spec) -> dict:
    import torch

    size, tile, dtype, layout, cluster, ring, *panel = spec
    row = {"size": size, "tile": tile, "dtype": dtype, "layout": layout, "cluster": cluster,
           "schedule": "ring" if ring else "specialized", "panel": panel[0] if panel else 0}  # fmt: skip
    kernel = compile_one(spec)
    source = kernel.get_kernel_source()
    row["multicast"] = "tc_tma_load_multicast<" in source
    a, b, op_a, op_b = inputs(size, dtype, layout)
    c = torch.full((size[0], size[1]), float("nan"), device="cuda", dtype=getattr(torch, dtype))
    kernel(a, b, c)
    torch.cuda.synchronize()
    ref = (op_a.double() @ op_b.double()).float()
    err = ((c.float() - ref).norm() / ref.norm()).item()
    row["rel_error"] = err
    if not err <= TOLERANCE[dtype]:  # NaN (an element never written) fails too
        row["error"] = f"wrong result: relative error {err:.2e}"
    return row


def refused_grid() -> dict:
    """A dynamic M whose tile count is odd, in clusters of 2 along M: refused before the launch."""
    import torch

    import tilecraft

    kernel = tilecraft.compile(
        build(0, 256, 128, TILES[0], "float16", "NN", (1, 2), dynamic=True), target="cuda"
    )
    a = torch.randn(384, 128, device="cuda", dtype=torch.float16)
    b = torch.randn(128, 256, device="cuda", dtype=torch.float16)
    c = torch.empty(384, 256, device="cuda", dtype=torch.float16)
    try:
        kernel(a, b, c)
    except Exception as err:
        ok = "cluster_dims" in str(err)
        return {
            "case": "odd grid refused",
            "message": str(err)[:300],
            **({} if ok else {"error": "unclear message"}),
        }
    return {"case": "odd grid refused", "error": "a grid of 3 blocks in clusters of 2 was launched"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=None)
    parser.add_argument("--jobs", type=int, default=max(1, min(14, (os.cpu_count() or 2) - 2)))
    args = parser.parse_args()
    cases = specs()
    errors = prewarm(cases, args.jobs, compile_one)
    rows = []
    for spec in cases:
        if spec in errors:
            rows.append({"spec": repr(spec), "error": errors[spec]})
        else:
            try:
                rows.append(run(spec))
            except Exception as err:  # a launch error is a result too
                rows.append({"spec": repr(spec), "error": f"{type(err).__name__}: {str(err)[:300]}"})
        r = rows[-1]
        print(f"{spec}: {r.get('error') or 'ok'} multicast={r.get('multicast')} err={r.get('rel_error', 0):.1e}",
              flush=True)  # fmt: skip
    rows.append(refused_grid())
    print(rows[-1], flush=True)
    bad = [r for r in rows if "error" in r]
    print(
        f"{len(rows) - len(bad)} of {len(rows)} correct; multicast in {sum(bool(r.get('multicast')) for r in rows)}"
    )
    path = args.json or (
        os.path.join(os.environ["OUT"], "cluster_check.json") if "OUT" in os.environ else None
    )
    if path:
        Path(path).write_text(json.dumps(rows, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
