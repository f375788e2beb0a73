"""Kernels keep working in a child forked after a kernel ran (GCC's OpenMP threads do not survive a fork,
and a child that starts a parallel region waits for them forever): the child runs blocks on its calling
thread. Each case runs in a subprocess with a timeout, so a hang fails the test instead of the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {root!r})
    import numpy as np
    import tilecraft
    import tilecraft.language as T


    def add(n, value):
        @T.prim_func
        def add(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
            with T.Kernel(n // 256, threads=32) as bx:
                for i in T.Parallel(256):
                    Y[bx * 256 + i] = X[bx * 256 + i] + value

        return tilecraft.compile(add, target="cpu")


    def check(kernel, n, value, who):
        x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        y = np.full(n, np.nan, np.float32)
        kernel(x, y)
        if not np.array_equal(y, x + np.float32(value)):
            raise AssertionError(f"{{who}}: wrong values")
        print(who, "ok", flush=True)


    def exit_code(pid):
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


    first = add(8192, 1.0)
    check(first, 8192, 1.0, "parent")  # 32 blocks: OpenMP's threads start here
    pid = os.fork()
    if pid == 0:
        try:
            check(first, 8192, 1.0, "child, a kernel loaded before the fork")
            check(add(4096, 2.0), 4096, 2.0, "child, a kernel compiled and loaded after the fork")
            grandchild = os.fork()
            if grandchild == 0:
                check(first, 8192, 1.0, "grandchild")
                os._exit(0)
            os._exit(exit_code(grandchild))
        except BaseException as err:
            print("child failed:", err, file=sys.stderr, flush=True)
            os._exit(3)
    code = exit_code(pid)
    check(first, 8192, 1.0, "parent after the fork")
    sys.exit(code)
    """
)


@pytest.mark.parametrize("launcher", ["python", "compiled"])
def test_a_forked_child_runs_kernels_instead_of_hanging(tmp_path, launcher):
    script = tmp_path / "fork_after_kernel.py"
    script.write_text(SCRIPT.format(root=str(ROOT)))
    env = {**os.environ, "TILECRAFT_LAUNCHER": launcher, "OMP_NUM_THREADS": "4"}
    # A session of its own, so a hung child (which outlives its killed parent) is killed with it.
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    try:
        output, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"a forked child hung (all killed after 60 s); output: {output!r}")
    assert proc.returncode == 0, output
    lines = output.splitlines()
    assert "child, a kernel compiled and loaded after the fork ok" in lines
    assert "grandchild ok" in lines and "parent after the fork ok" in lines
