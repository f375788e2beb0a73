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
from typing import Any

import numpy as np

from tilecraft import settings
from tilecraft._modules import imported
from tilecraft.backend.context import BackendContext
from tilecraft.errors import ArgumentError, TilecraftError, UnpicklingKernelError
from tilecraft.ir import dtype as dt
from tilecraft.jit.fastpath import MISS
from tilecraft.runtime import packed
from tilecraft.runtime.arrays import ArrayArg, as_array_arg
from tilecraft.runtime.artifact import ParamInfo
from tilecraft.runtime.dlpack import as_callers_array
from tilecraft.runtime.launch import Loaded
from tilecraft.runtime.plan import LaunchPlan, fmt, resolve_packed, solve_dims
from tilecraft.runtime.scalars import check_scalar


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
        # Every call path reads the one plan: the checks below, the fast path, the compiled launcher.
        self.launch_plan = plan = LaunchPlan.build(artifact, out_idx)
        self.out_idx = plan.outputs
        # The generated fast path and the compiled launcher check what a plain plan says: the others
        # (strides, packed data, derived dims, workspaces) take the checked path.
        self._fast: Any = None if plan.plain() else False
        self._plan: Any = None  # the compiled launcher's plan, made on the first call (False: none)
        self._plan_without_torch = False

    def _fast_path(self):
        """The generated fast path for torch tensors, built on first use (None: not available)."""
        from tilecraft.jit.fastpath import build_fast_path

        try:
            support = self._backend.fast_path(self.loaded)
            return None if support is None else build_fast_path(self.launch_plan, support)
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
        return tuple(p.info for p in self.launch_plan.callable_params)

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

    def run_once(self, func: Any = None) -> Any:
        """TileLang's `JITKernel.run_once`: `func` (default: this kernel) called once on inputs the
        default profiler makes (`get_profiler().run_once(func)`)."""
        return self.get_profiler().run_once(func)

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
        plain = self.launch_plan.plain()
        plan = self._backend.compiled_launcher(self.loaded, self.launch_plan, MISS) if plain else None
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
        plan = self.launch_plan
        values = plan.arrange(args, self.name)
        env: dict = {}
        deferred: list = []
        arrays: dict[int, ArrayArg] = {}
        call = _PackedCall()
        launch_args = list(values)
        for i in plan.inputs:
            launch_args[i] = self._bind_param(i, values[i], env, deferred, arrays, call)
        for i, var in plan.scalar_dims:  # an output sized by a scalar parameter (`T.empty([m + 1])`)
            env[var] = launch_args[i]
        resolve_packed(env, call.pending)
        solve_dims(env, deferred)  # an output may be sized by a dim only an input's `n * 4` gives
        outputs = self._allocate_outputs(values, env, arrays)
        for i in plan.outputs:
            launch_args[i] = self._bind_param(i, values[i], env, deferred, arrays, call)
        resolve_packed(env, call.pending)
        for i in plan.workspaces:
            launch_args.append(
                self._bind_param(i, self._allocate(i, env, arrays), env, deferred, arrays, call)
            )
        plan.check_deferred(env, deferred)
        self._launch(launch_args, plan.dim_values(env), stream)
        if call.restore:
            self._backend.synchronize(self.loaded)
            call.unpack()
        if not outputs:
            return None
        result = [outputs[i] for i in plan.outputs]
        reference = next(iter(arrays.values()))
        if reference.library == "dlpack":  # a DLPack producer's caller gets its own array type back
            result = [as_callers_array(r, reference.obj) for r in result]
        return result[0] if len(result) == 1 else result

    def _bind_param(
        self, i: int, value: Any, env: dict, deferred: list, arrays: dict, call: _PackedCall
    ) -> Any:
        """Check parameter i's value and bind the dims it carries; returns what the launcher takes."""
        param = self.launch_plan.params[i]
        if not param.is_buffer:
            return check_scalar(param.info, value)
        arg = as_array_arg(value, param.name, self._readers)
        if param.packed:
            return self._bind_packed(i, value, arg, env, deferred, arrays, call)
        param.bind(arg, env, deferred)
        self._check_memory(i, arg, arg)
        arrays[i] = arg
        return arg

    def _check_memory(self, i: int, arg: ArrayArg, caller: ArrayArg) -> None:
        """Device (the execution backend's), then what the plan says of the memory (`ParamPlan.check_memory`)."""
        param = self.launch_plan.params[i]
        self._backend.check_device(arg, param.name)
        param.check_memory(arg, caller, self.launch_plan.alignment)

    def _bind_packed(self, i: int, value: Any, arg: ArrayArg, env: dict, deferred: list, arrays: dict,
                     call: _PackedCall) -> ArrayArg:  # fmt: skip
        """A packed 4-bit parameter: its bytes (runtime/packed.py), or a numpy array of one value a byte,
        packed for the call (and unpacked back after it where the kernel writes it)."""
        param = self.launch_plan.params[i]
        info = param.info
        param.check_rank(arg)
        if arg.dtype == info.dtype and arg.library == "numpy" and arg.shape:
            data = as_array_arg(packed.pack(value), info.name)
            if info.written and arg.writable:
                call.restore.append((value, data.obj, arg.shape[-1], info.dtype))
            last, known = arg.shape[-1], True
        elif packed.holds_bytes(arg, info.dtype):
            data = arg
            last, known = param.packed_last(arg.shape[-1], env, deferred, call.pending), False
        else:
            raise ArgumentError(
                f"parameter {info.name!r}: expected {packed.expected(info.dtype, fmt(info.shape))}; got "
                f"{arg.library} {arg.dtype} of shape {arg.shape}"
            )
        param.bind(packed.logical_view(data, info.dtype, last, info.name), env, deferred, known)
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
        dtype = self.launch_plan.params[i].dtype
        shape = self.launch_plan.shape_of(i, env)
        reference = next(iter(arrays.values()), None)
        if dtype.is_packed:
            if reference is None or reference.library == "numpy":
                return np.empty(shape, dt.numpy_dtype(dtype))  # one value a byte, packed for the call
            return self._backend.empty(reference, packed.byte_shape(shape), packed.storage_dtype(dtype))
        return self._backend.empty(reference, shape, dtype)


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


class _KernelConstructor(type):
    """What makes `JITKernel` TileLang's class: every tilecraft Kernel is an instance, and calling it
    compiles a function."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Kernel)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, Kernel)

    def __call__(cls, func: Any, out_idx: Any = None, execution_backend: str = "auto", target: Any = "auto",
                 target_host: Any = None, verbose: bool = False, pass_configs: Any = None,
                 compile_flags: Any = None) -> Kernel:  # fmt: skip
        from tilecraft.jit import compile

        return compile(func, out_idx=out_idx, target=target, target_host=target_host,
                       execution_backend=execution_backend, pass_configs=pass_configs,
                       compile_flags=compile_flags)  # fmt: skip


class JITKernel(metaclass=_KernelConstructor):
    """TileLang's name for a compiled kernel: `JITKernel(func, out_idx=None, execution_backend="auto",
    target="auto", target_host=None, verbose=False, pass_configs=None, compile_flags=None)` compiles
    `func` as tilecraft.compile does (`verbose` is accepted and ignored), and a tilecraft Kernel is
    an instance."""
