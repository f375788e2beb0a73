"""`tilecraft.compile` and `@tilecraft.jit`, in TileLang's lazy and eager styles."""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import textwrap
import threading
from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any

from tilecraft import settings
from tilecraft.backend.context import BackendContext
from tilecraft.errors import ArgumentError, OptionError, TilecraftError, short_repr
from tilecraft.ir import expr as E
from tilecraft.ir.dtype import DataType
from tilecraft.ir.function import OUT_IDX_ATTR, WORKSPACE_ATTR, PrimFunc
from tilecraft.ir.visitor import substitute
from tilecraft.jit.kernel import Kernel
from tilecraft.jit.lower import lower_artifact, resolve_context
from tilecraft.language.parser.source import parse_python
from tilecraft.runtime.arrays import as_array_arg, is_array


def _normalize_out_idx(
    out_idx: int | Sequence[int] | None, func: PrimFunc, name: str | None = None
) -> tuple[int, ...]:
    """`out_idx` as a tuple, checked against `func`'s parameters (an error names the kernel `name`)."""
    returned = tuple(func.attr(OUT_IDX_ATTR, ()) or ())
    if out_idx is None:
        return returned
    indices = (out_idx,) if isinstance(out_idx, int) else tuple(out_idx)
    if returned:
        raise OptionError(
            f"Out index conflict: kernel {name or func.name} returns its T.empty outputs (parameters "
            f"{', '.join(str(i) for i in returned)}), and out_idx={out_idx!r} names outputs too; drop out_idx "
            "(a kernel's returned tensors are its outputs)"
        )
    _check_out_idx(indices, func, name or func.name)
    return indices


def _check_out_idx(indices: tuple[int, ...], func: PrimFunc, name: str) -> None:
    """Before compiling: every index names a parameter the caller passes (T.alloc_global workspaces,
    the last parameters, are not among them)."""
    names = [p.name for p in func.params[: len(func.params) - len(func.attr(WORKSPACE_ATTR, ()) or ())]]
    n = len(names)
    for i in indices:
        if isinstance(i, bool) or not isinstance(i, int) or not -n <= i < n:
            raise ArgumentError(
                f"out_idx {i!r} is out of range: kernel {name} has {n} parameters ({', '.join(names)}), "
                f"numbered 0 to {n - 1} (or -{n} to -1 from the end); out_idx=[-1] makes the last one the output"
            )


def compile(  # noqa: A001 - TileLang's name
    func: PrimFunc,
    out_idx: int | Sequence[int] | None = None,
    target: Any = "auto",
    target_host: Any = None,
    execution_backend: str = "auto",
    pass_configs: Mapping[str, Any] | None = None,
    compile_flags: Sequence[str] | None = None,
    ctx: BackendContext | None = None,
) -> Kernel:
    """Lower, build and load `func`; the result is a callable Kernel. Cached on disk by content."""
    if not isinstance(func, PrimFunc):
        raise TilecraftError(
            f"tilecraft.compile expects a PrimFunc (from @T.prim_func), got {type(func).__name__}"
        )
    if func.attr("tilecraft.consts"):
        names = ", ".join(v.name for v in func.attr("tilecraft.consts"))
        raise TilecraftError(
            f"kernel {func.name} still has compile-time symbols ({names}); call it through @tilecraft.jit"
        )
    indices = _normalize_out_idx(out_idx, func)
    ctx = resolve_context(target, target_host, execution_backend, ctx)
    artifact = lower_artifact(func, ctx, pass_configs, compile_flags)
    backend = ctx.execution_backend()
    loaded = backend.load(backend.build(artifact, ctx))
    return Kernel(loaded, ctx, indices)


def _is_eager(func) -> bool:
    """Eager style: the function body itself opens `with T.Kernel(...)` (outside nested functions)."""
    try:
        tree = parse_python(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return False
    fn = tree.body[0]
    stack = list(getattr(fn, "body", []))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.With) and any(_is_kernel_call(i.context_expr) for i in node.items):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _is_kernel_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Kernel"


