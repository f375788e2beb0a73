"""The tuner's compile and profile options (TileLang's `CompileArgs` and `ProfileArgs`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tilecraft.profiler.bench import BACKENDS
from tilecraft.profiler.supply import TensorSupplyType, as_supply_type


@dataclass(frozen=True)
class CompileArgs:
    """How every candidate is compiled (`tilecraft.compile`'s options)."""

    out_idx: int | Sequence[int] | None = None
    target: Any = "auto"
    execution_backend: str = "auto"
    target_host: Any = None
    verbose: bool = False
    pass_configs: Mapping[str, Any] | None = None
    compile_flags: Sequence[str] | None = None

    def normalized_out_idx(self) -> tuple[int, ...] | None:
        if self.out_idx is None:
            return None
        return (self.out_idx,) if isinstance(self.out_idx, int) else tuple(self.out_idx)


@dataclass(frozen=True)
class ProfileArgs:
    """How every candidate is checked and measured.

    `supply_type` fills inputs (ignored when `supply_prog(params) -> inputs` is given); `ref_prog(*inputs)`
    gives the expected outputs, compared with `rtol`, `atol`, `max_mismatched_ratio` (or handed to
    `manual_check_prog(outputs, expected)`), unless `skip_check`; `cache_input_tensors` reuses one set
    of inputs for every candidate; `backend` is the timing method (`do_bench`'s).
    """

    warmup: int = 25
    rep: int = 100
    timeout: float = 30
    backend: str = "event"
    supply_type: TensorSupplyType = TensorSupplyType.Auto
    ref_prog: Callable[..., Any] | None = None
    supply_prog: Callable[..., Any] | None = None
    rtol: float = 1e-2
    atol: float = 1e-2
    max_mismatched_ratio: float = 0.01
    skip_check: bool = False
    manual_check_prog: Callable[..., Any] | None = None
    cache_input_tensors: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "supply_type", as_supply_type(self.supply_type))
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")

    @property
    def checks(self) -> bool:
        """Whether candidates are compared with a reference program."""
        return self.ref_prog is not None and not self.skip_check
