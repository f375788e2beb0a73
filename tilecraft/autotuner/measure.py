"""Checking and timing one candidate kernel (what an executor runs where the kernel runs)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tilecraft.autotuner.args import ProfileArgs
from tilecraft.autotuner.result import OK, RUN_FAILED, TIMEOUT, WRONG_RESULT, AutotuneError
from tilecraft.autotuner.worker import describe_error
from tilecraft.errors import ArgumentError
from tilecraft.profiler.bench import BenchTimeout

if TYPE_CHECKING:
    from tilecraft.jit.kernel import Kernel
    from tilecraft.profiler import Profiler


@dataclass
class Measured:
    """A candidate's measurement: status (OK, WRONG_RESULT, RUN_FAILED or TIMEOUT), latency in ms, the
    error, and the kernel (kept by the tuner for the best candidate only)."""

    status: str
    latency: float | None = None
    error: str = ""
    kernel: Any = None


class Measurement:
    """Checks and times candidates with one set of profile options; remembers the reference program's
    latency (measured once) and the best latency so far (for early stopping)."""

    def __init__(self, profile: ProfileArgs, warmup: int, rep: int, timeout: float | None,
                 early_stop_factor: float | None, inputs: list[Any] | None) -> None:  # fmt: skip
        self.profile = profile
        self.warmup = warmup
        self.rep = rep
        self.timeout = timeout
        self.early_stop_factor = early_stop_factor
        self.captured = inputs
        self.ref_latency: float | None = None
        self.best: float | None = None
        self.ref_error = ""
        self._cached: list[Any] | None = None

    def portable(self, dumps: Callable[[Any], bytes] | None = None) -> bytes:
        """These options pickled (by `dumps`, default pickle's) for a benchmark worker, in a fresh state
        (no reference latency, no inputs kept); raises when one of them cannot travel (with pickle: a
        lambda, a local function; an open handle with any)."""
        import pickle

        fresh = Measurement(self.profile, self.warmup, self.rep, self.timeout, self.early_stop_factor,
                            self.captured)  # fmt: skip
        return (dumps or pickle.dumps)(fresh)

    def _inputs(self, profiler: Profiler) -> list[Any]:
        if self.captured is not None:
            return list(self.captured)
        if self._cached is not None:
            return self._cached
        if self.profile.supply_prog is not None:
            inputs = list(self.profile.supply_prog(profiler._get_params()))
        else:
            inputs = self._supplied(profiler)
        if self.profile.cache_input_tensors:
            self._cached = inputs
        return inputs

    @staticmethod
    def _supplied(profiler: Profiler) -> list[Any]:
        try:
            return profiler._get_inputs()
        except ArgumentError as err:  # the same for every candidate: the tuning itself cannot go on
            raise AutotuneError(
                f"{err}; a tuning cannot make these inputs itself: give them with supply_prog=(params) -> "
                "inputs, or tune inside `with set_autotune_inputs(*inputs):`"
            ) from None

    def check(self, kernel: Kernel, inputs: list[Any] | None = None) -> None:
        """Raise AssertionError when the kernel's outputs differ from the reference program's."""
        profile = self.profile
        profiler = kernel.get_profiler(profile.supply_type)
        inputs = self._inputs(profiler) if inputs is None else inputs
        if profile.manual_check_prog is not None:
            profiler.manual_assert_close(profile.ref_prog, inputs, profile.manual_check_prog)
        else:
            profiler.assert_allclose(profile.ref_prog, inputs, profile.atol, profile.rtol,
                                     profile.max_mismatched_ratio)  # fmt: skip

    def measure(self, kernel: Kernel) -> Measured:
        """Check (with a reference program) and time `kernel`; never raises for the candidate's faults."""
        try:
            return self._measure(kernel)
        except AutotuneError:
            raise
        except AssertionError as err:
            return Measured(WRONG_RESULT, error=str(err) or "outputs differ from the reference program's")
        except BenchTimeout as err:
            return Measured(TIMEOUT, error=f"{err} (timeout {self.timeout:g} s)")
        except Exception as err:  # noqa: BLE001 - a candidate that fails to run is skipped and reported
            return Measured(RUN_FAILED, error=describe_error(err))

    def _measure(self, kernel: Kernel) -> Measured:
        profiler = kernel.get_profiler(self.profile.supply_type)
        inputs = self._inputs(profiler)
        if self.profile.checks:
            self.check(kernel, inputs)
        latency = self._bench(profiler, None, inputs, self._baseline())
        if self.ref_latency is None and self.profile.ref_prog is not None:
            self._bench_reference(profiler, inputs)
        return Measured(OK, latency, kernel=kernel)

    def _bench_reference(self, profiler: Profiler, inputs: list[Any]) -> None:
        try:
            self.ref_latency = self._bench(profiler, self.profile.ref_prog, inputs, None)
        except Exception as err:  # noqa: BLE001 - the reference's latency is information, not a verdict
            self.ref_error = describe_error(err)

    def _baseline(self) -> float | None:
        if self.early_stop_factor is None or self.best is None:
            return None
        return self.best * self.early_stop_factor

    def _bench(self, profiler: Profiler, func: Any, inputs: list[Any], baseline: float | None) -> float:
        return float(profiler.do_bench(func, n_warmup=self.warmup, n_repeat=self.rep, input_tensors=inputs,
                                       backend=self.profile.backend, early_stop_baseline=baseline,
                                       timeout=self.timeout))  # fmt: skip
