"""`Profiler`: inputs for a kernel, a check against a reference program, and timing (TileLang's API)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tilecraft.errors import ArgumentError
from tilecraft.profiler.bench import do_bench, kernel_clock_of
from tilecraft.profiler.compare import mismatch_report
from tilecraft.profiler.supply import (
    TensorSupplyType,
    as_supply_type,
    check_library,
    concrete_shape,
    supply_numpy,
    to_numpy,
    torch_from_numpy,
)
from tilecraft.runtime.timing import FLUSH_BYTES, DeviceTimer, KernelClock

if TYPE_CHECKING:
    from tilecraft.jit.kernel import Kernel
    from tilecraft.runtime.artifact import ParamInfo


def _as_list(outputs: Any) -> list[Any]:
    if outputs is None:
        return []
    if isinstance(outputs, (list, tuple)):
        return list(outputs)
    return [outputs]


class Profiler:
    """Benchmarks and checks one kernel, with inputs made from its parameters.

    `supply_type` fills the inputs (`TensorSupplyType`); `library` is the array library they come from:
    "torch" or "numpy" (None: torch when the program imported it, as TileLang programs do, else numpy).
    On a GPU target the arrays are copies on the GPU (`Kernel.to_device`).
    """

    def __init__(self, kernel: Kernel, supply_type: TensorSupplyType | str = TensorSupplyType.Auto,
                 library: str | None = None, seed: int | None = None) -> None:  # fmt: skip
        self.kernel = kernel
        self.supply_type = as_supply_type(supply_type)
        self.library = check_library(library)
        self.params: tuple[ParamInfo, ...] = kernel.params
        self.result_idx: list[int] = list(kernel.out_idx)
        self._rng = np.random.default_rng(seed)
        self._timer: DeviceTimer | None = None
        self._kernel_clock: KernelClock | None = None

    # ------------------------------------------------------------------ inputs

    def _get_params(self, with_output: bool = False) -> list[ParamInfo]:
        """The parameters that get inputs (with the outputs in `out_idx` too, when asked)."""
        return [p for i, p in enumerate(self.params) if with_output or i not in self.result_idx]

    def _get_inputs(self, with_output: bool = False,
                    dynamic_symbolic_constraints: Mapping[str, int] | None = None) -> list[Any]:  # fmt: skip
        """Fresh arrays for the parameters (`dynamic_symbolic_constraints`: sizes of symbolic dims by name)."""
        dims = dict(dynamic_symbolic_constraints or {})
        return [self._supply(p, dims) for p in self._get_params(with_output)]

    def _supply(self, param: ParamInfo, dims: Mapping[str, int]) -> Any:
        if param.kind != "buffer":
            raise ArgumentError(
                f"scalar parameter {param.name!r} of {self.kernel.artifact.function_name} cannot be supplied "
                "from a TensorSupplyType; pass input_tensors=[...] (or supply_prog= / set_autotune_inputs "
                "when tuning)"
            )
        shape = concrete_shape(param.name, param.shape, dims, self.kernel.artifact.symbolic_dims)
        host = supply_numpy(param.dtype, shape, self.supply_type, self._rng)
        placed = self.kernel.to_device(host)
        if self.library == "torch" and placed is host:  # a host target: torch tensors share the data
            return torch_from_numpy(host)
        return placed

    # ------------------------------------------------------------------ running and checking

    @property
    def func(self) -> Kernel:
        return self.kernel

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.kernel(*args, **kwargs)

    def run_once(self, func: Callable[..., Any] | None = None,
                 dynamic_symbolic_constraints: Mapping[str, int] | None = None) -> Any:  # fmt: skip
        """Call `func` (default: the kernel) once on fresh inputs; returns what it returns."""
        inputs = self._get_inputs(dynamic_symbolic_constraints=dynamic_symbolic_constraints)
        return (func or self.kernel)(*inputs)

    def _outputs(self, program: Callable[..., Any], inputs: Sequence[Any]) -> list[np.ndarray]:
        outputs = _as_list(program(*inputs))
        self.kernel.synchronize()
        return [None if o is None else to_numpy(o, self.kernel.to_host) for o in outputs]

    def assert_allclose(
        self,
        reference_program: Callable[..., Any],
        input_tensors: Sequence[Any] | None = None,
        atol: float = 1e-2,
        rtol: float = 1e-2,
        max_mismatched_ratio: float = 0.01,
        dynamic_symbolic_constraints: Mapping[str, int] | None = None,
    ) -> None:
        """Raise AssertionError unless the kernel's outputs match `reference_program`'s on the same inputs.

        At most `max_mismatched_ratio` of each output's elements may differ by more than
        atol + rtol * |reference|. An output the reference returns as None is not compared.
        """
        inputs = list(input_tensors) if input_tensors is not None else self._get_inputs(
            dynamic_symbolic_constraints=dynamic_symbolic_constraints)  # fmt: skip
        expected = self._outputs(reference_program, inputs)
        actual = self._outputs(self.kernel, inputs)
        if len(actual) != len(expected):
            raise AssertionError(
                f"{self.kernel.artifact.function_name} returned {len(actual)} outputs, the reference program "
                f"{len(expected)}"
            )
        for i, (lhs, rhs) in enumerate(zip(actual, expected)):
            if lhs is None or rhs is None:
                continue
            problem = mismatch_report(lhs, rhs, atol, rtol, max_mismatched_ratio, f"output {i}")
            if problem is not None:
                raise AssertionError(f"{self.kernel.artifact.function_name}: {problem}")

    def manual_assert_close(self, reference_program: Callable[..., Any], input_tensors: Sequence[Any] | None = None,
                            manual_check_prog: Callable[[list, list], Any] | None = None) -> None:  # fmt: skip
        """Call `manual_check_prog(kernel_outputs, reference_outputs)`, which raises when they differ."""
        if manual_check_prog is None:
            raise ArgumentError(
                "manual_assert_close needs manual_check_prog=(outputs, reference_outputs) -> None"
            )
        inputs = list(input_tensors) if input_tensors is not None else self._get_inputs()
        expected = _as_list(reference_program(*inputs))
        actual = _as_list(self.kernel(*inputs))
        self.kernel.synchronize()
        manual_check_prog(actual, expected)

    def assert_consistent(self, repeat: int = 10) -> None:
        """Raise AssertionError unless `repeat` more runs on the same inputs give identical outputs (a race
        between threads shows up here)."""
        inputs = self._get_inputs()
        first = self._outputs(self.kernel, inputs)
        for run in range(repeat):
            for i, (lhs, rhs) in enumerate(zip(self._outputs(self.kernel, inputs), first)):
                if not np.array_equal(lhs, rhs, equal_nan=True):
                    raise AssertionError(
                        f"output {i} differs between run 0 and run {run + 1} on the same inputs"
                    )

    # ------------------------------------------------------------------ timing

    def timer(self, flush_bytes: int = FLUSH_BYTES) -> DeviceTimer:
        """The kernel's device timer (kept: a GPU's flush buffer is allocated once)."""
        if self._timer is None:
            ctx = self.kernel.context
            self._timer = ctx.execution_backend().timer(ctx.target, flush_bytes)
        return self._timer

    def kernel_clock(self, flush_bytes: int = FLUSH_BYTES) -> KernelClock:
        """The kernel's device's record of kernel run times, for `backend="cupti"` (kept, as the timer)."""
        if self._kernel_clock is None:
            ctx = self.kernel.context
            self._kernel_clock = kernel_clock_of(ctx.execution_backend(), ctx.target, flush_bytes)
        return self._kernel_clock

    def do_bench(
        self,
        func: Callable[..., Any] | None = None,
        warmup: float = 25,
        rep: float = 100,
        n_warmup: int = 0,
        n_repeat: int = 0,
        input_tensors: Sequence[Any] | None = None,
        backend: str = "event",
        quantiles: Sequence[float] | None = None,
        return_mode: str = "median",
        dynamic_symbolic_constraints: Mapping[str, int] | None = None,
        device: Any = None,
        early_stop_baseline: float | None = None,
        timeout: float | None = None,
    ) -> float | list[float]:
        """Milliseconds per call of `func` (default: the kernel) on `input_tensors` (default: fresh
        inputs); the arguments are `tilecraft.profiler.do_bench`'s."""
        target = func or self.kernel
        inputs = list(input_tensors) if input_tensors is not None else self._get_inputs(
            dynamic_symbolic_constraints=dynamic_symbolic_constraints)  # fmt: skip
        return do_bench(
            lambda: target(*inputs),
            warmup=warmup,
            rep=rep,
            _n_warmup=n_warmup,
            _n_repeat=n_repeat,
            quantiles=quantiles,
            backend=backend,
            return_mode=return_mode,
            device=device,
            early_stop_baseline=early_stop_baseline,
            timer=None if backend == "cupti" else self.timer(),
            kernel_clock=self.kernel_clock() if backend == "cupti" else None,
            timeout=timeout,
        )
