"""Per-kernel GPU time of one TileLang example function, under TileLang or under tilecraft.

A regression case reports one latency for everything its function launches (a split kernel and its
combine kernel, say). This records the function's launches with torch's profiler (CUPTI) and prints
each kernel's count and time, so two compilers' figures can be compared kernel by kernel:

    PYTHONPATH=<site with tilelang> python benchmarks/kernel_breakdown.py EXAMPLE.py FUNC [k=v ...]
    python -m tilecraft.compat benchmarks/kernel_breakdown.py EXAMPLE.py FUNC [k=v ...]

FUNC is called with the k=v keywords (Python literals) once to compile and warm up, then under the
profiler. Needs a CUDA GPU and torch.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path


def _load(path: Path):
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    import torch
    from torch.profiler import ProfilerActivity, profile

    path, name, *pairs = argv
    kwargs = {k: ast.literal_eval(v) for k, v in (p.split("=", 1) for p in pairs)}
    func = getattr(_load(Path(path)), name)
    func(**kwargs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        func(**kwargs)
        torch.cuda.synchronize()
    rows = [e for e in prof.key_averages() if e.device_type.name == "CUDA" and e.count]
    rows.sort(key=lambda e: -e.self_device_time_total)
    print(f"{'kernel':60s} {'count':>6s} {'total us':>10s} {'mean us':>9s}")
    for e in rows[:15]:
        total = e.self_device_time_total
        print(f"{e.key[:60]:60s} {e.count:6d} {total:10.1f} {total / e.count:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
