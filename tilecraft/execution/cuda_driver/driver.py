"""The CUDA driver API through ctypes on `libcuda.so.1`, shared by the `nvrtc` and `nvcc` execution
backends and by the CUDA target's detector.

ctypes on the driver library is used instead of a binding package because the driver's C ABI is stable
across every driver version and the same library object is shared with torch and cuda-python in one
process (so contexts, streams and pointers interoperate). The one exception is the launch hot path:
cuda-python's Cython `cuLaunchKernel` costs about half of a ctypes call, so `launch_entry()` uses it when
cuda-python is installed and works, and the ctypes function otherwise. Nothing is loaded at import:
`get_driver()` loads the library and calls `cuInit` once, on first use.

Every call's CUresult is checked; a failure raises `DriverError` naming the call, the error's name and
the driver's description.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tilecraft.errors import ToolchainError, Unavailable

CUDA_SUCCESS = 0
CUDA_ERROR_STUB_LIBRARY = 34
CUDA_ERROR_INSUFFICIENT_DRIVER = 35
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_INVALID_IMAGE = 200
CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_NO_BINARY_FOR_GPU = 209
CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222
CUDA_ERROR_INVALID_HANDLE = 400

ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8
ATTR_MULTIPROCESSOR_COUNT = 16
ATTR_COMPUTE_CAPABILITY_MAJOR = 75
ATTR_COMPUTE_CAPABILITY_MINOR = 76
ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
FUNC_ATTR_MAX_THREADS_PER_BLOCK = 0
FUNC_ATTR_SHARED_SIZE_BYTES = 1
FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
POINTER_ATTR_DEVICE_ORDINAL = 9

LIBRARY_NAMES = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so")
DRIVER_FIX = (
    "install the NVIDIA driver (check with `nvidia-smi`); in a container, start it with GPU access "
    "(e.g. `docker run --gpus all`)"
)
DEVICE_FIX = "run on a machine with an NVIDIA GPU; check `nvidia-smi` and CUDA_VISIBLE_DEVICES"

_P = ctypes.c_void_p
_U = ctypes.c_uint
_INT_P = ctypes.POINTER(ctypes.c_int)
_PTR_P = ctypes.POINTER(ctypes.c_void_p)
_U64_P = ctypes.POINTER(ctypes.c_uint64)

# name -> argument types; every function returns a CUresult (int).
_SIGNATURES: dict[str, tuple[Any, ...]] = {
    "cuInit": (_U,),
    "cuDriverGetVersion": (_INT_P,),
    "cuGetErrorName": (ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)),
    "cuGetErrorString": (ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)),
    "cuDeviceGetCount": (_INT_P,),
    "cuDeviceGet": (_INT_P, ctypes.c_int),
    "cuDeviceGetAttribute": (_INT_P, ctypes.c_int, ctypes.c_int),
    "cuDeviceGetName": (ctypes.c_char_p, ctypes.c_int, ctypes.c_int),
    "cuDevicePrimaryCtxRetain": (_PTR_P, ctypes.c_int),
    "cuCtxGetCurrent": (_PTR_P,),
    "cuCtxSetCurrent": (_P,),
    "cuCtxPushCurrent_v2": (_P,),
    "cuCtxPopCurrent_v2": (_PTR_P,),
    "cuCtxSynchronize": (),
    "cuModuleLoadData": (_PTR_P, ctypes.c_char_p),
    "cuModuleUnload": (_P,),
    "cuModuleGetFunction": (_PTR_P, _P, ctypes.c_char_p),
    "cuFuncGetAttribute": (_INT_P, ctypes.c_int, _P),
    "cuFuncSetAttribute": (_P, ctypes.c_int, ctypes.c_int),
    "cuLaunchKernel": (_P, _U, _U, _U, _U, _U, _U, _U, _P, _P, _P),
    "cuStreamCreate": (_PTR_P, _U),
    "cuStreamDestroy_v2": (_P,),
    "cuStreamSynchronize": (_P,),
    "cuMemAlloc_v2": (_U64_P, ctypes.c_size_t),
    "cuMemFree_v2": (ctypes.c_uint64,),
    "cuMemsetD32_v2": (ctypes.c_uint64, _U, ctypes.c_size_t),
    "cuMemcpyHtoD_v2": (ctypes.c_uint64, _P, ctypes.c_size_t),
    "cuMemcpyDtoH_v2": (_P, ctypes.c_uint64, ctypes.c_size_t),
    "cuPointerGetAttribute": (_P, ctypes.c_int, ctypes.c_uint64),
}


class DriverError(ToolchainError):
    """A CUDA driver call returned an error."""

    def __init__(self, call: str, code: int, name: str, text: str, detail: str = "") -> None:
        self.call = call
        self.code = code
        self.error_name = name
        message = f"{call} failed: {name} ({code}): {text}"
        super().__init__(f"{message}; {detail}" if detail else message)


class DriverUnavailable(Unavailable):
    """No usable CUDA driver or device here; `reason` says why and `fix` what to do."""


@dataclass(frozen=True)
class DeviceInfo:
    """What the CUDA target needs to know about one device."""

    index: int
    name: str
    major: int
    minor: int
    sm_count: int
    max_shared_memory_per_block: int
    max_shared_memory_per_block_optin: int


@dataclass(frozen=True)
class LaunchEntry:
    """How the hot path calls `cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, 0)`.

    `call` returns a CUresult (an int), or a 1-tuple holding one when `returns_tuple` (cuda-python);
    `function(handle)` turns a CUfunction address into the object `call` takes fastest.
    """

    call: Callable[..., Any]
    returns_tuple: bool
    function: Callable[[int], Any]
    via: str

    def result(self, returned: Any) -> int:
        return int(returned[0] if self.returns_tuple else returned)


def _bindings_launch_entry() -> LaunchEntry | None:
    """cuda-python's `cuLaunchKernel`, if cuda-python is installed and reaches the driver; else None."""
    try:
        try:
            from cuda.bindings import driver as binding
        except ImportError:
            from cuda import cuda as binding  # cuda-python before 12.6
        result, _ = binding.cuDriverGetVersion()
        # Its CUresult must be an int (so `if rc:` works on the hot path); early 12.x enums were not.
        if not isinstance(result, int) or result != CUDA_SUCCESS:
            return None
        return LaunchEntry(binding.cuLaunchKernel, True, binding.CUfunction, "cuda-python")
    except Exception:  # not installed, or it cannot load the driver: the ctypes entry serves
        return None


