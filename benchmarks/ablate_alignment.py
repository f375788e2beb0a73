"""Ablation: element-wise kernels with and without the 16-byte alignment assumption on buffers.

python benchmarks/ablate_alignment.py

The assumption is the CUDA backend's pass config `tilecraft.cuda.assume_aligned` (default True), so
each setting is lowered (and cached) on its own.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import cuda as bench  # noqa: E402
from tilecraft.cuda.storage import ASSUME_ALIGNED  # noqa: E402

KERNELS = ("tc_add", "tc_rms_norm", "tc_softmax")


def main() -> None:
    for flag in (True, False):
        for name in KERNELS:
            jit = getattr(bench, name)
            jit.options["pass_configs"] = {**(jit.options.get("pass_configs") or {}), ASSUME_ALIGNED: flag}
            jit._kernels.clear()
        print(f"assume aligned={flag}: add {bench.bench_add()}", flush=True)
        print(f"assume aligned={flag}: rms {bench.bench_rms_norm()}", flush=True)
        print(f"assume aligned={flag}: softmax {bench.bench_softmax()}", flush=True)


if __name__ == "__main__":
    main()