def _freeze(value: Any) -> Any:
    """A hashable key for memoizing on argument values."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


class _Memo:
    """A dict of values made on first use, safe to share between threads: each key is made once (a
    lock per key), while different keys are made at the same time."""

    def __init__(self) -> None:
        self._values: dict[Any, Any] = {}
        self._locks: dict[Any, threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        value = self._values.get(key)
        if value is not None:
            return value
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            value = self._values.get(key)
            if value is None:  # not made by the thread that held the lock before us
                value = self._values[key] = make()
        return value


class JITFunction:
    """What `@tilecraft.jit` returns; see `jit`. Safe to call from several threads: each specialization
    is compiled once, by the first thread that needs it; the others wait for it."""

    def __init__(self, func, options: dict[str, Any], verbose: bool = False) -> None:
        self.func = func
        self.options = options
        self.verbose = verbose
        self.eager = _is_eager(func)
        self.signature = inspect.signature(func)
        self._kernels = _Memo()
        self._parsed = _Memo()
        functools.update_wrapper(self, func)

    def __reduce__(self) -> str:
        """Pickled by reference, as the function it decorates is: a process that unpickles it imports its
        module and finds it there (a function defined inside another cannot be pickled; pickle the Kernel
        it returns instead, which travels by value)."""
        return self.__qualname__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            if self.eager:
                return self._call_eager(args, kwargs)
            key = (_freeze(args), _freeze(kwargs))
            return self._kernels.get(key, lambda: self._compile_lazy(args, kwargs))
        except TilecraftError as err:
            # Said on purpose (a wrong argument, a mistake in the kernel, located in its message): the
            # traceback ends at the caller's line, not in tilecraft's frames (a cause the error chains,
            # such as an internal compiler error's, keeps its own).
            raise err.with_traceback(None)  # noqa: B904 - the error says what went wrong; no internal frames

    def _compile_lazy(self, args: tuple, kwargs: dict[str, Any]) -> Kernel:
        try:
            func = self.func(*args, **kwargs)
        except Exception as err:
            arrays = self._array_arguments(args, kwargs)
            if not arrays:
                raise
            raise ArgumentError(self._arrays_to_factory(arrays, err)) from None
        if not isinstance(func, PrimFunc):
            raise TilecraftError(
                f"@tilecraft.jit function {self.func.__name__} returned {type(func).__name__}; in the lazy "
                "style it must return a @T.prim_func, in the eager style its body opens `with T.Kernel(...)`"
            )
        return self._compile(func)

    def _array_arguments(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The arguments of a factory call that are arrays, by parameter name."""
        try:
            bound = self.signature.bind(*args, **kwargs).arguments
        except TypeError:
            bound = {f"argument {i + 1}": a for i, a in enumerate(args)} | kwargs
        return {name: value for name, value in bound.items() if is_array(value)}

    def _arrays_to_factory(self, arrays: Mapping[str, Any], err: Exception) -> str:
        name = self.func.__name__
        params = ", ".join(self.signature.parameters)
        given = "; ".join(f"{k} = {short_repr(v)}" for k, v in arrays.items())
        return (
            f"{name}({params}) makes a kernel from sizes and options, but was given arrays ({given}) and "
            f"failed ({type(err).__name__}). Make the kernel, then call it with the arrays: "
            f"kernel = {name}(<sizes>); kernel(<arrays>)"
        )

    def _compile(self, func: PrimFunc) -> Kernel:
        # `verbose=True` is TILECRAFT_VERBOSE for this function's compiles: the lowering time and the
        # notes of the passes (process-wide while it compiles, as every setting override is).
        verbosity = settings.override(TILECRAFT_VERBOSE=True) if self.verbose else contextlib.nullcontext()
        _normalize_out_idx(self.options["out_idx"], func, self.func.__name__)  # before compiling
        with verbosity:
            kernel = compile(func, **self.options)
        kernel.name = self.func.__name__  # what a call's errors name (the PrimFunc is usually `main`)
        return kernel

    # ------------------------------------------------------------------ eager style

    def _parse_eager(self, values: Mapping[str, Any], tensors: Sequence[str]) -> PrimFunc:
        key = (_freeze(dict(values)), tuple(tensors))
        return self._parsed.get(key, lambda: self._parse(values, tensors))

    def _parse(self, values: Mapping[str, Any], tensors: Sequence[str]) -> PrimFunc:
        from tilecraft.language.parser.core import EagerParam, parse_function

        eager = {name: EagerParam(True) for name in tensors}
        eager.update({name: EagerParam(False, v) for name, v in values.items()})
        return parse_function(self.func, eager)

    def _specialize(
        self, func: PrimFunc, consts: Mapping[str, int], divisible: tuple[str, ...] = ()
    ) -> Kernel:
        symbols = func.attr("tilecraft.consts", ()) or ()
        missing = [v.name for v in symbols if v.name not in consts]
        if missing:
            raise ArgumentError(
                f"{self.func.__name__}: no value for compile-time symbol(s) {', '.join(missing)}"
            )
        # id(func) is stable: every parsed func stays referenced by self._parsed.
        key = (id(func), tuple((v.name, int(consts[v.name])) for v in symbols), divisible)
        return self._kernels.get(key, lambda: self._compile_specialized(func, symbols, consts, divisible))

    def _compile_specialized(
        self, func: PrimFunc, symbols, consts: Mapping[str, int], divisible: tuple[str, ...] = ()
    ) -> Kernel:
        mapping = {v: E.const(int(consts[v.name]), v.dtype) for v in symbols}
        specialized = substitute(func, mapping).with_attr("tilecraft.consts", ())
        if divisible:
            facts = tuple((v, DIM_MULTIPLE) for v in specialized.symbolic_dims if v.name in divisible)
            specialized = specialized.with_attr("tilecraft.divisible_dims", facts)
        return self._compile(specialized)

    def _split_args(self, args, kwargs) -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ArgumentError(f"{self.func.__name__}: {exc}") from None
        bound.apply_defaults()
        tensors = {k: v for k, v in bound.arguments.items() if is_array(v)}
        values = {k: v for k, v in bound.arguments.items() if k not in tensors}
        return tensors, values

    def _call_eager(self, args, kwargs) -> Any:
        kernel, func, tensors = self._eager_kernel(args, kwargs)
        _, values = self._split_args(args, kwargs)
        # the arrays, and the values of the scalar parameters (annotated with a dtype: `m: T.int32`)
        inputs = [tensors[p.name] if p.name in tensors else values[p.name] for p in func.params
                  if p.name in tensors or (isinstance(p, E.Var) and p.name in values)]  # fmt: skip
        return kernel(*inputs)

    @functools.cached_property
    def _scalar_params(self) -> frozenset[str]:
        """The parameters annotated with a dtype (`m: T.int32`), whose values a call passes to the kernel
        at run time rather than to the parse; annotations Python left as text are resolved where they can
        be (one that cannot is parsed with its value, and still passed)."""
        try:
            hints = inspect.get_annotations(self.func, eval_str=True)
        except Exception:  # noqa: BLE001 - a name only the defining scope knows: read them one by one
            hints = {k: v for k, v in inspect.get_annotations(self.func).items() if not isinstance(v, str)}
        return frozenset(k for k, v in hints.items() if isinstance(v, DataType))

    def _eager_kernel(self, args, kwargs) -> tuple[Kernel, PrimFunc, dict[str, Any]]:
        """The Kernel a call with these arguments runs: arrays are tensors, the rest Python values. It is
        specialized on the T.const symbols' values and on which dynamic dims are multiples of
        DIM_MULTIPLE (as Triton specializes integer arguments): a kernel whose rows are provably 16-byte
        multiples gets 16-byte copies and TMA, and another call's sizes get a kernel of their own."""
        tensors, values = self._split_args(args, kwargs)
        # the kernel's scalar parameters are not part of the parse (each value would parse again)
        func = self._parse_eager({k: v for k, v in values.items() if k not in self._scalar_params}, list(tensors))
        consts = _consts_from_shapes(func, tensors)
        return self._specialize(func, consts, _divisible_dims(func, tensors, consts)), func, tensors

    def get_tir(self, *args: Any, **kwargs: Any) -> PrimFunc:
        """TileLang's `JITImpl.get_tir`: the PrimFunc for these arguments, not compiled.

        Lazy style: what the factory returns. Eager style: the kernel parsed with the given Python
        parameters (keyword arguments); a keyword naming a compile-time symbol (`T.const`) gives it its
        value, as TileLang's `get_tir(N=64)` does; the other symbols stay symbolic.
        """
        if not self.eager:
            func = self.func(*args, **kwargs)
            if not isinstance(func, PrimFunc):
                raise TilecraftError(
                    f"@tilecraft.jit function {self.func.__name__} returned {type(func).__name__}; "
                    "get_tir needs a @T.prim_func"
                )
            return func
        if args:
            raise ArgumentError(f"{self.func.__name__}.get_tir: give the Python parameters by keyword")
        names = set(self.signature.parameters)
        values = {k: v for k, v in kwargs.items() if k in names}
        for name, p in self.signature.parameters.items():
            if name not in values and p.default is not inspect.Parameter.empty:
                values[name] = p.default
        func = self._parse_eager(values, [n for n in self.signature.parameters if n not in values])
        return self._bind_symbols(func, {k: v for k, v in kwargs.items() if k not in names})

    def _bind_symbols(self, func: PrimFunc, consts: Mapping[str, Any]) -> PrimFunc:
        """`func` with the compile-time symbols named in `consts` replaced by their values."""
        symbols = func.attr("tilecraft.consts", ()) or ()
        unknown = sorted(set(consts) - {v.name for v in symbols})
        if unknown:
            raise ArgumentError(
                f"{self.func.__name__}.get_tir: no parameter or compile-time symbol {', '.join(unknown)}; "
                f"parameters: {', '.join(self.signature.parameters)}; "
                f"symbols: {', '.join(v.name for v in symbols) or 'none'}"
            )
        if not consts:
            return func
        mapping = {
            v: E.const(_symbol_value(v.name, consts[v.name]), v.dtype) for v in symbols if v.name in consts
        }
        left = tuple(v for v in symbols if v.name not in consts)
        return substitute(func, mapping).with_attr("tilecraft.consts", left)

    def get_kernel_source(self, *args: Any, **kwargs: Any) -> str:
        """TileLang's `JITImpl.get_kernel_source`: the device source of the Kernel these arguments make
        (lazy: the factory's arguments; eager: as `compile` with keywords only, else the arguments of a
        call: arrays and Python values, positional or by keyword)."""
        if not self.eager:
            return self(*args, **kwargs).get_kernel_source()
        if not args and not any(is_array(v) for v in kwargs.values()):
            return self.compile(**kwargs).get_kernel_source()
        return self._eager_kernel(args, kwargs)[0].get_kernel_source()

    def par_compile(self, configs: Any, num_workers: int | None = None,
                    ignore_error: bool = False) -> list[Kernel | None]:  # fmt: skip
        """TileLang's `JITImpl.par_compile`: the Kernel of each config (a dict of keyword arguments, or a
        tuple of positional ones), compiled in threads (tilecraft/jit/parallel.py), in the configs' order."""
        from tilecraft.jit.parallel import compile_all

        jobs = []
        for config in configs:
            if isinstance(config, dict):
                jobs.append(functools.partial(self.compile, **config))
            elif isinstance(config, tuple):
                names = list(self.signature.parameters)
                jobs.append(functools.partial(self.compile, **dict(zip(names, config, strict=False))))
            else:
                raise ArgumentError(f"{self.func.__name__}.par_compile: a config is a dict or a tuple, got "
                                    f"{type(config).__name__}")  # fmt: skip
        return compile_all(jobs, num_workers, ignore_error)

    def compile(self, **kwargs: Any) -> Kernel:
        """Eager style: the Kernel for the given Python parameters and compile-time symbol values."""
        if not self.eager:
            return self(**kwargs)
        names = set(self.signature.parameters)
        values = {k: v for k, v in kwargs.items() if k in names}
        consts = {k: v for k, v in kwargs.items() if k not in names}
        for name, p in self.signature.parameters.items():
            if name not in values and p.default is not inspect.Parameter.empty:
                values[name] = p.default
        tensors = [n for n in self.signature.parameters if n not in values]
        return self._specialize(self._parse_eager(values, tensors), consts)


