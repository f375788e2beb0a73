"""The autotuner on the C target: every way a candidate can fail is survived and reported, the best
candidate wins, and a tuning is kept in the disk cache for the next process.

Candidates compile in spawned worker processes (`workers=2`) unless a test says otherwise; kernels are
tiny, so the whole file runs in well under a minute.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.autotuner.kernels import add_factory, reference
from tilecraft.autotuner import AutotuneError, AutoTuner, InProcessExecutor, LocalProcessExecutor, TunedKernel
from tilecraft.autotuner.executor import default_executor
from tilecraft.autotuner.result import COMPILE_FAILED, CRASHED, ELABORATION_FAILED, OK, TIMEOUT, WRONG_RESULT
from tilecraft.jit.kernel import Kernel

ROOT = Path(__file__).resolve().parents[2]
N = 256


def tuner(configs, **profile):
    return (
        AutoTuner.from_kernel(add_factory(N), configs)
        .set_compile_args(out_idx=[-1], target="c")
        .set_profile_args(**{"ref_prog": reference, **profile})
    )


def check_kernel(kernel):
    a = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    b = np.random.default_rng(2).standard_normal(N).astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), 2 * a + b, rtol=1e-6)


def test_failing_candidates_are_skipped_and_reported(monkeypatch):
    import importlib

    def no_lowering_here(*args, **kwargs):
        raise AssertionError("the tuning process lowered a candidate the workers had built")

    # Workers put lowerings and builds into the disk cache; the tuning process only loads them.
    lower = importlib.import_module(
        "tilecraft.jit.lower"
    )  # `tilecraft.jit` is the decorator, not the package
    monkeypatch.setattr(lower, "lower_uncached", no_lowering_here)
    configs = [
        dict(block=32, fault="hang"),  # first: the other worker compiles the rest while it hangs
        dict(block=64),
        dict(block=32, fault="elaborate"),
        dict(block=32, fault="compile"),
        dict(block=32, fault="crash"),
        dict(block=32, fault="wrong"),
        dict(block=128),
    ]
    result = tuner(configs).run(warmup=1, rep=3, timeout=8, workers=2, retune=True)
    statuses = [c.status for c in result.candidates]
    assert statuses == [TIMEOUT, OK, ELABORATION_FAILED, COMPILE_FAILED, CRASHED, WRONG_RESULT, OK]
    errors = {c.status: c.error for c in result.candidates}
    assert "timeout of 8 s" in errors[TIMEOUT]
    assert "block 32 is not supported" in errors[ELABORATION_FAILED]
    assert "scratch memory" in errors[COMPILE_FAILED]
    assert "worker process compiling it died" in errors[CRASHED]
    assert "differ from the reference" in errors[WRONG_RESULT]
    ok = [c for c in result.candidates if c.ok]
    assert result.config == min(ok, key=lambda c: c.latency).config
    assert result.latency == min(c.latency for c in ok) and result.ref_latency > 0
    assert isinstance(result.kernel, TunedKernel) and result.kernel.config == result.config
    check_kernel(result.kernel)
    # The hanging candidate's IR carries an object with no structural hash: tuned, but not kept.
    assert not result.from_cache and result.key is None
    assert "elaboration failed" in result.summary()


def test_no_working_candidate_is_an_error_listing_each():
    configs = [dict(block=32, fault="elaborate"), dict(block=32, fault="wrong")]
    with pytest.raises(AutotuneError, match=r"no candidate(.|\n)*elaboration failed(.|\n)*wrong result"):
        tuner(configs).run(warmup=1, rep=2, workers=0, retune=True)


def test_in_process_compiling_and_the_verbose_detail(capfd):
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        result = tuner([dict(block=64), dict(block=32, fault="compile")]).run(
            warmup=1, rep=2, workers=0, retune=True
        )
    err = capfd.readouterr().err
    assert "compiling 2 candidates (in-process)" in err
    assert "#1 {'block': 32, 'fault': 'compile'}: compile failed" in err
    assert f"best #0 {{'block': 64}}: {result.latency:.4g} ms" in err


def test_the_default_executor():
    assert isinstance(default_executor(0, False), InProcessExecutor)
    assert isinstance(default_executor(3, False), LocalProcessExecutor)
    with tilecraft.settings.override(TILECRAFT_TUNE_WORKERS=0):
        assert isinstance(default_executor(None, False), InProcessExecutor)
    with tilecraft.settings.override(TILECRAFT_DISABLE_CACHE=True):  # workers hand over through the cache
        assert isinstance(default_executor(2, False), InProcessExecutor)


def test_a_bad_worker_count_names_where_it_came_from():
    with pytest.raises(tilecraft.autotuner.ConfigError, match=r"workers must be .* got -1"):
        default_executor(-1, False)
    bad_setting = pytest.raises(
        tilecraft.autotuner.ConfigError, match="TILECRAFT_TUNE_WORKERS must be .* got -2"
    )
    with tilecraft.settings.override(TILECRAFT_TUNE_WORKERS=-2), bad_setting:
        default_executor(None, False)


def test_a_timeout_of_zero_means_none_as_in_tilelang():
    from tilecraft.autotuner.session import RunOptions

    assert RunOptions(timeout=0).timeout is None and RunOptions(timeout=5).timeout == 5


REUSE_SCRIPT = textwrap.dedent(
    """
    import json
    from tilecraft.autotuner import AutoTuner
    from tests.autotuner.kernels import add_factory, reference

    if __name__ == "__main__":
        result = (
            AutoTuner.from_kernel(add_factory(256), [dict(block=64), dict(block=16)])
            .set_compile_args(out_idx=[-1], target="c")
            .set_profile_args(ref_prog=reference)
            .run(warmup=1, rep=3)  # workers: TILECRAFT_TUNE_WORKERS
        )
        print(json.dumps(dict(config=result.config, latency=result.latency, from_cache=result.from_cache,
                              statuses=[c.status for c in result.candidates])))
    """
)


def run_script(tmp_path, **env):
    import json
    import os

    script = tmp_path / "reuse.py"
    script.write_text(REUSE_SCRIPT)
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=environ, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_tuning_is_reused_by_the_next_process_and_retuned_on_request(tmp_path):
    first = tuner([dict(block=64), dict(block=16)]).run(warmup=1, rep=3, workers=0, retune=True)
    second = run_script(tmp_path, TILECRAFT_TUNE_WORKERS="0")
    assert second == dict(config=first.config, latency=first.latency, from_cache=True, statuses=[OK, OK])
    third = run_script(tmp_path, TILECRAFT_RETUNE="1", TILECRAFT_TUNE_WORKERS="0")
    assert third["from_cache"] is False and third["statuses"] == [OK, OK]


def test_the_cache_key_covers_the_arguments_and_the_configs():
    base = tuner([dict(block=64), dict(block=16)]).run(warmup=1, rep=2, workers=0)
    again = tuner([dict(block=64), dict(block=16)]).run(warmup=1, rep=2, workers=0)
    assert again.from_cache and again.key == base.key
    other_configs = tuner([dict(block=64), dict(block=32)]).run(warmup=1, rep=2, workers=0)
    assert not other_configs.from_cache and other_configs.key != base.key
    other_profile = tuner([dict(block=64), dict(block=16)], atol=1e-3).run(warmup=1, rep=2, workers=0)
    assert other_profile.key not in (base.key, other_configs.key)


FAULTY_BLOCKS: set[int] = set()


def switchable(block=64, fault=None):
    """add_factory's kernel, computing a wrong result for the blocks in FAULTY_BLOCKS: a global, which the
    tuning cache's key does not see (as with a helper module edited between two runs)."""
    return add_factory(N)(block, "wrong" if block in FAULTY_BLOCKS else fault)


