"""Ablation: element-wise kernels with and without the 16-byte alignment assumption on buffers.

python benchmarks/ablate_alignment.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tilecraft.cuda.codegen as codegen  # noqa: E402
from benchmarks import cuda as bench  # noqa: E402


def main() -> None:
    for flag in (True, False):
        codegen.ASSUME_ALIGNED = flag
        for jit in (bench.tc_add, bench.tc_rms_norm, bench.tc_softmax):
            jit._kernels.clear()
        print(f"assume aligned={flag}: add {bench.bench_add()}", flush=True)
        print(f"assume aligned={flag}: rms {bench.bench_rms_norm()}", flush=True)
        print(f"assume aligned={flag}: softmax {bench.bench_softmax()}", flush=True)


if __name__ == "__main__":
    main()
