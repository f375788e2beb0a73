"""OpenCL platforms and devices through pyopencl: the import, discovery by index, capabilities, the
availability probe, and the per-device runtime (context, queue, buffer pool).

Everything is lazy: pyopencl is imported on first use, never when this module is. A device is looked
up at most once per process for each (platform, device) index pair; `reset()` forgets (tests).
Every way of not finding a device is an `OpenCLUnavailable` with its own reason and fix.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from tilecraft.backend.execution import Availability
from tilecraft.errors import Unavailable

PYOPENCL_FIX = (
    "`pip install pyopencl`; for an OpenCL platform on the CPU also `pip install pocl-binary-distribution`"
)
PLATFORM_FIX = (
    "install an OpenCL driver (ICD): PoCL for the CPU (`pip install pocl-binary-distribution`) or your GPU "
    "vendor's driver; `clinfo -l` lists what the ICD loader finds"
)
DEVICE_FIX = (
    "install a driver for the device (PoCL covers the CPU: `pip install pocl-binary-distribution`); "
    "`clinfo -l` lists each platform's devices"
)
BUILD_FIX = (
    "the OpenCL driver cannot compile for this device. PoCL from pip (`pocl-binary-distribution` 3.0, LLVM 14) "
    "does not know CPUs newer than LLVM 14 (AMD Zen 5 gives \"unknown target CPU 'generic'\"): install the "
    "distribution's PoCL (Debian/Ubuntu: `apt-get install pocl-opencl-icd`) and select it with "
    "-platform=N or OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd; `tilecraft doctor` lists the platforms"
)
# The smallest program that exercises the device compiler and its kernel library.
PROBE_SOURCE = "__kernel void tc_probe(__global float* x) { x[get_global_id(0)] = exp(x[get_global_id(0)]); }"
FP16 = "cl_khr_fp16"
FP64 = "cl_khr_fp64"
CL_DEVICE_TYPE_CPU = 1 << 1  # the OpenCL constant (pyopencl.device_type.CPU)
INT64_ATOMICS = "cl_khr_int64_base_atomics"


class OpenCLUnavailable(Unavailable):
    """pyopencl, an OpenCL platform or the requested device is missing; `reason` and `fix` say which."""


def import_pyopencl() -> ModuleType:
    """The pyopencl module, or OpenCLUnavailable saying how to install it."""
    try:
        return importlib.import_module("pyopencl")
    except ModuleNotFoundError as err:
        if err.name != "pyopencl":  # installed, but something it needs is missing
            raise OpenCLUnavailable(f"pyopencl cannot be imported: {err}", PYOPENCL_FIX) from None
        raise OpenCLUnavailable("pyopencl is not installed", PYOPENCL_FIX) from None
    except ImportError as err:  # e.g. the OpenCL ICD loader library cannot be loaded
        raise OpenCLUnavailable(f"pyopencl cannot be imported: {err}", PYOPENCL_FIX) from None


def list_platforms(cl: ModuleType) -> list[Any]:
    """Every platform the ICD loader finds; OpenCLUnavailable when there is none."""
    try:
        found = list(cl.get_platforms())
    except cl.Error as err:  # PLATFORM_NOT_FOUND_KHR when no driver is installed
        raise OpenCLUnavailable(f"no OpenCL platform found ({_first_line(err)})", PLATFORM_FIX) from None
    if not found:
        raise OpenCLUnavailable("no OpenCL platform found (the ICD loader lists none)", PLATFORM_FIX)
    return found


def list_devices(cl: ModuleType, platform: Any) -> list[Any]:
    """The devices of one platform (none when the platform reports DEVICE_NOT_FOUND)."""
    try:
        return list(platform.get_devices())
    except cl.Error:
        return []


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


@dataclass(frozen=True)
class DeviceInfo:
    """One OpenCL device, by platform and device index, with what targets and launches need to know."""

    platform_index: int
    device_index: int
    platform_name: str
    platform_version: str
    name: str
    vendor: str
    driver_version: str
    extensions: tuple[str, ...]
    local_mem: int
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    handle: Any = field(default=None, compare=False, repr=False)  # the pyopencl Device
    cpu: bool = False  # CL_DEVICE_TYPE_CPU (PoCL's CPU device, say)

    @property
    def fp16(self) -> bool:
        return FP16 in self.extensions

    @property
    def fp64(self) -> bool:
        return FP64 in self.extensions

    @property
    def int64_atomics(self) -> bool:
        return INT64_ATOMICS in self.extensions

    def capabilities(self) -> dict[str, bool | int]:
        """The target attributes read from this device."""
        return {
            "fp16": self.fp16, "fp64": self.fp64, "int64_atomics": self.int64_atomics,
            "local_mem": self.local_mem, "max_work_group_size": self.max_work_group_size,
        }  # fmt: skip

    def identity(self) -> str:
        """What a program binary depends on: platform name and version, device name, driver version."""
        return f"{self.platform_name} | {self.platform_version} | {self.name} | driver {self.driver_version}"

    def describe(self) -> str:
        return (
            f"OpenCL device {self.name!r} on platform {self.platform_name!r} "
            f"(platform {self.platform_index}, device {self.device_index})"
        )


def _device_info(platform_index: int, device_index: int, platform: Any, device: Any) -> DeviceInfo:
    return DeviceInfo(
        platform_index, device_index, platform.name.strip(), platform.version.strip(), device.name.strip(),
        device.vendor.strip(), device.driver_version.strip(), tuple(device.extensions.split()),
        int(device.local_mem_size), int(device.max_work_group_size), tuple(device.max_work_item_sizes), device,
        bool(int(device.type) & CL_DEVICE_TYPE_CPU),
    )  # fmt: skip


def _find(platform_index: int, device_index: int) -> DeviceInfo:
    cl = import_pyopencl()
    platforms = list_platforms(cl)
    if not 0 <= platform_index < len(platforms):
        listing = ", ".join(
            f"{i}: {p.name.strip()!r} ({len(list_devices(cl, p))} device(s))" for i, p in enumerate(platforms)
        )
        raise OpenCLUnavailable(
            f"OpenCL platform {platform_index} does not exist; platforms: {listing}",
            "name an existing platform with the target attribute -platform=N",
        )
    platform = platforms[platform_index]
    devices = list_devices(cl, platform)
    if not devices:
        raise OpenCLUnavailable(f"OpenCL platform {platform.name.strip()!r} has no device", DEVICE_FIX)
    if not 0 <= device_index < len(devices):
        listing = ", ".join(f"{i}: {d.name.strip()!r}" for i, d in enumerate(devices))
        raise OpenCLUnavailable(
            f"OpenCL platform {platform_index} ({platform.name.strip()!r}) has no device {device_index}; "
            f"devices: {listing}",
            "name an existing device with the target attribute -device=N",
        )
    info = _device_info(platform_index, device_index, platform, devices[device_index])
    _probe_build(cl, info)
    return info


def _probe_build(cl: ModuleType, info: DeviceInfo) -> None:
    """A device whose driver cannot build a one-line program is unavailable, with the driver's reason."""
    try:
        context = cl.Context([info.handle])
        cl.Program(context, PROBE_SOURCE).build(options=["-cl-std=CL1.2"], cache_dir=False)
    except cl.Error as err:
        raise OpenCLUnavailable(
            f"{info.describe()} cannot build OpenCL C programs: {_driver_error(err)}", BUILD_FIX
        ) from None