def _load_library() -> ctypes.CDLL:
    """Open the driver library (tests replace this to simulate a machine without a driver)."""
    errors = []
    for name in LIBRARY_NAMES:
        try:
            return ctypes.CDLL(name)
        except OSError as err:
            errors.append(str(err))
    raise OSError("; ".join(errors))


class Driver:
    """The driver library with typed entry points, initialized (`cuInit`) once."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes = list(argtypes)
            fn.restype = ctypes.c_int
        self.launch_kernel = lib.cuLaunchKernel
        self._launch_entry: LaunchEntry | None = None
        self._contexts: dict[int, int] = {}
        self._devices: dict[int, DeviceInfo] = {}
        self._lock = threading.Lock()

    def call(self, name: str, *args: Any, detail: str = "") -> None:
        """Call driver function `name`; a non-zero CUresult raises DriverError naming the call."""
        rc = getattr(self.lib, name)(*args)
        if rc != CUDA_SUCCESS:
            raise self.error(name, rc, detail)

    def error(self, call: str, rc: int, detail: str = "") -> DriverError:
        return DriverError(call, rc, self.error_name(rc), self.error_text(rc), detail)

    def error_name(self, rc: int) -> str:
        text = ctypes.c_char_p()
        if self.lib.cuGetErrorName(rc, ctypes.byref(text)) != CUDA_SUCCESS or not text.value:
            return "CUDA_ERROR_UNKNOWN"
        return text.value.decode()

    def error_text(self, rc: int) -> str:
        text = ctypes.c_char_p()
        if self.lib.cuGetErrorString(rc, ctypes.byref(text)) != CUDA_SUCCESS or not text.value:
            return "unrecognized error code"
        return text.value.decode()

    def launch_entry(self) -> LaunchEntry:
        """The `cuLaunchKernel` the generated launchers call: cuda-python's when usable, else ctypes'."""
        if self._launch_entry is None:
            ctypes_entry = LaunchEntry(self.launch_kernel, False, int, "ctypes")
            self._launch_entry = _bindings_launch_entry() or ctypes_entry
        return self._launch_entry

    # ------------------------------------------------------------------ devices

    def version(self) -> int:
        """The driver's CUDA version as an int (13000 is 13.0)."""
        value = ctypes.c_int()
        self.call("cuDriverGetVersion", ctypes.byref(value))
        return value.value

    def device_count(self) -> int:
        value = ctypes.c_int()
        self.call("cuDeviceGetCount", ctypes.byref(value))
        return value.value

    def device(self, index: int) -> int:
        """The CUdevice of ordinal `index`; a clear error when there is no such device."""
        count = self.device_count()
        if not 0 <= index < count:
            raise DriverUnavailable(
                f"CUDA device {index} does not exist; this machine has {count} device(s)",
                "use a device index below the count (target attribute -device=N), or check "
                "CUDA_VISIBLE_DEVICES"
                if count
                else DEVICE_FIX,
            )
        dev = ctypes.c_int()
        self.call("cuDeviceGet", ctypes.byref(dev), index)
        return dev.value

    def attribute(self, index: int, attribute: int) -> int:
        value = ctypes.c_int()
        self.call("cuDeviceGetAttribute", ctypes.byref(value), attribute, self.device(index))
        return value.value

    def device_info(self, index: int) -> DeviceInfo:
        """Name, compute capability, SM count and shared-memory limits of device `index` (cached)."""
        with self._lock:
            info = self._devices.get(index)
        if info is None:
            info = self._read_device_info(index)
            with self._lock:
                self._devices[index] = info
        return info

    def _read_device_info(self, index: int) -> DeviceInfo:
        name = ctypes.create_string_buffer(256)
        self.call("cuDeviceGetName", name, len(name), self.device(index))
        return DeviceInfo(
            index,
            name.value.decode(errors="replace"),
            self.attribute(index, ATTR_COMPUTE_CAPABILITY_MAJOR),
            self.attribute(index, ATTR_COMPUTE_CAPABILITY_MINOR),
            self.attribute(index, ATTR_MULTIPROCESSOR_COUNT),
            self.attribute(index, ATTR_MAX_SHARED_MEMORY_PER_BLOCK),
            self.attribute(index, ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        )

    # ------------------------------------------------------------------ contexts

    def primary_context(self, index: int) -> int:
        """The primary context of device `index` (the one torch and the runtime API use), retained once
        for the life of the process."""
        with self._lock:
            ctx = self._contexts.get(index)
            if ctx is None:
                handle = ctypes.c_void_p()
                self.call("cuDevicePrimaryCtxRetain", ctypes.byref(handle), self.device(index))
                ctx = self._contexts[index] = handle.value
        return ctx

    def current_context(self) -> int:
        handle = ctypes.c_void_p()
        self.call("cuCtxGetCurrent", ctypes.byref(handle))
        return handle.value or 0

    @contextmanager
    def using_context(self, ctx: int) -> Iterator[None]:
        """Run the block with `ctx` current on this thread.

        With no context current, `ctx` is made current and stays so (as torch's lazy initialization
        does); when another context is current, `ctx` is pushed for the block and popped after it.
        """
        current = self.current_context()
        if current == ctx:
            yield
        elif not current:
            self.call("cuCtxSetCurrent", ctx)
            yield
        else:
            self.call("cuCtxPushCurrent_v2", ctx)
            try:
                yield
            finally:
                self.call("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))

    def synchronize(self) -> None:
        """Wait for all work of the current context."""
        self.call("cuCtxSynchronize")

    # ------------------------------------------------------------------ modules and functions

    def load_module(self, image: bytes) -> int:
        module = ctypes.c_void_p()
        self.call("cuModuleLoadData", ctypes.byref(module), image)
        return module.value

    def encode_tensor_map_tiled(self, out: int, dtype: int, rank: int, address: int, dims: Any, strides: Any,
                                box: Any, element_strides: Any, interleave: int, swizzle: int, l2_promotion: int,
                                oob_fill: int, detail: str = "") -> None:  # fmt: skip
        """`cuTensorMapEncodeTiled` into the 128 bytes at `out` (64-byte aligned); `dims`, `strides` (in
        bytes, rank - 1 of them), `box` and `element_strides` are ctypes arrays. Bound on first use: a
        driver older than CUDA 12 lacks it, and only TMA kernels need it."""
        fn = getattr(self.lib, "cuTensorMapEncodeTiled", None)
        if fn is None:
            raise DriverUnavailable(
                "the CUDA driver has no cuTensorMapEncodeTiled (TMA needs a CUDA 12 driver or newer)",
                "update the NVIDIA driver, or compile with pass_configs={'tl.disable_tma_lower': True}",
            )
        fn.argtypes = [
            _P,
            ctypes.c_int,
            _U,
            _P,
            _P,
            _P,
            _P,
            _P,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
        ]
        fn.restype = ctypes.c_int
        rc = fn(out, dtype, rank, address, dims, strides, box, element_strides, interleave, swizzle, l2_promotion,
                oob_fill)  # fmt: skip
        if rc != CUDA_SUCCESS:
            raise self.error("cuTensorMapEncodeTiled", rc, detail)

    def module_global(self, module: int, name: str) -> tuple[int, int]:
        """The device address and size in bytes of global variable `name` of `module`. Bound on first use
        (only bounds-checked kernels need it)."""
        fn = self.lib.cuModuleGetGlobal_v2
        fn.argtypes = [_U64_P, ctypes.POINTER(ctypes.c_size_t), _P, ctypes.c_char_p]
        fn.restype = ctypes.c_int
        ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
        rc = fn(ctypes.byref(ptr), ctypes.byref(size), module, name.encode())
        if rc != CUDA_SUCCESS:
            raise self.error("cuModuleGetGlobal_v2", rc, f"global {name!r} not found in the module?")
        return ptr.value, size.value

    def unload_module(self, module: int) -> None:
        self.call("cuModuleUnload", module)

    def function(self, module: int, symbol: str) -> int:
        fn = ctypes.c_void_p()
        self.call("cuModuleGetFunction", ctypes.byref(fn), module, symbol.encode(),
                  detail=f"kernel symbol {symbol!r} not found in the module?")  # fmt: skip
        return fn.value

    def function_attribute(self, fn: int, attribute: int) -> int:
        value = ctypes.c_int()
        self.call("cuFuncGetAttribute", ctypes.byref(value), attribute, fn)
        return value.value

    def set_function_attribute(self, fn: int, attribute: int, value: int, detail: str = "") -> None:
        self.call("cuFuncSetAttribute", fn, attribute, value, detail=detail)

    # ------------------------------------------------------------------ streams and memory

    def stream_create(self) -> int:
        stream = ctypes.c_void_p()
        self.call("cuStreamCreate", ctypes.byref(stream), 0)
        return stream.value

    def stream_destroy(self, stream: int) -> None:
        self.call("cuStreamDestroy_v2", stream)

    def stream_synchronize(self, stream: int) -> None:
        self.call("cuStreamSynchronize", stream)

    def mem_alloc(self, nbytes: int) -> int:
        ptr = ctypes.c_uint64()
        self.call("cuMemAlloc_v2", ctypes.byref(ptr), max(1, nbytes))
        return ptr.value

    def mem_free(self, ptr: int) -> None:
        self.call("cuMemFree_v2", ptr)

    def memset_d32(self, ptr: int, value: int, count: int) -> None:
        """Set `count` 32-bit words at device pointer `ptr` to `value`."""
        self.call("cuMemsetD32_v2", ptr, value, count)

    def copy_to_device(self, ptr: int, host_ptr: int, nbytes: int) -> None:
        self.call("cuMemcpyHtoD_v2", ptr, host_ptr, nbytes)

    def copy_to_host(self, host_ptr: int, ptr: int, nbytes: int) -> None:
        self.call("cuMemcpyDtoH_v2", host_ptr, ptr, nbytes)

    def pointer_device(self, ptr: int) -> int:
        """The ordinal of the device that owns device pointer `ptr`."""
        ordinal = ctypes.c_int()
        self.call("cuPointerGetAttribute", ctypes.byref(ordinal), POINTER_ATTR_DEVICE_ORDINAL, ptr)
        return ordinal.value


_lock = threading.Lock()
_state: dict[str, Any] = {}


def get_driver() -> Driver:
    """The process's Driver, loaded and initialized on first use; DriverUnavailable when it cannot be."""
    with _lock:
        if "driver" not in _state and "error" not in _state:
            try:
                _state["driver"] = _open_driver()
            except DriverUnavailable as err:
                _state["error"] = err
        if "error" in _state:
            raise _state["error"]
        return _state["driver"]


def reset_driver() -> None:
    """Forget the loaded driver or the reason it was not loaded (tests)."""
    with _lock:
        _state.clear()


def _open_driver() -> Driver:
    try:
        lib = _load_library()
    except OSError as err:
        raise DriverUnavailable(
            f"the NVIDIA driver library ({' or '.join(LIBRARY_NAMES)}) cannot be loaded: {err}", DRIVER_FIX
        ) from None
    try:
        driver = Driver(lib)
    except AttributeError as err:
        raise DriverUnavailable(f"the NVIDIA driver library lacks a function tilecraft needs: {err}",
                                "update the NVIDIA driver") from None  # fmt: skip
    rc = lib.cuInit(0)
    if rc != CUDA_SUCCESS:
        raise _init_failure(driver, rc)
    return driver


def _init_failure(driver: Driver, rc: int) -> DriverUnavailable:
    what = f"cuInit failed: {driver.error_name(rc)} ({rc}): {driver.error_text(rc)}"
    if rc == CUDA_ERROR_NO_DEVICE:
        return DriverUnavailable(f"the NVIDIA driver found no CUDA device ({what})", DEVICE_FIX)
    if rc == CUDA_ERROR_STUB_LIBRARY:
        return DriverUnavailable(
            f"the loaded libcuda is the toolkit's stub, not a driver ({what})", DRIVER_FIX
        )
    if rc == CUDA_ERROR_INSUFFICIENT_DRIVER:
        return DriverUnavailable(f"the NVIDIA driver is too old ({what})", "update the NVIDIA driver")
    return DriverUnavailable(what, "check `nvidia-smi`; reinstall or update the NVIDIA driver")


def device_status(index: int = 0) -> DeviceInfo | DriverUnavailable:
    """Device `index`'s info, or why there is none (no driver, no device); never raises for those."""
    try:
        return get_driver().device_info(index)
    except DriverUnavailable as err:
        return err
    except DriverError as err:
        return DriverUnavailable(str(err), "check `nvidia-smi`; reinstall or update the NVIDIA driver")