def test_a_stored_best_config_that_fails_its_check_now_is_tuned_again():
    # config 0 fails to elaborate, so the key's IR structure cannot see the change either
    configs = [dict(block=32, fault="elaborate"), dict(block=64), dict(block=16)]

    def tune():
        tuner = AutoTuner.from_kernel(switchable, configs).set_compile_args(out_idx=[-1], target="c")
        return tuner.set_profile_args(ref_prog=reference).run(warmup=1, rep=2, workers=0)

    first = tune()
    FAULTY_BLOCKS.add(first.config["block"])
    try:
        second = tune()
    finally:
        FAULTY_BLOCKS.clear()
    assert not second.from_cache and second.key == first.key
    assert second.config != first.config
    assert [c.status for c in second.candidates if c.config == first.config] == [WRONG_RESULT]


# ---------------------------------------------------------------------- the decorator


@tilecraft.autotune(configs=[dict(block=16), dict(block=64)], warmup=1, rep=2, workers=0)
@tilecraft.jit(out_idx=[-1], target="c")
def scaled_add(n, block=32):
    return add_factory(n)(block)


def test_the_decorator_tunes_once_per_argument_set():
    kernel = scaled_add(N)
    assert isinstance(kernel, TunedKernel) and kernel.config in (dict(block=16), dict(block=64))
    assert kernel.latency > 0 and kernel.tuning.candidates[1].ok
    check_kernel(kernel)
    assert scaled_add(N) is kernel  # remembered in this process
    assert scaled_add.tune(N) is kernel.tuning


