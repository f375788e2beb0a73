"""The `local` executor on the C target with 2 compile processes and a benchmark worker process: a
worker killed in the middle of a candidate costs one retry, a crash or a kernel that hangs when measured
costs that candidate only; and choosing an executor by name."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tilecraft
from tests.autotuner.kernels import DieOnUnpickle, reference, spin_or_add_factory
from tilecraft.autotuner import AutotuneError, AutoTuner, InProcessExecutor, LocalProcessExecutor
from tilecraft.autotuner.executor import default_executor
from tilecraft.autotuner.result import CRASHED, OK, TIMEOUT, ConfigError

N = 256


def survivors_configs():
    return [
        dict(block=64),
        dict(block=32, die="compile"),  # its compile worker is killed once: compiled again, then fine
        dict(block=128, die="bench"),  # its benchmark worker is killed once: measured again, then fine
        dict(block=64, spin=True),  # hangs when measured: killed, measured again, killed: timeout
        dict(block=32, fault="crash"),  # kills every compile worker it reaches: crashed
    ]


def precompile(factory, configs) -> None:
    """Compile the candidates here first (but the one that crashes its compile worker), so that their
    compiles in workers are cache hits that fit a short timeout on a loaded machine: these tests are
    about workers that die or hang, not compile speed."""
    for config in configs:
        if config.get("fault") != "crash":
            tilecraft.compile(factory(**config), out_idx=[-1], target="c")


def check_survivors(result) -> None:
    statuses = [c.status for c in result.candidates]
    assert statuses == [OK, OK, OK, TIMEOUT, CRASHED], result.summary()
    assert "also when measured again" in result.candidates[3].error
    assert "also when tried again" in result.candidates[4].error or "also when run again" in result.candidates[4].error
    ok = [c for c in result.candidates if c.ok]
    assert result.config == min(ok, key=lambda c: c.latency).config
    a = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    b = np.random.default_rng(4).standard_normal(N).astype(np.float32)
    np.testing.assert_allclose(result.kernel(a, b), 2 * a + b, rtol=1e-6)


def survivors_tuner(tmp_path):
    die = {"compile": DieOnUnpickle(tmp_path / "compile", 1), "bench": DieOnUnpickle(tmp_path / "bench", 2)}
    factory = spin_or_add_factory(N, die)
    precompile(factory, survivors_configs())
    return (
        AutoTuner.from_kernel(factory, survivors_configs())
        .set_compile_args(out_idx=[-1], target="c")
        .set_profile_args(ref_prog=reference)
    )


def test_local_workers_lose_only_their_candidates(tmp_path):
    result = survivors_tuner(tmp_path).run(warmup=1, rep=3, timeout=3, workers=2, retune=True)
    check_survivors(result)
    # Each marker counted its unpickles: the killed one, the retry, and (compile) the measurement.
    assert (tmp_path / "compile").read_text() == "3"
    assert (tmp_path / "bench").read_text() == "3"


def test_executors_by_name():
    assert isinstance(default_executor(2, False, "local"), LocalProcessExecutor)
    assert isinstance(default_executor(0, False, "LOCAL"), InProcessExecutor)
    with tilecraft.settings.override(TILECRAFT_AUTOTUNE_EXECUTOR="local"):
        assert isinstance(default_executor(2, False), LocalProcessExecutor)
    with pytest.raises(ConfigError, match="executor must be one of local, ray .* got 'slurm'"):
        default_executor(2, False, "slurm")
    with tilecraft.settings.override(TILECRAFT_AUTOTUNE_EXECUTOR="dask"), pytest.raises(
        ConfigError, match="TILECRAFT_AUTOTUNE_EXECUTOR must be one of"
    ):
        default_executor(2, False)


def test_ray_missing_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(AutotuneError, match=r"needs Ray, which is not installed .*pip install 'tilecraft\[ray\]'"):
        default_executor(2, False, "ray")


def test_unpicklable_profile_options_measure_here_with_a_warning():
    tuner = (
        AutoTuner.from_kernel(spin_or_add_factory(N), [dict(block=64), dict(block=128)])
        .set_compile_args(out_idx=[-1], target="c")
        .set_profile_args(ref_prog=lambda a, b: 2 * a + b)
    )
    with pytest.warns(RuntimeWarning, match="cannot be sent to a benchmark worker .* module-level functions"):
        result = tuner.run(warmup=1, rep=2, workers=1, retune=True)
    assert [c.status for c in result.candidates] == [OK, OK]
