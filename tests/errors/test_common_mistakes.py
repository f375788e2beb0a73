"""The error messages of the ten most common mistakes, as a user sees them, against snapshots.

Each case is a short script with one mistake, run as a user runs it (a subprocess on the CPU target).
What it prints after the traceback (the exception's type and message) must equal
`snapshots/<case>.txt`, with the script's path written `<script>` and the host's vector ISA
`-isa=<isa>`; the traceback itself may pass through one tilecraft frame, the entry point the script
called, and no other. `TILECRAFT_UPDATE_SNAPSHOTS=1` rewrites the snapshots from what the scripts print
(review the diff).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"

# The kernel every case calls or changes: C = A + B, on (M, N) float32 tensors.
PRELUDE = """
import numpy as np
import tilecraft
import tilecraft.language as T


@tilecraft.jit(out_idx=[-1])
def add(M, N, block_M=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            for i, j in T.Parallel(block_M, N):
                C[bx * block_M + i, j] = A[bx * block_M + i, j] + B[bx * block_M + i, j]

    return main


a = np.random.rand(256, 128).astype(np.float32)
b = np.random.rand(256, 128).astype(np.float32)
"""

CASES: dict[str, str] = {
    "wrong_dtype": "add(256, 128)(a.astype(np.float64), b)",
    "wrong_shape": "add(256, 128)(a[:200], b)",
    "wrong_rank": "add(256, 128)(a.reshape(-1), b)",
    "non_contiguous": "add(256, 128)(a, b.T.copy().T)",
    "missing_argument": "add(256, 128)(a)",
    "arrays_to_the_factory": "add(a, b)",
    "out_idx_out_of_range": """
        @tilecraft.jit(out_idx=[3])
        def scale(N):
            @T.prim_func
            def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
                with T.Kernel(1, threads=128) as bx:
                    for i in T.Parallel(N):
                        Y[i] = X[i] * 2.0

            return main

        scale(128)
    """,
    "copy_of_mismatched_shapes": """
        @tilecraft.jit(out_idx=[-1])
        def copy_tile(N):
            @T.prim_func
            def main(X: T.Tensor((N, N), "float32"), Y: T.Tensor((N, N), "float32")):
                with T.Kernel(1, threads=128) as bx:
                    tile = T.alloc_shared((32, 32), "float32")
                    T.copy(X[0:32, 0:16], tile)
                    T.copy(tile, Y[0, 0])

            return main

        copy_tile(64)
    """,
    "unknown_target": "tilecraft.compile(add.get_tir(256, 128), out_idx=[-1], target='cuad')",
    "missing_toolchain": "add(256, 128)",  # run with TILECRAFT_CC naming no compiler
}
ENV = {"missing_toolchain": {"TILECRAFT_CC": "/nonexistent/bin/cc", "TILECRAFT_DISABLE_CACHE": "1"}}


def run_case(name: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / f"{name}.py"
    script.write_text(PRELUDE + "\n" + textwrap.dedent(CASES[name]).strip() + "\n")
    env = dict(os.environ, TILECRAFT_TARGET="cpu", **ENV.get(name, {}))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    return subprocess.run(
        [sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def split_stderr(stderr: str) -> tuple[list[str], str]:
    """(the traceback's frame files, what follows the traceback)."""
    lines = stderr.rstrip("\n").splitlines()
    assert lines and lines[0] == "Traceback (most recent call last):", stderr
    frames = [m.group(1) for m in (re.match(r'  File "([^"]+)", line \d+', line) for line in lines) if m]
    last_frame = max(i for i, line in enumerate(lines) if line.startswith('  File "'))
    # The frame's source line and its carets are indented; the exception starts at column 0.
    start = next(i for i in range(last_frame + 1, len(lines)) if not lines[i].startswith(" "))
    return frames, "\n".join(lines[start:]) + "\n"


def normalize(text: str, script_dir: Path) -> str:
    text = text.replace(str(script_dir) + os.sep, "<script>/")
    return re.sub(r"-isa=\S+", "-isa=<isa>", text)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_message_matches_its_snapshot(name: str, tmp_path: Path):
    done = run_case(name, tmp_path)
    assert done.returncode == 1, f"the script did not fail as expected:\n{done.stdout}\n{done.stderr}"
    frames, message = split_stderr(done.stderr)
    ours = [f for f in frames if Path(f).resolve().is_relative_to(ROOT / "tilecraft")]
    assert len(ours) <= 1, f"tilecraft frames in the traceback: {ours}\n{done.stderr}"
    message = normalize(message, tmp_path)
    snapshot = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("TILECRAFT_UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(message)
    assert snapshot.exists(), f"no snapshot {snapshot.name}; this case prints:\n{message}"
    assert message == snapshot.read_text(), f"{name}: the message changed:\n{message}"


def test_every_snapshot_has_a_case():
    assert {p.stem for p in SNAPSHOTS.glob("*.txt")} == set(CASES)
