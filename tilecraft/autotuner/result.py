"""What a tuning produced: every candidate with its status, the best one, and the tuned kernel."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tilecraft.errors import TilecraftError

if TYPE_CHECKING:
    from tilecraft.ir.function import PrimFunc
    from tilecraft.jit.kernel import Kernel

OK = "ok"
ELABORATION_FAILED = "elaboration failed"  # the kernel factory raised for this config
COMPILE_FAILED = "compile failed"  # lowering or the device compiler failed
CRASHED = "crashed"  # the compile worker process died
TIMEOUT = "timeout"  # compiling or benchmarking ran past the per-candidate timeout
WRONG_RESULT = "wrong result"  # outputs differ from ref_prog's
RUN_FAILED = "run failed"  # the kernel (or the input supply) raised when called
STATUSES = (OK, ELABORATION_FAILED, COMPILE_FAILED, CRASHED, TIMEOUT, WRONG_RESULT, RUN_FAILED)


class AutotuneError(TilecraftError, RuntimeError):
    """No candidate could be tuned, or the tuner was set up wrongly."""


class ConfigError(TilecraftError, ValueError):
    """A tuning configuration does not fit the kernel factory."""


@dataclass
class CandidateResult:
    """One configuration's fate: `status` (one of STATUSES), its latency in ms when measured, and the
    error (first lines) when it was skipped."""

    index: int
    config: dict[str, Any]
    status: str
    latency: float | None = None
    error: str = ""
    compile_seconds: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    def describe(self) -> str:
        what = f"{self.latency:.4g} ms" if self.ok and self.latency is not None else self.status
        detail = f": {self.error.splitlines()[0]}" if self.error else ""
        return f"#{self.index} {self.config}: {what}{detail}"


@dataclass
class AutotuneResult:
    """The best configuration (`config`, `latency` in ms, `kernel`) and every candidate (`candidates`).

    `ref_latency`: the reference program's latency (ms) when one was given; `from_cache`: the best config
    came from an earlier tuning stored in the disk cache (`key`), so nothing was compiled or measured but
    the best kernel (`from_database`: the stored tuning was the tuning database's); `func`: the best
    candidate's PrimFunc; `libcode`: its device source.
    """

    latency: float | None
    config: dict[str, Any] | None
    ref_latency: float | None = None
    libcode: str | None = None
    func: PrimFunc | None = None
    kernel: Any = None
    candidates: list[CandidateResult] = field(default_factory=list)
    key: str | None = None
    from_cache: bool = False
    from_database: bool = False

    def summary(self) -> str:
        """One line per candidate, the best marked with `*`."""
        best = next((c.index for c in self.candidates if c.config == self.config and c.ok), None)
        lines = [("* " if c.index == best else "  ") + c.describe() for c in self.candidates]
        origin = " (from the tuning database)" if self.from_database else ""
        origin = origin or (" (from the tuning cache)" if self.from_cache else "")
        return f"best: {self.config} at {self.latency} ms{origin}\n" + "\n".join(lines)


class TunedKernel:
    """The kernel an autotuning chose: calls and attributes go to the `Kernel`; `config`, `latency` and
    `ref_latency` say how it was chosen (TileLang's tuned kernels carry them too), `tuning` is the whole
    AutotuneResult."""

    def __init__(self, kernel: Kernel, tuning: AutotuneResult) -> None:
        self.kernel = kernel
        self.tuning = tuning

    @property
    def config(self) -> dict[str, Any] | None:
        return self.tuning.config

    @property
    def latency(self) -> float | None:
        return self.tuning.latency

    @property
    def ref_latency(self) -> float | None:
        return self.tuning.ref_latency

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.kernel(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name in ("kernel", "tuning"):  # not set yet (copying, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.kernel, name)

    def __repr__(self) -> str:
        return (
            f"TunedKernel({self.kernel.artifact.function_name}, config={self.config}, latency={self.latency})"
        )
