"""Compile workers that cannot start are reported with the cause and the fix, not as N crashes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

UNGUARDED = textwrap.dedent(
    """
    from tilecraft.autotuner import AutoTuner
    from tests.autotuner.kernels import add_factory

    # No `if __name__ == "__main__":` guard: every spawned worker imports this script and tunes again.
    AutoTuner.from_kernel(add_factory(), [dict(block=64), dict(block=32)]).set_compile_args(
        out_idx=[-1], target="c").run(warmup=1, rep=1, workers=1, retune=True)
    """
)


def test_a_script_that_tunes_on_import_gets_the_main_guard_advice(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)  # fmt: skip
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "WorkerStartError" in last and "if __name__ == '__main__':" in last and "workers=0" in last