def _symbol_value(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"compile-time symbol {name} takes an int, got {value!r}")
    return value


DIM_MULTIPLE = 16
"""The divisibility a dynamic dim is specialized on: 16 elements make rows of any dtype 16-byte multiples."""


def _divisible_dims(func: PrimFunc, tensors: Mapping[str, Any], consts: Mapping[str, int]) -> tuple[str, ...]:
    """The dynamic dims (not T.const symbols) that stand alone in an array's shape with a size that is a
    multiple of DIM_MULTIPLE, by name, sorted. The call then checks every shape against the kernel."""
    dynamic = {id(v) for v in func.symbolic_dims if v.name not in consts}
    found: set[str] = set()
    for p in func.buffer_params:
        if p.name not in tensors:
            continue
        shape = as_array_arg(tensors[p.name], p.name).shape
        for dim, size in zip(p.shape, shape):
            if id(dim) in dynamic and size % DIM_MULTIPLE == 0 and size > 0:
                found.add(dim.name)
    return tuple(sorted(found))


def _consts_from_shapes(func: PrimFunc, tensors: Mapping[str, Any]) -> dict[str, int]:
    arrays = {p.name: as_array_arg(tensors[p.name], p.name) for p in func.buffer_params if p.name in tensors}
    # packed 4-bit data given as bytes (not as the packed dtype itself) holds two values a byte
    bytes_of_packed = {p.name for p in func.buffer_params if p.name in arrays and arrays[p.name].dtype != p.dtype}
    return consts_from_shapes(func, {name: arr.shape for name, arr in arrays.items()}, bytes_of_packed)


