"""Load and Launch of a cubin, shared by the `nvrtc` and `nvcc` execution backends (they differ only in
how Build produces the cubin).

Load: the driver is initialized once; the primary context of the target's device is retained (the
context torch uses, so kernels and torch tensors share memory and streams) and made current; the cubin
is loaded with `cuModuleLoadData`; each kernel's function is looked up and, when it needs more than
48 KiB of dynamic shared memory, its `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` is raised once.
Launch: the generated launcher of launch.py.
"""

from __future__ import annotations

import ctypes
import hashlib
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tilecraft._modules import imported
from tilecraft.errors import OutOfBoundsError, TilecraftError
from tilecraft.execution import native
from tilecraft.execution.base import CachedExecutionBackend
from tilecraft.execution.cuda_driver import driver as cuda_driver
from tilecraft.execution.cuda_driver import interop
from tilecraft.execution.cuda_driver.launch import (
    SCALAR_CODES,
    LaunchHooks,
    build_launcher,
    check_artifact,
    current_stream_getter,
    make_stream_resolver,
    torch_current_stream,
)
from tilecraft.execution.cuda_driver.sources import SOURCE_NAME
from tilecraft.execution.cuda_driver.tensor_map import TensorMaps
from tilecraft.ir import expr as E
from tilecraft.ir.dtype import DataType
from tilecraft.runtime.arrays import ArrayArg
from tilecraft.runtime.artifact import CompiledArtifact, KernelInfo
from tilecraft.runtime.devices import BenchmarkDevice
from tilecraft.runtime.launch import Built, FastPath, Loaded, NativeKernel, NativeLaunch
from tilecraft.runtime.plan import LaunchPlan
from tilecraft.runtime.timing import DeviceTimer, KernelClock

SOURCE_FORMAT = "cuda-source"
BINARY_FORMAT = "cubin"
CUBIN_FILE = "kernel.cubin"
SOURCE_FILE = SOURCE_NAME
DEFAULT_DYNAMIC_SMEM = 48 * 1024
_RETRY_IN_CONTEXT = (cuda_driver.CUDA_ERROR_INVALID_CONTEXT, cuda_driver.CUDA_ERROR_INVALID_HANDLE)
_IMAGE_ERRORS = (
    cuda_driver.CUDA_ERROR_NO_BINARY_FOR_GPU, cuda_driver.CUDA_ERROR_INVALID_IMAGE,
    cuda_driver.CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
)  # fmt: skip


@dataclass(eq=False)
class CudaModule:
    """A cubin loaded on one device: the module, one function per kernel, and the context it lives in.

    The module is unloaded when this object is collected (every launcher keeps a reference to it).
    """

    driver: Any
    device: int
    context: int
    module: int
    functions: tuple[int, ...]
    _finalizer: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._finalizer = weakref.finalize(self, _unload, self.driver, self.context, self.module)
        self._finalizer.atexit = False  # the driver may already be shutting down at exit


def bounds_sites(artifact: CompiledArtifact) -> tuple[str, ...]:
    """What each site number of a bounds-checked module names (1-based; empty: not checked)."""
    return tuple(site for info in artifact.kernels for site in info.bounds_sites)


OOB_RECORD = "tc_oob_record"  # tc_cuda.h: the first out-of-bounds access (site, element offset)


def checked_launcher(
    handle: CudaModule, launch: Callable[..., None], sites: Sequence[str]
) -> Callable[..., None]:
    """`launch` of a bounds-checked module, with its device record cleared before and read back after:
    the call raises OutOfBoundsError naming the first bad access. Checked calls are serialized and
    synchronous (the record is the module's, and only a finished launch has a complete one)."""
    driver = handle.driver
    with driver.using_context(handle.context):
        record, _ = driver.module_global(handle.module, OOB_RECORD)
    lock = threading.Lock()
    zeros = (ctypes.c_uint64 * 2)()

    def launch_checked(args: Sequence[Any], dims: Sequence[int], stream: Any = None) -> None:
        found = (ctypes.c_uint64 * 2)()
        with lock, driver.using_context(handle.context):
            driver.synchronize()  # earlier launches of this module must not write into this call's record
            driver.copy_to_device(record, ctypes.addressof(zeros), ctypes.sizeof(zeros))
            launch(args, dims, stream)
            driver.synchronize()
            driver.copy_to_host(ctypes.addressof(found), record, ctypes.sizeof(found))
        site, offset = found[0], ctypes.c_int64(found[1]).value
        if site:
            where = sites[site - 1] if 0 < site <= len(sites) else f"site {site}"
            raise OutOfBoundsError(f"out-of-bounds access to {where} (element offset {offset})")

    return launch_checked


