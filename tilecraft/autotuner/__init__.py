"""Autotuning (TileLang's `tilelang.autotuner`): pick the fastest configuration of a kernel.

    @tilecraft.autotune(configs=[dict(block_M=32), dict(block_M=64)])
    @tilecraft.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=64): ...

    AutoTuner.from_kernel(kernel=factory, configs=configs).set_compile_args(...).run(warmup=3, rep=20)

See docs/autotuning.md (profiling, autotuning, executors and the tuning database).
"""

from __future__ import annotations

from tilecraft.autotuner.args import CompileArgs, ProfileArgs
from tilecraft.autotuner.capture import get_autotune_inputs, set_autotune_inputs
from tilecraft.autotuner.database import TuningDatabase, TuningDatabaseError, merge_databases
from tilecraft.autotuner.decorator import AutoTuneImpl, autotune
from tilecraft.autotuner.executor import Executor, InProcessExecutor, LocalProcessExecutor
from tilecraft.autotuner.ray_executor import RayExecutor
from tilecraft.autotuner.result import (
    AutotuneError,
    AutotuneResult,
    CandidateResult,
    ConfigError,
    TunedKernel,
)
from tilecraft.autotuner.tuner import AutoTuner

__all__ = [
    "AutoTuneImpl", "AutoTuner", "AutotuneError", "AutotuneResult", "CandidateResult", "CompileArgs", "ConfigError",
    "Executor", "InProcessExecutor", "LocalProcessExecutor", "ProfileArgs", "RayExecutor", "TunedKernel",
    "TuningDatabase", "TuningDatabaseError", "autotune", "get_autotune_inputs", "merge_databases",
    "set_autotune_inputs",
]  # fmt: skip