def consts_from_shapes(
    func: PrimFunc, shapes: Mapping[str, tuple[int, ...]], bytes_of_packed: Container[str]
) -> dict[str, int]:
    """The sizes of `func`'s T.const symbols, read from the shapes of the arrays given for its buffer
    parameters (by name; a parameter not in `shapes` is skipped). A packed 4-bit parameter named in
    `bytes_of_packed` is given as bytes, two values each, so a symbol its last dim binds is twice the
    array's. ArgumentError for a wrong rank, or a symbol bound to two sizes."""
    symbols = {id(v) for v in func.attr("tilecraft.consts", ()) or ()}
    consts: dict[str, int] = {}
    for p in func.buffer_params:
        shape = shapes.get(p.name)
        if shape is None:
            continue
        if len(shape) != p.ndim:
            raise ArgumentError(f"parameter {p.name!r}: expected {p.ndim} dims, got shape {shape}")
        if p.dtype.is_packed and shape and p.name in bytes_of_packed:
            shape = (*shape[:-1], 2 * shape[-1])
        for dim, size in zip(p.shape, shape):
            if id(dim) in symbols:
                seen = consts.setdefault(dim.name, size)
                if seen != size:
                    raise ArgumentError(
                        f"parameter {p.name!r}: {dim.name} is {size} here but {seen} in an earlier tensor"
                    )
    return consts


def jit(
    func=None,
    *,
    out_idx: int | Sequence[int] | None = None,
    target: Any = "auto",
    target_host: Any = None,
    execution_backend: str = "auto",
    pass_configs: Mapping[str, Any] | None = None,
    compile_flags: Sequence[str] | None = None,
    verbose: bool = False,
):
    """Decorate a kernel factory (lazy: it returns a @T.prim_func) or a kernel body (eager style).

    Lazy: `kernel = f(1024, 1024)` returns a compiled Kernel, memoized per argument values.
    Eager: `c = f(a, b, 128)` compiles once per specialization (T.const values, Python params) and runs;
    `f.compile(M=..., block_M=...)` returns the Kernel.
    `verbose=True` prints what TILECRAFT_VERBOSE=1 prints while this function's kernels compile (and
    are tuned, under `tilecraft.autotune`): the lowering time and the passes' notes.
    """
    options = dict(out_idx=out_idx, target=target, target_host=target_host, execution_backend=execution_backend,
                   pass_configs=pass_configs, compile_flags=compile_flags)  # fmt: skip
    if func is None:
        return lambda f: JITFunction(f, options, verbose)
    return JITFunction(func, options, verbose)