def _unload(driver: Any, context: int, module: int) -> None:
    try:
        with driver.using_context(context):
            driver.unload_module(module)
    except TilecraftError:
        pass  # unloading is best effort: a failing driver at this point has nothing left to free


def artifact_arch(artifact: CompiledArtifact) -> str:
    """The `sm_XY[a]` to compile for, from the artifact's target."""
    arch = artifact.target.attr("arch")
    if not isinstance(arch, str) or not arch.startswith("sm_"):
        raise TilecraftError(
            f"target {artifact.target} has no arch such as sm_90a; name one (e.g. '{artifact.target.kind} "
            "-arch=sm_90a') so the kernel can be compiled"
        )
    return arch


def artifact_device(artifact: CompiledArtifact) -> int:
    return int(artifact.target.attr("device", 0))


def compile_flags(artifact: CompiledArtifact) -> tuple[str, ...]:
    """The user's `compile_flags`, passed to the device compiler as they are."""
    return tuple(str(f) for f in artifact.extra_value("compile_flags", ()) or ())


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class CudaRuntimeBackend(CachedExecutionBackend):
    """Load and Launch of `kernel.cubin` through the CUDA driver; subclasses implement Build."""

    array_readers = (interop.read_cuda_array_interface,)
    benchmark_resource = "GPU"

    def build_files(self, artifact: CompiledArtifact, cubin: bytes, meta: Mapping[str, Any]
                    ) -> tuple[dict[str, bytes], dict[str, Any]]:  # fmt: skip
        """The cache entry of a build: the cubin, the source it came from, and metadata."""
        files = {CUBIN_FILE: cubin}
        if SOURCE_FORMAT in artifact.device_sources:
            files[SOURCE_FILE] = artifact.source(SOURCE_FORMAT).encode()
        kernels = [info.symbol for info in artifact.kernels]
        return files, {**meta, "kernels": kernels, "cubin_sha256": sha256(cubin)}

    def load(self, built: Built) -> Loaded:
        artifact = built.artifact
        check_artifact(artifact)
        driver = cuda_driver.get_driver()
        device = artifact_device(artifact)
        context = driver.primary_context(device)
        with driver.using_context(context):
            module = _load_image(driver, built.read(CUBIN_FILE), artifact, device)
            try:
                functions = tuple(driver.function(module, k.symbol) for k in artifact.kernels)
                for info, function in zip(artifact.kernels, functions):
                    _allow_dynamic_smem(driver, device, info, function)
            except BaseException:
                driver.unload_module(module)
                raise
        return Loaded(built, CudaModule(driver, device, context, module, functions))

    def compiled_launcher(self, loaded: Loaded, plan: LaunchPlan, miss: Any) -> Callable[..., Any] | None:
        """The compiled launcher over `native_launch` (tilecraft/execution/native)."""
        return native.compiled_launcher(self.native_launch(loaded), plan, miss)

    def launcher(self, loaded: Loaded) -> Callable[..., None]:
        buffers = [i for i, p in enumerate(loaded.built.artifact.params) if p.kind == "buffer"]
        launch = _build_launcher(loaded, make_stream_resolver(buffers), raw=False)
        sites = bounds_sites(loaded.built.artifact)
        return checked_launcher(loaded.handle, launch, sites) if sites else launch

    def fast_path(self, loaded: Loaded) -> FastPath | None:
        """What tilecraft.jit's generated fast path for torch tensors needs: a launcher taking raw device
        pointers and a raw stream, the device the tensors must be on, and torch's stream getter (None
        for bounds-checked kernels: each call must read the check's record back)."""
        if bounds_sites(loaded.built.artifact):
            return None
        raw = _build_launcher(loaded, lambda stream, args: stream, raw=True)
        return FastPath(raw, loaded.handle.device, torch_current_stream)

    def native_launch(self, loaded: Loaded) -> NativeLaunch | None:
        """`cuLaunchKernel` of the driver library the Python path loaded, called by the compiled launcher
        for each kernel (None for kernels taking tensor maps, and grids the bytecode cannot express:
        their calls take the Python path)."""
        handle: CudaModule = loaded.handle
        artifact = loaded.built.artifact
        if bounds_sites(artifact):  # each call must read the check's record back: the Python path does
            return None
        if any(info.tensor_maps or _dynamic_cluster(info) for info in artifact.kernels):
            return None
        try:
            kernels = tuple(
                _native_kernel(artifact, info, function) for info, function in zip(artifact.kernels, handle.functions)
            )
        except native.NotCompilable:
            return None
        driver = handle.driver
        ctypes_entry = cuda_driver.LaunchEntry(driver.launch_kernel, False, int, "ctypes")
        return NativeLaunch(
            "kernel-params", ctypes.cast(driver.launch_kernel, ctypes.c_void_p).value,
            _failure_handler(handle, ctypes_entry, artifact.kernels), handle.device, artifact.buffer_alignment,
            stream=_stream_getter(), kernels=kernels, keep_alive=handle,
        )  # fmt: skip

    def c_api(self, built: Built) -> Mapping[str, bytes]:
        """`<function>.h` and `<function>.c`: load kernel.cubin and launch it with the driver API."""
        from tilecraft.execution.cuda_driver.export_c import c_api

        return c_api(built.artifact)

    def synchronize(self, loaded: Loaded) -> None:
        """Wait until every kernel launched so far on the module's device has finished."""
        handle: CudaModule = loaded.handle
        with handle.driver.using_context(handle.context):
            handle.driver.synchronize()

    def timer(self, target: Any, flush_bytes: int) -> DeviceTimer:
        """CUDA events through torch when torch's CUDA is in use, else the wall clock with the device
        synchronized; both flush the L2 with a `flush_bytes` write (see timing.py)."""
        from tilecraft.execution.cuda_driver.timing import cuda_timer

        return cuda_timer(int(target.attr("device", 0)), flush_bytes)

    def kernel_clock(self, target: Any, flush_bytes: int) -> KernelClock:
        """CUPTI's records of each kernel's run on the GPU, through torch's profiler (kernel_clock.py)."""
        from tilecraft.execution.cuda_driver.kernel_clock import cuda_kernel_clock

        return cuda_kernel_clock(int(target.attr("device", 0)), flush_bytes)

    def benchmark_devices(self, target: Any) -> tuple[BenchmarkDevice, ...]:
        """Every visible GPU of the target device's model, each pinned through CUDA_VISIBLE_DEVICES (the
        target's device ordinal is then 0 in the worker); only the target's device when it is not 0."""
        index = int(target.attr("device", 0))
        first = cuda_driver.get_driver().device_info(index)
        arch = f"sm_{first.major}{first.minor}"
        if index != 0:
            return (BenchmarkDevice(first.name, arch),)
        visible = _visible_ordinals(cuda_driver.get_driver().device_count())
        same = [i for i in range(len(visible)) if cuda_driver.get_driver().device_info(i).name == first.name]
        return tuple(BenchmarkDevice(first.name, arch, {"CUDA_VISIBLE_DEVICES": visible[i]}) for i in same)

    def check_device(self, arg: ArrayArg, name: str) -> None:
        """Arrays must be in GPU memory (a device type of the spec's); the device index is checked by the
        launcher, which knows it, and the alignment by the JIT, from the artifact."""
        if not self.accepts_device(arg):
            raise interop.not_on_gpu(arg, name)

    def empty(self, reference: ArrayArg | None, shape: tuple[int, ...], dtype: DataType) -> Any:
        """An output on `reference`'s GPU, from its library (torch or CuPy); never host memory."""
        return interop.empty_like_library(reference, shape, dtype)

    def to_device(self, array: Any, device: int | None = None) -> Any:
        return interop.to_device(array, device)

    def to_host(self, array: Any) -> Any:
        return interop.to_host(array)


