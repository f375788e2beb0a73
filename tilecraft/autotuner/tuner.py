"""`AutoTuner`: TileLang's explicit tuning API.

result = (
    AutoTuner.from_kernel(kernel=factory, configs=configs)     # factory(**config) -> @T.prim_func
    .set_compile_args(out_idx=[-1], target="auto")
    .set_profile_args(ref_prog=reference, supply_type=TensorSupplyType.Auto)
    .run(warmup=3, rep=20, timeout=60)
)
result.config, result.latency, result.kernel, result.candidates
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tilecraft.autotuner.args import CompileArgs, ProfileArgs
from tilecraft.autotuner.capture import get_autotune_inputs
from tilecraft.autotuner.executor import Executor
from tilecraft.autotuner.record import function_identity
from tilecraft.autotuner.result import AutotuneResult, ConfigError
from tilecraft.autotuner.session import Factory, RunOptions, Session
from tilecraft.profiler.supply import TensorSupplyType


def _closure_values(fn: Any) -> Any:
    """The values a factory closes over (the shapes of `lambda **c: matmul(M, N, K, **c)`), or None."""
    identity = function_identity(fn)
    return identity[4] if isinstance(identity, list) and identity[:1] == ["function"] else None


def _factory_name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


class AutoTuner:
    """Tunes a kernel factory (a function of the tuned parameters returning a @T.prim_func) over
    `configs` (a list of dicts of those parameters, or a function returning one)."""

    def __init__(self, fn: Callable[..., Any], configs: Any) -> None:
        if not callable(fn):
            raise ConfigError(
                f"AutoTuner needs a kernel factory (a function returning a @T.prim_func), got {fn!r}"
            )
        self.fn = fn
        self.configs = configs
        self.compile_args = CompileArgs()
        self.profile_args = ProfileArgs()
        self.factory: Factory | None = None
        self.last_result: AutotuneResult | None = None

    @classmethod
    def from_kernel(cls, kernel: Callable[..., Any], configs: Any) -> AutoTuner:
        """An AutoTuner for the kernel factory `kernel`."""
        return cls(kernel, configs)

    def set_compile_args(
        self,
        out_idx: int | Sequence[int] | None = None,
        target: Any = "auto",
        execution_backend: str | None = "auto",
        target_host: Any = None,
        verbose: bool | None = False,
        pass_configs: Mapping[str, Any] | None = None,
        compile_flags: Sequence[str] | None = None,
    ) -> AutoTuner:
        """How candidates are compiled (`tilecraft.compile`'s options); returns self."""
        self.compile_args = CompileArgs(out_idx, "auto" if target is None else target,
                                        execution_backend or "auto", target_host, bool(verbose), pass_configs,
                                        compile_flags)  # fmt: skip
        return self

    def set_profile_args(
        self,
        warmup: int = 25,
        rep: int = 100,
        timeout: float = 30,
        supply_type: TensorSupplyType = TensorSupplyType.Auto,
        ref_prog: Callable[..., Any] | None = None,
        supply_prog: Callable[..., Any] | None = None,
        rtol: float = 1e-2,
        atol: float = 1e-2,
        max_mismatched_ratio: float = 0.01,
        skip_check: bool = False,
        manual_check_prog: Callable[..., Any] | None = None,
        cache_input_tensors: bool = False,
        backend: str = "event",
    ) -> AutoTuner:
        """How candidates are checked and measured (see ProfileArgs); returns self."""
        self.profile_args = ProfileArgs(warmup, rep, timeout, backend, supply_type, ref_prog, supply_prog, rtol,
                                        atol, max_mismatched_ratio, skip_check, manual_check_prog,
                                        cache_input_tensors)  # fmt: skip
        return self

    def _default_factory(self) -> Factory:
        fn = self.fn
        return Factory(lambda config: fn(**config), fn, _factory_name(fn), lambda: [function_identity(fn)],
                       signature_args=lambda: _closure_values(fn))

    def run(
        self,
        warmup: int = 25,
        rep: int = 100,
        timeout: float | None = 180,
        use_pipeline: bool = False,
        enable_grouped_compile: bool = False,
        group_compile_size: int = 2,
        benchmark_devices: Sequence[int] | None = None,
        benchmark_multi_gpu: bool = False,
        early_stop: bool = False,
        early_stop_factor: float = 2.0,
        *,
        retune: bool | None = None,
        workers: int | None = None,
        executor: Executor | str | None = None,
        db: str | Path | None = None,
    ) -> AutotuneResult:
        """Tune: compile every candidate (in `workers` processes), check and time each (`warmup` and `rep`
        calls; `timeout` seconds per candidate for compiling and for timing), keep the best.

        The best config is kept in the disk cache; an identical tuning later (in any process) reuses it
        unless `retune` (or TILECRAFT_RETUNE=1). `use_pipeline`, `enable_grouped_compile` and
        `group_compile_size` are accepted for compatibility (each candidate compiles in its own worker);
        `benchmark_multi_gpu` is not supported (candidates are measured on one device). `executor`:
        "local", "ray" or an Executor (None: TILECRAFT_AUTOTUNE_EXECUTOR, else local); `db`: a SQLite
        tuning database (None: TILECRAFT_TUNING_DB), keyed on the factory's name and closure values.
        """
        if early_stop and early_stop_factor < 1.0:
            raise ConfigError(f"early_stop_factor must be >= 1.0, got {early_stop_factor}")
        if benchmark_multi_gpu:
            warnings.warn("benchmark_multi_gpu is not supported: candidates are measured on one device",
                          RuntimeWarning, stacklevel=2)  # fmt: skip
        options = RunOptions(warmup, rep, timeout, early_stop_factor if early_stop else None, retune, workers,
                             executor, db)  # fmt: skip
        session = Session(self.factory or self._default_factory(), self.compile_args, self.profile_args, options,
                          self.configs, get_autotune_inputs())  # fmt: skip
        self.last_result = session.run()
        return self.last_result

    def __call__(self) -> AutotuneResult:
        return self.run()
