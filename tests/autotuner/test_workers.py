"""Compile workers and plain scripts: a script that tunes at its top level, without `if __name__ ==
"__main__":` (as TileLang's examples often do), tunes in worker processes all the same; workers that
cannot start for another reason are reported once, briefly, with the cause and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tilecraft.autotuner import main_module

ROOT = Path(__file__).resolve().parents[2]

PLAIN = textwrap.dedent(
    """
    import json
    import numpy as np
    from tilecraft.autotuner import AutoTuner
    from tests.autotuner.kernels import add_factory

    def reference(A, B):  # defined in the script: the workers, started without it, cannot load it
        return 2 * A + B

    # No `if __name__ == "__main__":` guard: a spawned worker importing this script would tune again.
    result = (
        AutoTuner.from_kernel(add_factory(), [dict(block=64), dict(block=32), dict(block=16)])
        .set_compile_args(out_idx=[-1], target="c")
        .set_profile_args(ref_prog=reference)
        .run(warmup=1, rep=2, workers=2, retune=True)
    )
    a, b = np.random.default_rng(0).standard_normal((2, 256)).astype(np.float32)
    np.testing.assert_allclose(result.kernel(a, b), 2 * a + b, rtol=1e-6)
    print(json.dumps(dict(statuses=[c.status for c in result.candidates], config=result.config)))
    """
)

TILELANG_PLAIN = textwrap.dedent(
    """
    import tilelang
    import tilelang.language as T
    from tilelang.autotuner import autotune

    @autotune(configs=[{"block": 64}, {"block": 128}], warmup=1, rep=2)
    @tilelang.jit(out_idx=[-1], target="c")
    def add(N, block=64):
        @T.prim_func
        def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), C: T.Tensor((N,), T.float32)):
            with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
                for i in T.Parallel(block):
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
        return main

    kernel = add(1000)
    print("tuned", kernel.config)
    """
)

# Guarded, but its top level (run again by every worker that imports it) fails outside the tuning process.
UNIMPORTABLE = textwrap.dedent(
    """
    from tilecraft.autotuner import AutoTuner
    from tests.autotuner.kernels import add_factory

    if __name__ == "__mp_main__":  # how a spawned process imports the main script
        raise RuntimeError("this script cannot be imported by a worker process")

    if __name__ == "__main__":
        AutoTuner.from_kernel(add_factory(), [dict(block=64), dict(block=32)]).set_compile_args(
            out_idx=[-1], target="c").run(warmup=1, rep=1, workers=2, retune=True)
    """
)


def run(tmp_path, text: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(text)
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "TILECRAFT_VERBOSE": "1", **env}
    return subprocess.run([sys.executable, *args, str(script)], capture_output=True, text=True, env=environ,
                          cwd=ROOT, timeout=300)  # fmt: skip


def test_a_plain_script_tunes_in_worker_processes(tmp_path):
    done = run(tmp_path, PLAIN)
    assert done.returncode == 0, done.stderr
    assert '"statuses": ["ok", "ok", "ok"]' in done.stdout
    assert "compiling 3 candidates (local-process)" in done.stderr
    assert "measured in the tuning process" in done.stderr  # its ref_prog lives in the script
    assert "Traceback" not in done.stderr


def test_a_plain_tilelang_script_runs_unchanged(tmp_path):
    done = run(tmp_path, TILELANG_PLAIN, "-m", "tilecraft.compat")
    assert done.returncode == 0, done.stderr
    assert "tuned {'block':" in done.stdout and "Traceback" not in done.stderr


def test_workers_that_cannot_import_the_script_fail_once_and_briefly(tmp_path):
    done = run(tmp_path, UNIMPORTABLE)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert (
        "WorkerStartError" in lines[-1]
        and "if __name__ == '__main__':" in lines[-1]
        and "workers=0" in lines[-1]
    )
    # the first worker failed to start, so no other was started: one worker's traceback, then ours
    assert done.stderr.count("RuntimeError: this script cannot be imported by a worker process") == 1
    ours = lines[len(lines) - lines[::-1].index("Traceback (most recent call last):") - 1 :]
    assert len(ours) <= 12, "\n".join(ours)


@pytest.mark.parametrize(
    "source, line, safe",
    [
        ("tune()\n", 1, False),
        ("if __name__ == '__main__':\n    tune()\n", 2, True),
        ("if '__main__' == __name__:\n    for _ in range(2):\n        tune()\n", 3, True),
        ("if __name__ == '__main__':\n    pass\ntune()\n", 3, False),
    ],
)
def test_the_guard_is_read_from_the_scripts_source(tmp_path, source, line, safe):
    path = tmp_path / "s.py"
    path.write_text(source)
    guards = main_module._main_guards(str(path))
    assert any(first <= line <= last for first, last in guards) is safe


def test_hiding_the_main_script_restores_it():
    main = sys.modules["__main__"]
    before = (getattr(main, "__file__", None), getattr(main, "__spec__", None))
    with main_module.hidden_main():
        assert getattr(main, "__file__", None) is None and main.__spec__ is None
    assert (getattr(main, "__file__", None), getattr(main, "__spec__", None)) == before