def test_a_tuned_parameter_given_skips_tuning():
    kernel = scaled_add(N, block=32)
    assert isinstance(kernel, Kernel)
    check_kernel(kernel)


@tilecraft.autotune(configs=[dict(block=16), dict(block=32)], warmup=1, rep=2, workers=0)
@tilecraft.jit(target="c")
def eager_add(A, B, block=64):
    n = T.const("n")
    A: T.Tensor((n,), "float32")
    B: T.Tensor((n,), "float32")
    C = T.empty((n,), "float32")
    with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = A[bx * block + i] * 2 + B[bx * block + i]
    return C


def test_the_eager_style_tunes_for_the_tensors_and_returns_the_outputs():
    a = np.arange(N, dtype=np.float32)
    b = np.ones(N, np.float32)
    np.testing.assert_array_equal(eager_add(a, b), 2 * a + b)
    kernel = eager_add.compile(n=N)
    assert isinstance(kernel, TunedKernel) and kernel.config in (dict(block=16), dict(block=32))
    np.testing.assert_array_equal(kernel(a, b), 2 * a + b)


# ---------------------------------------------------------------------- names


def test_tilelangs_names_exist():
    code = (
        "import tilecraft\n"
        "assert callable(tilecraft.autotune)\n"
        "from tilecraft.autotuner import AutoTuner, autotune, set_autotune_inputs\n"
        "assert tilecraft.autotuner.AutoTuner is AutoTuner\n"
        "assert callable(tilecraft.profiler.do_bench)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_reference_without_a_lasting_identity_makes_the_tuning_uncacheable(capfd):
    class Reference:  # an object: its repr shows an address, which differs in every process
        def __call__(self, a, b):
            return reference(a, b)

    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        first = tuner([dict(block=64)], ref_prog=Reference()).run(warmup=1, rep=2, workers=0)
        second = tuner([dict(block=64)], ref_prog=Reference()).run(warmup=1, rep=2, workers=0)
    assert first.key is None and not second.from_cache
    assert "not kept in the tuning cache: Reference value" in capfd.readouterr().err


def test_a_candidate_that_fails_to_load_is_skipped(monkeypatch):
    import tilecraft.autotuner.executor as executor

    real = executor.compile_here

    def flaky(job, ctx):
        if job.index == 1:
            raise OSError("cannot open shared object file")
        return real(job, ctx)

    monkeypatch.setattr(executor, "compile_here", flaky)
    here = LocalProcessExecutor(1, measure_in_workers=False)  # loads (and measures) in this process
    result = tuner([dict(block=64), dict(block=16)]).run(warmup=1, rep=2, executor=here, retune=True)
    assert result.candidates[1].status == "run failed"
    assert "loading the compiled kernel failed: OSError: cannot open" in result.candidates[1].error
    assert result.config == dict(block=64)
