"""The `ray` executor on a local Ray cluster (`ray.init(num_cpus=2)`), the C target: candidates compile
as tasks and are measured on a timing actor; a killed worker, a crash, a compile that hangs and a kernel
that hangs when measured each cost their own candidate only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.autotuner.kernels import DieOnUnpickle, reference, spin_or_add_factory
from tests.autotuner.test_executors import N, check_survivors, precompile, survivors_configs
from tilecraft.autotuner import AutoTuner
from tilecraft.autotuner.ray_executor import RayExecutor
from tilecraft.autotuner.result import COMPILE_FAILED, OK, TIMEOUT

ray = pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def local_ray():
    # The workers import the tests' kernels (and the cache directory the suite set) from here.
    env = {"PYTHONPATH": str(ROOT), "TILECRAFT_CACHE_DIR": os.environ.get("TILECRAFT_CACHE_DIR", "")}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {k: v for k, v in env.items() if v}})  # fmt: skip
    yield ray
    ray.shutdown()


def test_ray_workers_lose_only_their_candidates(local_ray, tmp_path):
    die = {"compile": DieOnUnpickle(tmp_path / "compile", 1), "bench": DieOnUnpickle(tmp_path / "bench", 2)}
    factory = spin_or_add_factory(N, die)
    configs = survivors_configs()
    precompile(factory, configs)
    executor = RayExecutor()
    tuner = AutoTuner.from_kernel(factory, configs).set_compile_args(out_idx=[-1], target="c")
    result = tuner.set_profile_args(ref_prog=reference).run(warmup=1, rep=3, timeout=3, executor=executor,
                                                            retune=True)  # fmt: skip
    check_survivors(result)
    assert (tmp_path / "compile").read_text() == "3"  # killed, run again, measured
    assert (tmp_path / "bench").read_text() == "3"  # compiled, killed while measured, measured again
    assert executor.startup_seconds == 0.0  # Ray was initialized by the caller
    assert executor.first_task_seconds is not None and executor.first_task_seconds > 0


def test_ray_compile_hang_and_failure_by_name(local_ray, tmp_path):
    configs = [dict(block=64), dict(block=32, fault="hang"), dict(block=32, fault="compile")]
    tuner = AutoTuner.from_kernel(spin_or_add_factory(N), configs).set_compile_args(out_idx=[-1], target="c")
    precompile(spin_or_add_factory(N), configs[:1])
    result = tuner.set_profile_args(ref_prog=reference).run(warmup=1, rep=3, timeout=3, executor="ray",
                                                            retune=True)  # fmt: skip
    assert [c.status for c in result.candidates] == [OK, TIMEOUT, COMPILE_FAILED], result.summary()
    assert "its Ray task was cancelled" in result.candidates[1].error
    assert "scratch memory" in result.candidates[2].error
    assert result.config == dict(block=64)
