"""The launch fast path: everything is decided at load, a call packs the arguments and launches.

For each kernel of an artifact, load time builds a `ParamBuffer` (one 8-byte slot per parameter, the
`void*` array `cuLaunchKernel` reads, and a `struct.Struct` that fills every slot in one call), and
translates the grid expressions to Python (grid.py). `build_launcher` then generates one Python function
for the whole artifact, roughly::

    def launch(args, dims, stream=None):
        a0, a1, a2, a3 = args
        d0, = dims
        if a0.device_id != 0 or a1.device_id != 0: _wrong_device(args)
        s = _stream(stream, args)
        with _lock:
            gx0 = ((d0 + (127)) // (128))
            if 0 < gx0 <= 2147483647:
                try: _pack0(_buf0, 0, a0.ptr, a1.ptr, a3, d0)
                except _PACK_ERRORS: _repack0((a0.ptr, a1.ptr, a3, d0), 'add')
                rc = _launch(_f0, gx0, 1, 1, 128, 1, 1, 0, s, _p0, 0)
                if rc: _failed(0, rc, (_f0, gx0, 1, 1, 128, 1, 1, 0, s, _p0, 0))
            else: _bad_grid0((gx0, 1, 1))

so a call does no per-parameter dispatch, no dict lookups and no tuple conversion for the driver.
A kernel that takes tensor maps (`KernelInfo.tensor_maps`, sm_90a TMA loads) has one more entry per map
in its pointer array; each call points it at the map encoded for the argument's address and shape
(`_ptrs0[3] = _tm0_0(a0.ptr, (d0, 64))`; tensor_map.py encodes and caches them).
Kernels of one artifact are launched in order on one stream; nothing synchronizes.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tilecraft._modules import imported
from tilecraft.errors import ArgumentError, TilecraftError
from tilecraft.execution.abi import PACK_ERRORS, SCALAR_CODES, arg_source, bad_scalar, plain_value
from tilecraft.execution.cuda_driver.tensor_map import aligned_map
from tilecraft.execution.grid import GRID_HELPERS, GridScope, python_source
from tilecraft.runtime.artifact import CompiledArtifact, KernelInfo, ParamInfo

SLOT_BYTES = 8
POINTER_CODE = "Q"
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS = 1024


def slot_code(param: ParamInfo) -> str:
    """The struct code of one parameter's slot: the value, padded to 8 bytes."""
    if param.kind == "buffer":
        code = POINTER_CODE
    else:
        code = SCALAR_CODES.get(param.dtype.name)
        if code is None:
            raise TilecraftError(
                f"scalar parameter {param.name!r} has dtype {param.dtype}, which a CUDA kernel cannot take "
                f"by value; supported: {', '.join(SCALAR_CODES)}"
            )
    return code + "x" * (SLOT_BYTES - struct.calcsize("<" + code))


class ParamBuffer:
    """The `kernelParams` of one kernel: a slot per parameter and the array of pointers to the slots,
    then `tensor_maps` pointers that each call sets to the encoded maps (a zeroed map until then)."""

    def __init__(self, params: Sequence[ParamInfo], tensor_maps: int = 0) -> None:
        self.params = tuple(params)
        self.struct = struct.Struct("<" + "".join(slot_code(p) for p in self.params))
        self.storage = ctypes.create_string_buffer(max(SLOT_BYTES, self.struct.size))
        base = ctypes.addressof(self.storage)
        self.placeholder, blank = aligned_map()
        slots = [base + SLOT_BYTES * i for i in range(len(self.params))] + [blank] * tensor_maps
        self.pointers = (ctypes.c_void_p * max(1, len(slots)))(*slots)
        # The raw `void**` handed to cuLaunchKernel (NULL for a kernel without parameters).
        self.address = ctypes.addressof(self.pointers) if slots else None

    def pack(self, values: Sequence[Any]) -> None:
        self.struct.pack_into(self.storage, 0, *values)

    def slot(self, index: int) -> bytes:
        """The bytes of slot `index` as the kernel will read them (tests)."""
        return ctypes.string_at(self.pointers[index], SLOT_BYTES)

    def repack(self, values: Sequence[Any], symbol: str) -> None:
        """The slow path when `pack` refused a value: coerce numpy/torch scalars, or name the bad one."""
        coerced = [plain_value(v) for v in values]
        try:
            self.pack(coerced)
            return
        except PACK_ERRORS:
            pass
        bad_scalar(self.params, coerced, [slot_code(p) for p in self.params], symbol)
        self.pack(coerced)  # every value fits its slot, so all of them do


