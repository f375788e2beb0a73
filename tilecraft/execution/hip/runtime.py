"""The HIP runtime API through ctypes on `libamdhip64`, for the `hip` execution backend.

ctypes on the runtime library (not a binding package) shares one library object with torch's ROCm
build in the process, so devices, streams and pointers interoperate, as the CUDA driver runtime does
with libcuda. Nothing is loaded at import: `get_runtime()` loads the library and calls `hipInit` once,
on first use. Every call's hipError_t is checked; a failure raises `HipError` naming the call, the
error's name and the runtime's description.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from tilecraft.errors import ToolchainError

HIP_SUCCESS = 0
HIP_ERROR_NO_DEVICE = 100
HIP_ERROR_INVALID_IMAGE = 200
HIP_ERROR_INVALID_CONTEXT = 201
HIP_ERROR_NO_BINARY_FOR_GPU = 209
HIP_ERROR_INVALID_HANDLE = 400
HIP_ERROR_NOT_FOUND = 500

LIBRARY_NAMES = ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5")
RUNTIME_FIX = (
    "install ROCm's HIP runtime (libamdhip64, e.g. the rocm-hip-runtime package) and the amdgpu driver; in a "
    "container, pass /dev/kfd and /dev/dri"
)
DEVICE_FIX = "run on a machine with an AMD GPU; check `rocminfo` and HIP_VISIBLE_DEVICES"

_P = ctypes.c_void_p
_U = ctypes.c_uint
_INT_P = ctypes.POINTER(ctypes.c_int)
_PTR_P = ctypes.POINTER(ctypes.c_void_p)

# name -> argument types; every function returns a hipError_t (int).
SIGNATURES: dict[str, list[Any]] = {
    "hipInit": [_U],
    "hipGetDeviceCount": [_INT_P],
    "hipRuntimeGetVersion": [_INT_P],
    "hipSetDevice": [ctypes.c_int],
    "hipGetDevice": [_INT_P],
    "hipModuleLoadData": [_PTR_P, _P],
    "hipModuleUnload": [_P],
    "hipModuleGetFunction": [_PTR_P, _P, ctypes.c_char_p],
    "hipModuleLaunchKernel": [_P, _U, _U, _U, _U, _U, _U, _U, _P, _P, _P],
    "hipDeviceSynchronize": [],
    "hipStreamCreate": [_PTR_P],
    "hipStreamDestroy": [_P],
    "hipStreamSynchronize": [_P],
}


class HipError(ToolchainError):
    """A HIP runtime call failed."""

    def __init__(self, call: str, code: int, name: str, text: str, detail: str = "") -> None:
        where = f" ({detail})" if detail else ""
        super().__init__(f"{call} failed{where}: {name} ({code}): {text}")
        self.call, self.code, self.name = call, code, name


class RuntimeUnavailable(ToolchainError):
    """The HIP runtime library cannot be loaded or initialized here."""

    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(f"{reason}; {fix}")
        self.reason, self.fix = reason, fix


def _load_library() -> ctypes.CDLL:
    errors = []
    for name in LIBRARY_NAMES:
        try:
            return ctypes.CDLL(name)
        except OSError as err:
            errors.append(str(err))
    raise OSError(f"{errors[0]} (also tried {', '.join(LIBRARY_NAMES[1:])})")


class HipRuntime:
    """The checked calls tilecraft makes into libamdhip64."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self.functions: dict[str, Any] = {}
        for name, argtypes in SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
            self.functions[name] = fn
        for name in ("hipGetErrorName", "hipGetErrorString"):
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_char_p

    def call(self, name: str, *args: Any, detail: str = "") -> None:
        rc = self.functions[name](*args)
        if rc != HIP_SUCCESS:
            raise self.error(name, rc, detail)

    def error(self, call: str, rc: int, detail: str = "") -> HipError:
        name = (self.lib.hipGetErrorName(rc) or b"hipErrorUnknown").decode()
        text = (self.lib.hipGetErrorString(rc) or b"unknown error").decode()
        return HipError(call, rc, name, text, detail)

    @property
    def launch_kernel(self) -> Any:
        """`hipModuleLaunchKernel` itself, for the generated launcher (it checks the result)."""
        return self.functions["hipModuleLaunchKernel"]

    def version(self) -> str:
        out = ctypes.c_int()
        self.call("hipRuntimeGetVersion", ctypes.byref(out))
        v = out.value  # major * 10_000_000 + minor * 100_000 + patch
        return f"{v // 10_000_000}.{v // 100_000 % 100}.{v % 100_000}"

    def device_count(self) -> int:
        out = ctypes.c_int()
        rc = self.functions["hipGetDeviceCount"](ctypes.byref(out))
        if rc == HIP_ERROR_NO_DEVICE:
            return 0
        if rc != HIP_SUCCESS:
            raise self.error("hipGetDeviceCount", rc)
        return out.value

    def set_device(self, index: int) -> None:
        self.call("hipSetDevice", index, detail=f"device {index}")

    def load_module(self, image: bytes) -> int:
        out = ctypes.c_void_p()
        buffer = ctypes.create_string_buffer(image, len(image))
        self.call("hipModuleLoadData", ctypes.byref(out), buffer)
        return int(out.value or 0)

    def unload_module(self, module: int) -> None:
        self.call("hipModuleUnload", module)

    def function(self, module: int, symbol: str) -> int:
        out = ctypes.c_void_p()
        self.call(
            "hipModuleGetFunction", ctypes.byref(out), module, symbol.encode(), detail=f"kernel {symbol}"
        )
        return int(out.value or 0)

    def synchronize(self) -> None:
        self.call("hipDeviceSynchronize")

    def stream_create(self) -> int:
        out = ctypes.c_void_p()
        self.call("hipStreamCreate", ctypes.byref(out))
        return int(out.value or 0)

    def stream_destroy(self, stream: int) -> None:
        self.call("hipStreamDestroy", stream)

    def stream_synchronize(self, stream: int) -> None:
        self.call("hipStreamSynchronize", stream)


_runtime: list[HipRuntime] = []
_lock = threading.Lock()


def get_runtime() -> HipRuntime:
    """The process's HIP runtime, loaded and initialized on first use; RuntimeUnavailable says why not."""
    with _lock:
        if not _runtime:
            _runtime.append(_open_runtime())
        return _runtime[0]


def reset_runtime() -> None:
    """Forget the loaded runtime (tests swap the library underneath)."""
    with _lock:
        _runtime.clear()


def _open_runtime() -> HipRuntime:
    try:
        lib = _load_library()
    except OSError as err:
        raise RuntimeUnavailable(
            f"the HIP runtime library (libamdhip64) cannot be loaded: {err}", RUNTIME_FIX
        ) from None
    try:
        runtime = HipRuntime(lib)
    except AttributeError as err:
        raise RuntimeUnavailable(
            f"the library loaded as libamdhip64 is not the HIP runtime: {err}", RUNTIME_FIX
        ) from None
    rc = runtime.functions["hipInit"](0)
    if rc == HIP_ERROR_NO_DEVICE:
        raise RuntimeUnavailable("the HIP runtime finds no AMD GPU (hipInit: hipErrorNoDevice)", DEVICE_FIX)
    if rc != HIP_SUCCESS:
        err = runtime.error("hipInit", rc)
        raise RuntimeUnavailable(str(err), RUNTIME_FIX)
    return runtime