def _stream_getter() -> Callable[[int], int]:
    """torch's raw current-stream getter itself when torch is imported (no Python frame per call), else
    the wrapper that finds it once a tensor brings torch in."""
    if imported("torch") is not None:
        return current_stream_getter()
    return torch_current_stream


def _dynamic_cluster(info: KernelInfo) -> bool:
    """A grid dim that is clustered and not a constant: the Python path checks that it divides (the
    compiled launcher's grid programs do not)."""
    return any(c > 1 and not isinstance(E.const_value(g), int) for g, c in zip(info.grid, info.cluster))


def _native_kernel(artifact: CompiledArtifact, info: KernelInfo, function: int) -> NativeKernel:
    n = len(artifact.params)
    names = {p.name: i for i, p in enumerate(artifact.params) if p.kind == "scalar"}
    names.update({v.name: n + j for j, v in enumerate(artifact.symbolic_dims)})
    grid = tuple(native.program(e, names) for e in info.grid) + ((native.OPS["const"], 1),) * (3 - len(info.grid))
    slots = []
    for param in info.params:
        index = next((i for i, p in enumerate(artifact.params) if p.name == param.name), None)
        if index is None:
            index = next(n + j for j, v in enumerate(artifact.symbolic_dims) if v.name == param.name)
        slots.append((index, "p" if param.kind == "buffer" else SCALAR_CODES[param.dtype.name]))
    block = tuple(info.block) + (1,) * (3 - len(info.block))
    return NativeKernel(function, grid, block, info.dynamic_smem, tuple(slots))