@dataclass(frozen=True)
class KernelPlan:
    """One kernel's precomputed launch: driver function, params buffer and how to fill it."""

    index: int
    info: KernelInfo
    function: Any  # what the launch entry takes: an int (ctypes) or a cuda-python CUfunction
    buffer: ParamBuffer
    values: tuple[str, ...]  # Python source of each slot's value, in ABI order
    grid: tuple[str, ...]  # Python source of gx, gy, gz
    tensor_maps: tuple[tuple[str, str], ...] = ()  # per map: Python source of the pointer and the shape


def check_kernel(info: KernelInfo, function_name: str) -> None:
    """Launch metadata a CUDA launch accepts: block dims within the hardware limits, at most 3 grid dims."""
    block = _three(info.block)
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS or any(b > m for b, m in zip(block, MAX_BLOCK)):
        raise TilecraftError(
            f"kernel {info.symbol} of {function_name}: block {block} ({threads} threads) exceeds the CUDA "
            f"limits (at most {MAX_THREADS} threads, dims at most {MAX_BLOCK})"
        )
    if len(info.grid) > 3:
        raise TilecraftError(
            f"kernel {info.symbol} of {function_name}: grid {info.grid} has more than 3 dims"
        )


def _three(dims: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(dims) + (1,) * (3 - len(dims))


def scope_for(artifact: CompiledArtifact) -> GridScope:
    """Locals of the generated launcher: `a<i>` for parameter i, `d<j>` for symbolic dim j."""
    scope = GridScope()
    for i, param in enumerate(artifact.params):
        if param.kind == "scalar":
            scope.bind(param.name, f"a{i}")
    for j, var in enumerate(artifact.symbolic_dims):
        scope.bind(var, f"d{j}")
    return scope


def _value_source(param: ParamInfo, artifact: CompiledArtifact, symbol: str, raw: bool = False) -> str:
    """The launcher's Python source for a kernel parameter's value: a buffer's pointer (the argument
    itself when `raw`), a scalar argument, or a symbolic dim."""
    source = arg_source(param, artifact, symbol)
    if source.kind == "dim":
        return f"d{source.index}"
    return f"a{source.index}.ptr" if source.kind == "buffer" and not raw else f"a{source.index}"


def check_artifact(artifact: CompiledArtifact) -> None:
    """Launch metadata every kernel must satisfy; checked at build time, before any GPU is touched."""
    if not artifact.kernels:
        raise TilecraftError(f"artifact of {artifact.function_name} has no kernels to launch")
    for info in artifact.kernels:
        check_kernel(info, artifact.function_name)
    check_parameters(artifact)


def check_parameters(artifact: CompiledArtifact) -> None:
    """Every kernel parameter is a parameter or symbolic dim of the function, of the same kind."""
    for info in artifact.kernels:
        for param in info.params:
            _value_source(param, artifact, info.symbol)


def plan_kernels(artifact: CompiledArtifact, functions: Sequence[Any], scope: GridScope,
                 raw: bool = False) -> list[KernelPlan]:  # fmt: skip
    """A KernelPlan per kernel, in launch order; raises for metadata a launch cannot honour."""
    plans = []
    for k, (info, function) in enumerate(zip(artifact.kernels, functions)):
        check_kernel(info, artifact.function_name)
        values = tuple(_value_source(p, artifact, info.symbol, raw) for p in info.params)
        where = f"the grid of kernel {info.symbol}"
        grid = tuple(python_source(e, scope, where) for e in info.grid)
        grid += ("1",) * (3 - len(grid))
        maps = tuple(_tensor_map_source(tm, artifact, info.symbol, scope, raw) for tm in info.tensor_maps)
        buffer = ParamBuffer(info.params, len(maps))
        plans.append(KernelPlan(k, info, function, buffer, values, grid, maps))
    return plans


def _tensor_map_source(tm, artifact: CompiledArtifact, symbol: str, scope: GridScope, raw: bool
                       ) -> tuple[str, str]:  # fmt: skip
    """Python source of the pointer and the shape a tensor map is encoded from (a view's map: the view's
    dims over its base parameter's pointer)."""
    param = next(p for p in artifact.params if p.name == tm.buffer)
    pointer = _value_source(param, artifact, symbol, raw)
    where = f"the shape of {tm.buffer} (a tensor map of kernel {symbol})"
    dims = [python_source(d, scope, where) for d in (tm.shape or param.shape)]
    return pointer, f"({', '.join(dims)},)"


@dataclass(frozen=True)
class LaunchHooks:
    """What the generated launcher calls: `cuLaunchKernel` (returning a CUresult, or a 1-tuple of one
    when `returns_tuple`), the stream choice, and the slow and error paths."""

    launch_kernel: Callable[..., Any]
    returns_tuple: bool
    resolve_stream: Callable[[Any, Sequence[Any]], int]
    failed: Callable[[int, int, tuple[Any, ...]], None]
    wrong_device: Callable[[Sequence[Any]], None]
    # (TensorMapInfo, kernel symbol) -> encoder(address, shape) -> host address of the encoded map;
    # None: the execution backend cannot encode tensor maps, and kernels taking them are refused
    tensor_maps: Callable[[Any, str], Callable[[int, tuple[int, ...]], int]] | None = None


def build_launcher(artifact: CompiledArtifact, functions: Sequence[Any], device: int, hooks: LaunchHooks,
                   keep_alive: Any = None, raw: bool = False) -> Callable[..., None]:  # fmt: skip
    """The launch function `launch(args, dims, stream=None)` of an artifact (see the module docstring).

    `args` follow `artifact.params` (an ArrayArg per buffer, a number per scalar), `dims` the symbolic
    dims. `keep_alive` (the loaded module) is referenced by the function so it outlives every launcher.
    With `raw`, buffers are plain device pointers, the caller has checked their device, and the stream
    is a raw handle (`launch(args, dims, stream)`): the fast path of a caller that validated everything.
    """
    scope = scope_for(artifact)
    plans = plan_kernels(artifact, functions, scope, raw)
    namespace: dict[str, Any] = {
        **GRID_HELPERS, "_launch": hooks.launch_kernel, "_stream": hooks.resolve_stream,
        "_failed": hooks.failed, "_wrong_device": hooks.wrong_device, "_PACK_ERRORS": PACK_ERRORS,
        "_keep_alive": keep_alive, "_lock": threading.Lock(),
    }  # fmt: skip
    assign = "rc, =" if hooks.returns_tuple else "rc ="
    lines = _raw_prologue(artifact) if raw else _prologue(artifact, device)
    # The slots are shared by every call of this launcher and the driver reads them during the launch,
    # with the GIL released: a lock keeps another thread from repacking them in between.
    lines.append("    with _lock:")
    for plan in plans:
        lines += ["    " + line for line in _kernel_lines(plan, namespace, assign, hooks.tensor_maps)]
    namespace.update(scope.constants)
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<tilecraft launcher {artifact.function_name}>", "exec"), namespace)  # noqa: S102
    launch = namespace["launch"]
    launch.__source__ = source
    launch.plans = plans
    return launch


def _prologue(artifact: CompiledArtifact, device: int) -> list[str]:
    """Unpack the arguments, check the buffers' device, pick the stream."""
    lines = ["def launch(args, dims, stream=None):"]
    lines += _unpack("a", len(artifact.params), "args") + _unpack("d", len(artifact.symbolic_dims), "dims")
    buffers = [i for i, p in enumerate(artifact.params) if p.kind == "buffer"]
    if buffers:
        wrong = " or ".join(f"a{i}.device_id != {device}" for i in buffers)
        lines.append(f"    if {wrong}: _wrong_device(args)")
    lines.append("    s = _stream(stream, args)")
    return lines


def _raw_prologue(artifact: CompiledArtifact) -> list[str]:
    lines = ["def launch(args, dims, s):"]
    return (
        lines + _unpack("a", len(artifact.params), "args") + _unpack("d", len(artifact.symbolic_dims), "dims")
    )


def _unpack(prefix: str, count: int, name: str) -> list[str]:
    if count == 0:
        return []
    return [f"    {''.join(f'{prefix}{i}, ' for i in range(count))}= {name}"]


def _kernel_lines(plan: KernelPlan, namespace: dict[str, Any], assign: str, hooks_maps=None) -> list[str]:
    k = plan.index
    info = plan.info
    namespace.update({f"_f{k}": plan.function, f"_p{k}": plan.buffer.address, f"_buf{k}": plan.buffer.storage,
                      f"_pack{k}": plan.buffer.struct.pack_into, f"_repack{k}": plan.buffer.repack,
                      f"_bad_grid{k}": _grid_checker(info)})  # fmt: skip
    grid, checks, lines = [], [], [f"    # kernel {k}: {info.symbol}"]
    for axis, text in enumerate(plan.grid):
        constant = _constant(text)
        cluster = info.cluster[axis]
        if constant is not None:
            _check_constant_grid(info, axis, constant)
            grid.append(str(constant))
            continue
        name = f"g{'xyz'[axis]}{k}"
        lines.append(f"    {name} = {text}")
        checks.append(f"0 < {name} <= {MAX_GRID[axis]}" + (f" and {name} % {cluster} == 0" if cluster > 1 else ""))
        grid.append(name)
    block = _three(info.block)
    call = f"(_f{k}, {', '.join(grid)}, {', '.join(map(str, block))}, {info.dynamic_smem}, s, _p{k}, 0)"
    values = ", ".join(plan.values)
    body = [
        f"try: _pack{k}(_buf{k}, 0, {values})",
        f"except _PACK_ERRORS: _repack{k}(({values},), {info.symbol!r})",
    ] if plan.values else []  # fmt: skip
    if plan.tensor_maps:
        if hooks_maps is None:
            raise TilecraftError(
                f"kernel {info.symbol} takes TMA tensor maps, which this execution backend cannot encode; "
                "compile with pass_configs={'tl.disable_tma_lower': True}"
            )
        namespace[f"_ptrs{k}"] = plan.buffer.pointers
        first = len(info.params)
        for j, (pointer, shape) in enumerate(plan.tensor_maps):
            namespace[f"_tm{k}_{j}"] = hooks_maps(info.tensor_maps[j], info.symbol)
            body.append(f"_ptrs{k}[{first + j}] = _tm{k}_{j}({pointer}, {shape})")
    body += [f"{assign} _launch{call}", f"if rc: _failed({k}, rc, {call})"]
    if not checks:
        return lines + [f"    {line}" for line in body]
    lines.append(f"    if {' and '.join(checks)}:")
    lines += [f"        {line}" for line in body]
    lines.append(f"    else: _bad_grid{k}(({', '.join(grid)},))")
    return lines


def _constant(text: str) -> int | None:
    stripped = text.strip("()")
    return int(stripped) if stripped.lstrip("-").isdigit() else None


def _check_constant_grid(info: KernelInfo, axis: int, value: int) -> None:
    if not 0 < value <= MAX_GRID[axis]:
        raise TilecraftError(
            f"kernel {info.symbol}: grid dim {'xyz'[axis]} is {value}; CUDA allows 1..{MAX_GRID[axis]}"
        )
    if value % info.cluster[axis]:
        raise TilecraftError(_cluster_message(info, axis, value))


def _cluster_message(info: KernelInfo, axis: int, value: int) -> str:
    return (
        f"kernel {info.symbol}: grid dim {'xyz'[axis]} is {value}, not a multiple of its cluster_dims "
        f"{'xyz'[axis]} = {info.cluster[axis]} (a launch runs whole clusters); round the kernel's grid up to "
        f"a multiple of {info.cluster[axis]}, or leave cluster_dims out"
    )


def _grid_checker(info: KernelInfo) -> Callable[[tuple[int, ...]], None]:
    def bad_grid(grid: tuple[int, ...]) -> None:
        """An empty grid (a zero dim) launches nothing; a negative or too large one is an error."""
        if all(0 <= g <= m for g, m in zip(grid, MAX_GRID)):
            for axis, (g, c) in enumerate(zip(grid, info.cluster)):
                if g % c:
                    raise ArgumentError(_cluster_message(info, axis, g))
            return
        raise ArgumentError(
            f"kernel {info.symbol}: grid {grid} is out of range for CUDA (each dim >= 0, x <= {MAX_GRID[0]}, "
            f"y and z <= {MAX_GRID[1]}); check the sizes of the arguments"
        )

    return bad_grid


# ---------------------------------------------------------------------- streams


def make_stream_resolver(buffer_indices: Sequence[int]) -> Callable[[Any, Sequence[Any]], int]:
    """`resolve(stream, args) -> handle`: the given stream; else torch's current stream on the device of
    the first torch tensor among the buffers; else the default stream (0)."""
    indices = tuple(buffer_indices)

    def resolve(stream: Any, args: Sequence[Any]) -> int:
        if stream is not None:
            return stream_handle(stream)
        for i in indices:
            arg = args[i]
            if arg.library == "torch":
                return torch_current_stream(arg.device_id)
        return 0

    return resolve


def stream_handle(stream: Any) -> int:
    """A CUstream handle from an int, a torch stream (`cuda_stream`), an object with `__cuda_stream__`
    (the CUDA stream protocol), a CuPy stream (`ptr`), a cuda.core stream (`handle`) or a cuda-python
    `CUstream`."""
    if type(stream) is int:
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        return int(protocol()[1])
    for attribute in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attribute, None)
        if value is not None:
            return int(value)
    try:
        return int(stream)
    except (TypeError, ValueError):
        raise ArgumentError(
            f"stream= must be a CUDA stream: an int handle, a torch.cuda.Stream, a CuPy stream or an object "
            f"with __cuda_stream__; got {type(stream).__name__}"
        ) from None


_torch_stream: list[Callable[[int], int]] = []


def torch_current_stream(device: int) -> int:
    """The raw handle of torch's current stream on `device` (torch is already imported: a tensor was
    passed)."""
    return current_stream_getter()(device)


def current_stream_getter() -> Callable[[int], int]:
    """torch's function from a device index to its current stream's raw handle (found once)."""
    if not _torch_stream:
        _torch_stream.append(_torch_stream_getter())
    return _torch_stream[0]


def _torch_stream_getter() -> Callable[[int], int]:
    torch = imported("torch")
    if torch is None:
        import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:  # what torch's own generated launchers use: no Stream object per call
        return raw
    return lambda device: torch.cuda.current_stream(device).cuda_stream
