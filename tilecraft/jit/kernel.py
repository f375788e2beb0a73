"""`Kernel`: a built kernel you call with arrays.

Every call is validated against the parameters: dtype (native byte order), rank, static and symbolic
dims (consistent across parameters, and within their dtype's range), strides, device, writable memory
for every buffer the kernel writes, and scalars of the right kind within their dtype's range. Symbolic
dims are bound from the arrays' shapes without recompiling; outputs named by `out_idx` are allocated
with the inputs' array library and device. Packed 4-bit parameters take their bytes (runtime/packed.py).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecraft import settings
from tilecraft._modules import imported
from tilecraft.backend.context import BackendContext
from tilecraft.errors import ArgumentError, TilecraftError, UnpicklingKernelError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.eval import evaluate
from tilecraft.jit.fastpath import MISS
from tilecraft.jit.scalars import check_dim, check_scalar
from tilecraft.runtime import packed
from tilecraft.runtime.arrays import ArrayArg, as_array_arg, check_alignment
from tilecraft.runtime.artifact import ParamInfo
from tilecraft.runtime.dlpack import as_callers_array
from tilecraft.runtime.launch import Loaded


@dataclass(frozen=True)
class _DimRule:
    """How one dim (or stride) of a buffer parameter is checked or bound."""

    axis: int
    static: int | None
    var: E.Var | None
    expr: E.Expr | None


def _rules(exprs: Sequence[E.Expr]) -> tuple[_DimRule, ...]:
    rules = []
    for axis, e in enumerate(exprs):
        value = E.const_value(e)
        if isinstance(value, int):
            rules.append(_DimRule(axis, value, None, None))
        elif isinstance(e, E.Var):
            rules.append(_DimRule(axis, None, e, None))
        else:
            rules.append(_DimRule(axis, None, None, e))
    return tuple(rules)


class _ParamCheck:
    """The precomputed checks of one buffer parameter."""

    def __init__(self, info: ParamInfo) -> None:
        self.info = info
        self.shape = _rules(info.shape)
        self.strides = _rules(info.strides) if info.strides else None
        self.packed = info.dtype.is_packed

    def bind(self, arg: ArrayArg, env: dict, deferred: list, last_known: bool = True) -> None:
        """Check `arg` (a packed parameter's logical view: `last_known` False when its last dim is
        bound by `packed_last` instead) and bind the dims it carries."""
        info = self.info
        if arg.dtype != info.dtype and not _byte_codes(info.dtype, arg.dtype):
            raise ArgumentError(
                f"parameter {info.name!r}: expected dtype {info.dtype}, got {arg.dtype}; "
                f"{_conversion_hint(info.name, info.dtype, arg.library)}"
            )
        self.check_rank(arg)
        rules = self.shape if last_known else self.shape[:-1]
        self._bind_dims(rules, arg.shape, "shape", env, deferred, arg)
        if self.strides is not None:
            self._bind_dims(self.strides, arg.strides, "strides", env, deferred, arg)

    def _bind_dims(self, rules, actual, what: str, env: dict, deferred: list, arg: ArrayArg) -> None:
        name = self.info.name
        for rule in rules:
            got = actual[rule.axis]
            if rule.static is not None:
                if got != rule.static:
                    raise ArgumentError(
                        f"parameter {name!r}: {what}[{rule.axis}] must be {rule.static}, got {got} "
                        f"(expected {what} {_fmt(self.info.shape if what == 'shape' else self.info.strides)}, "
                        f"got {tuple(actual)})"
                    )
            elif rule.var is not None:
                bound = env.get(rule.var)
                if bound is None:
                    check_dim(rule.var.name, rule.var.dtype, got, f"parameter {name!r}: {what}[{rule.axis}]")
                    env[rule.var] = got
                elif bound != got:
                    raise ArgumentError(
                        f"parameter {name!r}: {what}[{rule.axis}] is {got}, but {rule.var.name} = {bound} "
                        "from an earlier parameter"
                    )
            else:
                deferred.append((rule, got, name, what))

    def check_rank(self, arg: ArrayArg) -> None:
        info = self.info
        if len(arg.shape) != len(info.shape):
            raise ArgumentError(
                f"parameter {info.name!r}: expected {len(info.shape)} dims {_fmt(info.shape)}, got shape {arg.shape}"
            )

    def packed_last(self, nbytes: int, env: dict, deferred: list, pending: list) -> int:
        """The last dim of packed data held in rows of `nbytes` bytes: N or N - 1 of 2 * nbytes values, as
        the parameter's declared dim says (a symbolic one that no other array binds is even: 2 * nbytes)."""
        rule, name = self.shape[-1], self.info.name
        if rule.static is not None:
            _check_bytes(name, rule.static, nbytes)
            return rule.static
        if rule.var is not None:
            bound = env.get(rule.var)
            if bound is None:
                pending.append((rule.var, nbytes, name))
                return 2 * nbytes
            _check_bytes(name, bound, nbytes)
            return bound
        deferred.append((rule, nbytes, name, "bytes"))
        return 2 * nbytes

    def contiguous(self, arg: ArrayArg) -> bool:
        if 0 in arg.shape:
            return True
        expected = 1
        for size, stride in zip(reversed(arg.shape), reversed(arg.strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


def _conversion_hint(name: str, dtype: dt.DataType, library: str) -> str:
    """How the caller converts an array of `library` to `dtype` (a copy)."""
    if library == "torch":
        return f"convert it first: {name}.to(torch.{dtype})"
    try:
        np_dtype = dt.numpy_dtype(dtype)
    except Exception:  # noqa: BLE001 - a dtype numpy cannot hold: say what to pass, not how
        return f"pass a {dtype} array"
    scalar = np_dtype.type  # numpy.float32, ml_dtypes.bfloat16 ...
    return f"convert it first: {name}.astype({scalar.__module__.split('.')[0]}.{scalar.__name__})"


def _contiguous_copy(name: str, library: str) -> str:
    return f"{name}.contiguous()" if library == "torch" else f"numpy.ascontiguousarray({name})"


def _byte_codes(dtype: dt.DataType, given: dt.DataType) -> bool:
    """uint8 bytes given for a one-byte microscaling format (float6, float8_e8m0fnu): their codes."""
    return dtype.kind == "microfloat" and not dtype.is_packed and given == dt.uint8


def _check_bytes(name: str, n: int, nbytes: int) -> None:
    if (n + 1) // 2 != nbytes:
        raise ArgumentError(
            f"parameter {name!r}: rows of {n} packed 4-bit values take {(n + 1) // 2} bytes, got {nbytes} (the "
            "last dim of packed data counts bytes: ceil(N / 2))"
        )


def _resolve_packed(env: dict, pending: list) -> None:
    """Bind the symbolic last dims that only packed data gave (2 * its bytes), or check them against the
    value another array bound."""
    for var, nbytes, name in pending:
        bound = env.get(var)
        if bound is None:
            check_dim(var.name, var.dtype, 2 * nbytes, f"parameter {name!r}: the last dim")
            env[var] = 2 * nbytes
        else:
            _check_bytes(name, bound, nbytes)
    pending.clear()


def _fmt(exprs) -> str:
    return "(" + ", ".join(str(e) for e in exprs) + ("," if len(exprs) == 1 else "") + ")"


class Kernel:
    """A compiled kernel; call it with the input arrays (outputs in `out_idx` are allocated).

    Made from what `ctx`'s execution backend loaded: `loaded.built.artifact` is the kernel's artifact, and
    the backend's launcher of `loaded` runs it.
    """

    def __init__(self, loaded: Loaded, ctx: BackendContext, out_idx: Sequence[int] = ()) -> None:
        self.loaded = loaded
        self.built = loaded.built
        self.artifact = artifact = loaded.built.artifact
        self.context = ctx
        # What a call's errors name the kernel: the @tilecraft.jit function's name where it made this one.
        self.name = artifact.function_name
        self._backend = ctx.execution_backend()
        self._launch = self._backend.launcher(loaded)
        self._readers = self._backend.array_readers
        # `T.alloc_global` workspaces are the last parameters; callers neither pass nor index them.
        self._workspaces = [i for i, p in enumerate(artifact.params) if p.workspace]
        n = len(artifact.params) - len(self._workspaces)
        self.out_idx = tuple(sorted({i % n if -n <= i < n else _bad_out_idx(i, n) for i in out_idx}))
        self._checks = [_ParamCheck(p) if p.kind == "buffer" else None for p in artifact.params]
        self._inputs = [i for i in range(n) if i not in self.out_idx]
        # The generated fast path passes the caller's arrays straight through: it has no workspaces.
        self._fast: Any = False if self._workspaces else None
        self._plan: Any = None  # the compiled launcher's plan, made on the first call (False: none)
        self._plan_without_torch = False

    def _fast_path(self):
        """The generated fast path for torch tensors, built on first use (None: not available)."""
        from tilecraft.jit.fastpath import build_fast_path

        try:
            support = self._backend.fast_path(self.loaded)
            return None if support is None else build_fast_path(self.artifact, self.out_idx, support)
        except Exception as err:  # noqa: BLE001 - the full path still works; the fast one is an optimization
            # Said once per kernel, so a broken fast path costs speed visibly instead of silently.
            warnings.warn(
                f"tilecraft: no fast launch path for {self.artifact.function_name} ({type(err).__name__}: "
                f"{err}); its calls take the full validation path, which is slower",
                RuntimeWarning,
                stacklevel=3,
            )
            return None

    @property
    def params(self) -> tuple[ParamInfo, ...]:
        """The parameters a caller passes (or gets back through `out_idx`): workspaces are not among them."""
        return self.artifact.params[: len(self.artifact.params) - len(self._workspaces)]

    def get_kernel_source(self) -> str:
        """The generated device source (the first source format the device codegen produced)."""
        return next(iter(self.artifact.device_sources.values()))

    def get_host_source(self) -> str | None:
        return self.artifact.host_source

    def to_device(self, array: Any) -> Any:
        """A copy of a numpy array where this kernel can read it (on the GPU for a GPU target)."""
        return self._backend.to_device(array)

    def to_host(self, array: Any) -> Any:
        """A numpy copy of an array this kernel wrote."""
        return self._backend.to_host(array)

    def synchronize(self) -> None:
        """Wait until this kernel's launches have finished (launches are asynchronous on GPUs)."""
        self._backend.synchronize(self.loaded)

    def get_profiler(self, tensor_supply_type: Any = None, library: str | None = None) -> Any:
        """A `tilecraft.profiler.Profiler` for this kernel: inputs filled as `tensor_supply_type` says
        (default `TensorSupplyType.Auto`), from `library` ("torch" or "numpy"; None: torch when the
        program imported it, else numpy)."""
        from tilecraft.profiler import Profiler, TensorSupplyType

        return Profiler(
            self, TensorSupplyType.Auto if tensor_supply_type is None else tensor_supply_type, library
        )

    def export(self, path) -> Any:
        """Write a self-contained copy of the built kernel to directory `path`: the device binary, the
        artifact, and (where the execution backend has one) a C header and loader source for calling it
        from C; `tilecraft.load(path)` loads it back without a compiler (docs/runtime.md)."""
        return self._backend.export(self.built, path, self.out_idx)

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        """Pickled as plain data: the artifact (its files, as the cache keeps them), the target, host target
        and execution backend, and `out_idx`. Unpickling builds the artifact through the execution backend
        (a cache hit where it was built before, else a compile) and loads it (multiprocessing, Ray)."""
        from tilecraft import __version__
        from tilecraft.runtime.artifact import artifact_files

        ctx = self.context
        return _unpickle_kernel, ({
            "format": PICKLE_FORMAT, "version": __version__, "artifact": artifact_files(self.artifact),
            "target": str(ctx.target), "target_host": None if ctx.target_host is None else str(ctx.target_host),
            "execution_backend": ctx.execution.name, "out_idx": list(self.out_idx),
        },)  # fmt: skip

    def _native_plan(self) -> Any:
        """The compiled launcher's plan for this kernel, or False (calls take the Python path)."""
        self._plan_without_torch = imported("torch") is None
        plan = False if self._workspaces else self._backend.compiled_launcher(self.loaded, self.out_idx, MISS)
        if not plan and settings.get("TILECRAFT_VERBOSE") and settings.get("TILECRAFT_LAUNCHER") != "python":
            # Finding this out on a GPU took a diagnostic script once: say it where users look.
            print(f"[tilecraft] {self.artifact.function_name}: no compiled launch plan on "
                  f"{type(self._backend).__name__}, its calls take the Python path (docs/runtime.md, "
                  "'What has no plan')", file=sys.stderr)  # fmt: skip
        return plan or False

    def __call__(self, *args: Any, stream: Any = None) -> Any:
        if stream is None:
            plan = self._plan
            if plan is None:
                plan = self._plan = self._native_plan()
            if plan:
                result = plan(*args)
                if result is not MISS:
                    return result
                if self._plan_without_torch and imported("torch") is not None:
                    # Made before torch was imported, the plan cannot read tensors: make it again, once.
                    self._plan = None
                    return self(*args)
        fast = self._fast
        if fast is None and stream is None and args and _is_torch_tensor(args[0]):
            fast = self._fast = self._fast_path() or False
        if fast and stream is None:
            result = fast(*args)
            if result is not MISS:
                return result
        try:
            return self._checked_call(args, stream)
        except TilecraftError as err:
            # Said on purpose (a wrong argument, an out-of-bounds access): the traceback ends at the
            # caller's line, not in tilecraft's frames (a cause the error chains keeps its own).
            raise err.with_traceback(None)  # noqa: B904 - the error says what went wrong; no internal frames

    def _checked_call(self, args: tuple, stream: Any) -> Any:
        """A call through the full validation path: every argument checked, outputs allocated."""
        values = self._arrange(args)
        env: dict = {}
        deferred: list = []
        arrays: dict[int, ArrayArg] = {}
        call = _PackedCall()
        launch_args = list(values)
        for i in self._inputs:
            launch_args[i] = self._bind_param(i, values[i], env, deferred, arrays, call)
        _resolve_packed(env, call.pending)
        outputs = self._allocate_outputs(values, env, arrays)
        for i in self.out_idx:
            launch_args[i] = self._bind_param(i, values[i], env, deferred, arrays, call)
        _resolve_packed(env, call.pending)
        for i in self._workspaces:
            launch_args.append(
                self._bind_param(i, self._allocate(i, env, arrays), env, deferred, arrays, call)
            )
        self._check_deferred(env, deferred)
        dims = self._dims(env)
        self._launch(launch_args, dims, stream)
        if call.restore:
            self._backend.synchronize(self.loaded)
            call.unpack()
        if not outputs:
            return None
        result = [outputs[i] for i in self.out_idx]
        reference = next(iter(arrays.values()))
        if reference.library == "dlpack":  # a DLPack producer's caller gets its own array type back
            result = [as_callers_array(r, reference.obj) for r in result]
        return result[0] if len(result) == 1 else result

    def _arrange(self, args: tuple) -> list:
        n = len(self.params)
        if len(args) == n:
            return list(args)
        if len(args) == len(self._inputs):
            values: list = [None] * n
            for i, a in zip(self._inputs, args):
                values[i] = a
            return values
        names = [self.artifact.params[i].name for i in self._inputs]
        every = ", ".join(p.name for p in self.params)
        missing = f"; missing: {', '.join(names[len(args) :])}" if len(args) < len(names) else ""
        raise ArgumentError(
            f"kernel {self.name} takes {len(self._inputs)} inputs ({', '.join(names)})"
            + (f" or all {n} parameters ({every}; out_idx names the outputs)" if self.out_idx else "")
            + f", got {len(args)}{missing}"
        )

    def _bind_param(
        self, i: int, value: Any, env: dict, deferred: list, arrays: dict, call: _PackedCall
    ) -> Any:
        """Check parameter i's value and bind the dims it carries; returns what the launcher takes."""
        info = self.artifact.params[i]
        if info.kind == "scalar":
            return check_scalar(info, value)
        arg = as_array_arg(value, info.name, self._readers)
        check = self._checks[i]
        if check.packed:
            return self._bind_packed(i, value, arg, env, deferred, arrays, call)
        check.bind(arg, env, deferred)
        self._check_memory(i, arg, arg)
        arrays[i] = arg
        return arg

    def _check_memory(self, i: int, arg: ArrayArg, caller: ArrayArg) -> None:
        """Device, alignment, contiguity (of the memory the kernel reads: `arg`) and, for a parameter the
        kernel writes, that the caller's array (`caller`) is writable."""
        info = self.artifact.params[i]
        self._backend.check_device(arg, info.name)
        check_alignment(arg, info.name, self.artifact.buffer_alignment)
        if self._checks[i].strides is None and not self._checks[i].contiguous(arg):
            raise ArgumentError(
                f"parameter {info.name!r} must be contiguous (row-major), got strides {arg.strides} for shape "
                f"{arg.shape}; pass a contiguous copy ({_contiguous_copy(info.name, caller.library)}) or "
                "declare the parameter with T.StridedTensor"
            )
        if info.written and not caller.writable:
            raise ArgumentError(
                f"parameter {info.name!r} is read-only memory, but the kernel writes it; pass a writable "
                "array (numpy: a copy, np.array(x), or a memmap opened with mode='r+')"
            )

    def _bind_packed(self, i: int, value: Any, arg: ArrayArg, env: dict, deferred: list, arrays: dict,
                     call: _PackedCall) -> ArrayArg:  # fmt: skip
        """A packed 4-bit parameter: its bytes (runtime/packed.py), or a numpy array of one value a byte,
        packed for the call (and unpacked back after it where the kernel writes it)."""
        info, check = self.artifact.params[i], self._checks[i]
        check.check_rank(arg)
        if arg.dtype == info.dtype and arg.library == "numpy" and arg.shape:
            data = as_array_arg(packed.pack(value), info.name)
            if info.written and arg.writable:
                call.restore.append((value, data.obj, arg.shape[-1], info.dtype))
            last, known = arg.shape[-1], True
        elif packed.holds_bytes(arg, info.dtype):
            data = arg
            last, known = check.packed_last(arg.shape[-1], env, deferred, call.pending), False
        else:
            raise ArgumentError(
                f"parameter {info.name!r}: expected {packed.expected(info.dtype, _fmt(info.shape))}; got "
                f"{arg.library} {arg.dtype} of shape {arg.shape}"
            )
        check.bind(packed.logical_view(data, info.dtype, last, info.name), env, deferred, known)
        self._check_memory(i, data, arg)
        arrays[i] = data
        return packed.launch_bytes(data)

    def _allocate_outputs(self, values: list, env: dict, arrays: dict) -> dict[int, Any]:
        if all(values[i] is not None for i in self.out_idx):
            return {}
        outputs = {}
        for i in self.out_idx:
            outputs[i] = self._allocate(i, env, arrays)
            values[i] = outputs[i]
        return outputs

    def _allocate(self, i: int, env: dict, arrays: dict) -> Any:
        """A new array for parameter i, beside the arrays bound so far (on their device)."""
        info = self.artifact.params[i]
        shape = tuple(self._eval_dim(e, env, info.name) for e in info.shape)
        reference = next(iter(arrays.values()), None)
        if info.dtype.is_packed:
            if reference is None or reference.library == "numpy":
                return np.empty(shape, dt.numpy_dtype(info.dtype))  # one value a byte, packed for the call
            return self._backend.empty(reference, packed.byte_shape(shape), packed.storage_dtype(info.dtype))
        return self._backend.empty(reference, shape, info.dtype)

    def _eval_dim(self, e: E.Expr, env: dict, name: str) -> int:
        if isinstance(e, int):
            return e
        try:
            return int(evaluate(e, env))
        except (KeyError, ValueError) as exc:
            raise ArgumentError(
                f"cannot allocate {name!r}: its shape {e} depends on a dim no input provides ({exc})"
            ) from None

    def _check_deferred(self, env: dict, deferred: list) -> None:
        for rule, got, name, what in deferred:
            expected = int(evaluate(rule.expr, env))
            if what == "bytes":  # the last dim of packed data, given as its bytes
                _check_bytes(name, expected, got)
            elif expected != got:
                raise ArgumentError(
                    f"parameter {name!r}: {what}[{rule.axis}] must be {rule.expr} = {expected}, got {got}"
                )

    def _dims(self, env: dict) -> list[int]:
        dims = []
        for v in self.artifact.symbolic_dims:
            if v not in env:
                raise ArgumentError(f"symbolic dim {v.name} is not bound by any input's shape")
            dims.append(env[v])
        return dims


PICKLE_FORMAT = 1  # what `Kernel.__reduce__` writes


def _unpickle_kernel(state: dict[str, Any]) -> Kernel:
    """The Kernel `Kernel.__reduce__` described, built (or found in the cache) and loaded here."""
    from tilecraft.backend.context import create_backend_context
    from tilecraft.runtime.artifact import ArtifactDecodeError, artifact_from_files

    found = state.get("format") if isinstance(state, dict) else None
    if found != PICKLE_FORMAT:
        raise TilecraftError(
            f"this pickled tilecraft Kernel has format {found!r}; this tilecraft reads format {PICKLE_FORMAT}: "
            "pickle the kernel again with this version"
        )
    files = state["artifact"]
    try:
        artifact = artifact_from_files(lambda name: files[name])
    except (ArtifactDecodeError, KeyError) as err:
        raise TilecraftError(
            f"a pickled tilecraft Kernel (tilecraft {state.get('version')}) holds an artifact this tilecraft "
            f"cannot read ({err}): pickle the kernel again with this version"
        ) from None
    try:
        ctx = create_backend_context(state["target"], state["target_host"], state["execution_backend"])
        backend = ctx.execution_backend()
        loaded = backend.load(backend.build(artifact, ctx))
    except TilecraftError as err:
        raise UnpicklingKernelError(
            f"unpickling kernel {artifact.function_name}: it is built here from its artifact (target "
            f"{state['target']}, execution backend {state['execution_backend']}), which failed: {err}\n"
            "  to run it where it cannot be built, export it (kernel.export(path)) and load the export there "
            "with tilecraft.load(path), which needs no compiler"
        ) from err
    return Kernel(loaded, ctx, tuple(state["out_idx"]))


class _PackedCall:
    """A call's packed-data bookkeeping: symbolic last dims only packed bytes gave so far (var, bytes,
    parameter), and numpy arrays packed for the call that the kernel writes (array, bytes, N, dtype)."""

    def __init__(self) -> None:
        self.pending: list = []
        self.restore: list = []

    def unpack(self) -> None:
        for target, data, n, dtype in self.restore:
            target[...] = packed.unpack(data, n, dtype)


def _is_torch_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _bad_out_idx(i: int, n: int) -> int:
    raise ArgumentError(f"out_idx {i} is out of range for a kernel with {n} parameters")


JITKernel = Kernel  # TileLang's name for a compiled kernel