def _driver_error(err: BaseException) -> str:
    """The build log's first `error:` line, else the exception's first line."""
    for line in str(err).splitlines():
        if "error:" in line:
            return line.strip()
    return _first_line(err)


_lock = threading.Lock()
_status: dict[tuple[int, int], DeviceInfo | OpenCLUnavailable] = {}
_runtimes: dict[tuple[int, int], DeviceRuntime] = {}


def device_status(platform_index: int, device_index: int) -> DeviceInfo | OpenCLUnavailable:
    """The device at these indices, or an OpenCLUnavailable saying why there is none (not raised)."""
    key = (platform_index, device_index)
    with _lock:
        if key not in _status:
            try:
                _status[key] = _find(platform_index, device_index)
            except OpenCLUnavailable as err:
                _status[key] = err
        return _status[key]


def find_device(platform_index: int, device_index: int) -> DeviceInfo:
    """The device at these indices; raises OpenCLUnavailable when there is none."""
    status = device_status(platform_index, device_index)
    if isinstance(status, OpenCLUnavailable):
        raise status
    return status


def reset() -> None:
    """Forget every looked-up device and runtime (tests, or after installing a driver)."""
    with _lock:
        _status.clear()
        _runtimes.clear()


def availability() -> Availability:
    """pyopencl importable, at least one platform, and a device on one of them that builds programs,
    checked in that order."""
    try:
        cl = import_pyopencl()
        platforms = list_platforms(cl)
    except OpenCLUnavailable as err:
        return Availability(False, err.reason, err.fix)
    counts = [(p.name.strip(), len(list_devices(cl, p))) for p in platforms]
    if not any(n for _, n in counts):
        names = ", ".join(repr(name) for name, _ in counts)
        return Availability(False, f"no device on the OpenCL platform(s) {names}", DEVICE_FIX)
    statuses = [device_status(p, d) for p, (_, n) in enumerate(counts) for d in range(n)]
    usable = [s for s in statuses if isinstance(s, DeviceInfo)]
    if not usable:
        first = statuses[0]
        return Availability(False, first.reason, first.fix)
    found = ", ".join(f"{name!r}: {n} device(s)" for name, n in counts)
    broken = "".join(f"; unusable: {s.reason}" for s in statuses if isinstance(s, OpenCLUnavailable))
    return Availability(True, f"pyopencl {cl.VERSION_TEXT}; platforms {found}{broken}")


@dataclass(eq=False)
class DeviceRuntime:
    """What launches on one device share: its context, the in-order queue, a pool of device buffers,
    and the lock a call holds from its first copy in to its last copy back (the queue runs one call's
    commands after another's anyway, and kernel arguments are state of the shared kernel objects)."""

    info: DeviceInfo
    context: Any
    queue: Any
    pool: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


def runtime(platform_index: int, device_index: int) -> DeviceRuntime:
    """The device's runtime, created once per process."""
    key = (platform_index, device_index)
    info = find_device(*key)
    with _lock:
        if key not in _runtimes:
            _runtimes[key] = _new_runtime(info)
        return _runtimes[key]


def _new_runtime(info: DeviceInfo) -> DeviceRuntime:
    cl = import_pyopencl()
    from pyopencl import tools

    context = cl.Context([info.handle])
    queue = cl.CommandQueue(context, info.handle)
    return DeviceRuntime(info, context, queue, tools.MemoryPool(tools.ImmediateAllocator(queue)))
