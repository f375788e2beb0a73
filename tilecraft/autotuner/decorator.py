"""`@tilecraft.autotune(configs=...)` above `@tilecraft.jit`: tune on the first call, per argument set.

    @tilecraft.autotune(configs=[dict(block_M=32), dict(block_M=64)], warmup=3, rep=10)
    @tilecraft.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=64, ...):        # lazy style: returns a @T.prim_func
        ...

    kernel = matmul(1024, 1024, 1024)            # tunes block_M, returns the best kernel
    kernel.config, kernel.latency
    matmul(1024, 1024, 1024, block_M=32)         # a tuned parameter given: no tuning, as TileLang does

In the eager style (the body opens `with T.Kernel(...)`), `f(a, b)` tunes for the tensors' shapes and
returns the best kernel's outputs on them; `f.compile(M=..., ...)` tunes and returns the kernel.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tilecraft.autotuner.args import CompileArgs, ProfileArgs
from tilecraft.autotuner.capture import get_autotune_inputs
from tilecraft.autotuner.configs import resolve_configs, tuned_names
from tilecraft.autotuner.record import canonical, function_identity
from tilecraft.autotuner.result import AutotuneResult, ConfigError
from tilecraft.autotuner.session import Factory, RunOptions, Session
from tilecraft.errors import ArgumentError
from tilecraft.ir import expr as E
from tilecraft.ir.function import PrimFunc
from tilecraft.ir.visitor import substitute
from tilecraft.jit.api import JITFunction, _consts_from_shapes
from tilecraft.profiler.supply import TensorSupplyType
from tilecraft.runtime.arrays import is_array

_RETURN_KERNEL = "__return_kernel"


def _memo_key(value: Any) -> Any:
    """A hashable key for the arguments of one tuning (arrays by dtype and shape)."""
    try:
        return repr(canonical(value))
    except Exception:  # noqa: BLE001 - objects without a stable identity are memoized by identity
        return repr(value)


class AutoTuneImpl:
    """What `@autotune(...)` returns: tunes the wrapped `@tilecraft.jit` function once per argument set."""

    def __init__(self, jit_impl: JITFunction, configs: Any, profile: ProfileArgs, options: RunOptions,
                 do_not_specialize: Sequence[str] | None = None) -> None:  # fmt: skip
        self.jit_impl = jit_impl
        self.configs = configs
        self.profile = profile
        self.options = options
        self.do_not_specialize = tuple(do_not_specialize or ())
        self._results: dict[Any, AutotuneResult] = {}
        self._lock = threading.Lock()
        self.__wrapped__ = jit_impl.func
        self.__name__ = getattr(jit_impl.func, "__name__", "kernel")
        self.__doc__ = jit_impl.func.__doc__

    # ------------------------------------------------------------------ calls

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return_kernel = bool(kwargs.pop(_RETURN_KERNEL, False))
        if self._tuned_given(args, kwargs):
            return self._direct(args, kwargs, return_kernel)
        result = self.tune(*args, **kwargs)
        if not self.jit_impl.eager or return_kernel or not self._has_arrays(args, kwargs):
            return result.kernel
        return self._run_eager(result, args, kwargs)

    def compile(self, *args: Any, **kwargs: Any) -> Any:
        """The best kernel for these arguments (tuning on the first call)."""
        return self(*args, **kwargs, **{_RETURN_KERNEL: True})

    def tune(self, *args: Any, **kwargs: Any) -> AutotuneResult:
        """The tuning for these arguments: run once, then remembered (and kept in the disk cache)."""
        key = self._key(args, kwargs)
        with self._lock:
            result = self._results.get(key)
            if result is None:
                result = self._session(args, kwargs).run()
                self._results[key] = result
        return result

    def _direct(self, args: tuple, kwargs: dict, return_kernel: bool) -> Any:
        """A tuned parameter was given: compile (and run) exactly what was asked, without tuning."""
        if self.jit_impl.eager and return_kernel:
            return self.jit_impl.compile(**self._bind(args, kwargs))
        return self.jit_impl(*args, **kwargs)

    def _run_eager(self, result: AutotuneResult, args: tuple, kwargs: dict) -> Any:
        tensors = {k: v for k, v in self._bind(args, kwargs).items() if is_array(v)}
        kernel = result.kernel
        return kernel(*[tensors[p.name] for p in kernel.params if p.name in tensors])

    # ------------------------------------------------------------------ arguments

    def _bind(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """The arguments by name (an eager `compile` also takes compile-time symbols by keyword)."""
        signature = self.jit_impl.signature
        names = set(signature.parameters)
        extra = {k: v for k, v in kwargs.items() if k not in names}
        try:
            bound = signature.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in names})
        except TypeError as err:
            raise ArgumentError(f"{self.__name__}: {err}") from None
        return {**bound.arguments, **extra}

    def _tuned_given(self, args: tuple, kwargs: dict) -> bool:
        configs = resolve_configs(self.configs, args, kwargs)
        return bool(tuned_names(configs) & set(self._bind(args, kwargs)))

    @staticmethod
    def _has_arrays(args: tuple, kwargs: dict) -> bool:
        return any(is_array(v) for v in (*args, *kwargs.values()))

    def _specialized_on(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """The arguments a tuning is for: all but those in `do_not_specialize` (TileLang's rule)."""
        return {k: v for k, v in self._bind(args, kwargs).items() if k not in self.do_not_specialize}

    def _key(self, args: tuple, kwargs: dict) -> Any:
        return _memo_key(sorted(self._specialized_on(args, kwargs).items()))

    # ------------------------------------------------------------------ the tuning

    def _session(self, args: tuple, kwargs: dict) -> Session:
        options = self.jit_impl.options
        compile_args = CompileArgs(options.get("out_idx"), options.get("target", "auto"),
                                   options.get("execution_backend", "auto"), options.get("target_host"),
                                   self.jit_impl.verbose, options.get("pass_configs"), options.get("compile_flags"))  # fmt: skip
        factory = Factory(self._elaborator(args, kwargs), self.jit_impl.func, self.__name__,
                          lambda: self._identity(args, kwargs), (args, kwargs),
                          lambda: self._specialized_on(args, kwargs))  # fmt: skip
        return Session(factory, compile_args, self.profile, self.options, self.configs, get_autotune_inputs())

    def _identity(self, args: tuple, kwargs: dict) -> list[Any]:
        """The factory and the arguments the tuning is for, as plain data (the tuning cache's key)."""
        return [function_identity(self.jit_impl.func), canonical(self._specialized_on(args, kwargs))]

    def _elaborator(self, args: tuple, kwargs: dict) -> Callable[[dict[str, Any]], PrimFunc]:
        jit = self.jit_impl
        if not jit.eager:
            return lambda config: jit.func(*args, **{**kwargs, **config})
        if self._has_arrays(args, kwargs):
            return lambda config: _eager_call_func(jit, args, {**kwargs, **config})
        return lambda config: _eager_compile_func(jit, {**self._bind(args, kwargs), **config})


def _specialized(jit: JITFunction, func: PrimFunc, consts: Mapping[str, int]) -> PrimFunc:
    """`func` with its compile-time symbols (T.const) replaced by their values (as JITFunction does)."""
    symbols = func.attr("tilecraft.consts", ()) or ()
    missing = [v.name for v in symbols if v.name not in consts]
    if missing:
        raise ArgumentError(f"{jit.func.__name__}: no value for compile-time symbol(s) {', '.join(missing)}")
    mapping = {v: E.const(int(consts[v.name]), v.dtype) for v in symbols}
    return substitute(func, mapping).with_attr("tilecraft.consts", ())


def _eager_call_func(jit: JITFunction, args: tuple, kwargs: dict) -> PrimFunc:
    """The eager kernel for a call with tensors: symbols from the tensors' shapes."""
    tensors, values = jit._split_args(args, kwargs)
    func = jit._parse_eager(values, list(tensors))
    return _specialized(jit, func, _consts_from_shapes(func, tensors))


def _eager_compile_func(jit: JITFunction, named: dict[str, Any]) -> PrimFunc:
    """The eager kernel for `compile(**named)`: Python parameters by name, symbols by keyword."""
    parameters = jit.signature.parameters
    values = {k: v for k, v in named.items() if k in parameters}
    for name, p in parameters.items():
        if name not in values and p.default is not inspect.Parameter.empty:
            values[name] = p.default
    consts = {k: v for k, v in named.items() if k not in parameters}
    tensors = [n for n in parameters if n not in values]
    return _specialized(jit, jit._parse_eager(values, tensors), consts)


def autotune(
    func: Any = None,
    *,
    configs: Any = None,
    warmup: int = 25,
    rep: int = 100,
    timeout: float | None = 100,
    supply_type: TensorSupplyType = TensorSupplyType.Auto,
    ref_prog: Callable[..., Any] | None = None,
    supply_prog: Callable[..., Any] | None = None,
    rtol: float = 1e-2,
    atol: float = 1e-2,
    max_mismatched_ratio: float = 0.01,
    skip_check: bool = False,
    manual_check_prog: Callable[..., Any] | None = None,
    cache_input_tensors: bool = False,
    do_not_specialize: Sequence[str] | None = None,
    early_stop: bool = False,
    early_stop_factor: float = 2.0,
    retune: bool | None = None,
    workers: int | None = None,
    executor: Any = None,
    db: Any = None,
) -> Callable[[JITFunction], AutoTuneImpl]:
    """Tune a `@tilecraft.jit` function over `configs` (TileLang's `@tilelang.autotune`); place it above
    `@tilecraft.jit`. `warmup`/`rep`: calls per measurement; `timeout`: seconds per candidate (compiling,
    and timing); `retune`: ignore the tuning cache; `workers`: compile processes (0: in this process);
    `executor`: "local", "ray" or an Executor (None: TILECRAFT_AUTOTUNE_EXECUTOR, else local); `db`: a
    SQLite tuning database to read tunings from and write them to (None: TILECRAFT_TUNING_DB).
    See AutoTuner.set_profile_args for the checking options."""
    if func is not None:
        raise ConfigError(
            "@autotune needs its configurations: write @tilecraft.autotune(configs=[...]) above @tilecraft.jit"
        )
    if configs is None:
        raise ConfigError("@autotune(configs=...) is required: a list of dicts, or a function returning one")
    if early_stop and early_stop_factor < 1.0:
        raise ConfigError(f"early_stop_factor must be >= 1.0, got {early_stop_factor}")
    profile = ProfileArgs(warmup, rep, timeout or 0, "event", supply_type, ref_prog, supply_prog, rtol, atol,
                          max_mismatched_ratio, skip_check, manual_check_prog, cache_input_tensors)  # fmt: skip
    options = RunOptions(warmup, rep, timeout, early_stop_factor if early_stop else None, retune, workers,
                         executor, db)  # fmt: skip

    def decorate(impl: Any) -> AutoTuneImpl:
        if not isinstance(impl, JITFunction):
            raise ConfigError(
                f"@autotune decorates a @tilecraft.jit function (write it above @tilecraft.jit), got "
                f"{type(impl).__name__}"
            )
        return AutoTuneImpl(impl, configs, profile, options, do_not_specialize)

    return decorate


__all__ = ["AutoTuneImpl", "autotune"]