def _load_image(driver: Any, image: bytes, artifact: CompiledArtifact, device: int) -> int:
    try:
        return driver.load_module(image)
    except cuda_driver.DriverError as err:
        if err.code not in _IMAGE_ERRORS:
            raise
        info = driver.device_info(device)
        version = driver.version()
        raise TilecraftError(
            f"CUDA device {device} ({info.name}, compute capability {info.major}.{info.minor}, driver CUDA "
            f"{version // 1000}.{version % 1000 // 10}) cannot load the cubin of {artifact.function_name}, "
            f"built for {artifact.target.attr('arch')}: {err}; compile for the device's arch (a target "
            "without -arch reads it from the device) with a compiler whose CUDA major version the driver "
            "supports"
        ) from err


def _allow_dynamic_smem(driver: Any, device: int, info: KernelInfo, function: int) -> None:
    if info.dynamic_smem == 0:
        return
    # Without the opt-in a kernel may use 48 KiB in all: the attribute's default is 48 KiB minus the
    # static shared memory (the mbarriers of a TMA pipeline live there).
    static = driver.function_attribute(function, cuda_driver.FUNC_ATTR_SHARED_SIZE_BYTES)
    if info.dynamic_smem + static <= DEFAULT_DYNAMIC_SMEM:
        return
    limit = driver.device_info(device).max_shared_memory_per_block_optin
    if info.dynamic_smem + static > limit:
        raise TilecraftError(
            f"kernel {info.symbol} needs {info.dynamic_smem} bytes of dynamic shared memory (+{static} static); "
            f"CUDA device {device} allows {limit} bytes per block"
        )
    driver.set_function_attribute(
        function, cuda_driver.FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, info.dynamic_smem,
        detail=f"raising the dynamic shared memory of kernel {info.symbol} to {info.dynamic_smem} bytes",
    )  # fmt: skip


def _build_launcher(loaded: Loaded, resolve_stream: Callable[[Any, Sequence[Any]], Any], raw: bool):
    """The generated launcher of every kernel of `loaded`: from ArrayArgs, or from raw pointers (`raw`)."""
    handle: CudaModule = loaded.handle
    artifact = loaded.built.artifact
    entry = handle.driver.launch_entry()
    hooks = LaunchHooks(
        launch_kernel=entry.call,
        returns_tuple=entry.returns_tuple,
        resolve_stream=resolve_stream,
        failed=_failure_handler(handle, entry, artifact.kernels),
        wrong_device=_wrong_device_handler(handle.device, [p.name for p in artifact.params]),
        tensor_maps=_tensor_maps(handle),
    )
    functions = tuple(entry.function(f) for f in handle.functions)
    return build_launcher(artifact, functions, handle.device, hooks, keep_alive=handle, raw=raw)


def _failure_handler(
    handle: CudaModule, entry: cuda_driver.LaunchEntry, kernels: Sequence[KernelInfo]
) -> Callable[[int, int, tuple], None]:
    driver = handle.driver

    def failed(k: int, rc: int, call: tuple[Any, ...]) -> None:
        """A launch failed. With a foreign (or no) context current on this thread, retry once in ours;
        otherwise raise naming the kernel and its launch configuration."""
        if rc in _RETRY_IN_CONTEXT:
            with driver.using_context(handle.context):
                rc = entry.result(entry.call(*call))
            if rc == cuda_driver.CUDA_SUCCESS:
                return
        _, gx, gy, gz, bx, by, bz, smem, stream = call[:9]
        raise driver.error(
            "cuLaunchKernel", int(rc),
            f"kernel {kernels[k].symbol}, grid ({gx}, {gy}, {gz}), block ({bx}, {by}, {bz}), dynamic shared "
            f"memory {smem} bytes, stream {_hex(stream)}, device {handle.device}",
        )  # fmt: skip

    return failed


def _tensor_maps(handle: CudaModule) -> Callable[[Any, str], TensorMaps]:
    return lambda info, symbol: TensorMaps(handle.driver, info, symbol)


def _hex(stream: Any) -> str:
    return hex(stream) if isinstance(stream, int) else repr(stream)


def _wrong_device_handler(device: int, names: list[str]) -> Callable[[Sequence[Any]], None]:
    def wrong_device(args: Sequence[Any]) -> None:
        raise interop.wrong_device_error(args, device, names)

    return wrong_device


def _visible_ordinals(count: int) -> list[str]:
    """What CUDA_VISIBLE_DEVICES must say to show device i of this process alone (the parent's list
    narrowed, when it set one)."""
    import os

    listed = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return listed[:count] if len(listed) >= count else [str(i) for i in range(count)]
