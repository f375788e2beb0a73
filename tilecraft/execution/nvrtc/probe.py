"""Availability probes of the CUDA execution backends: each missing piece has its own reason and fix."""

from __future__ import annotations

from tilecraft.execution.base import Availability


def device_availability() -> Availability:
    """A loadable NVIDIA driver that initializes, and at least one CUDA device."""
    from tilecraft.execution.nvrtc import driver as cuda_driver

    try:
        driver = cuda_driver.get_driver()
        count = driver.device_count()
        version = driver.version()
    except cuda_driver.DriverUnavailable as err:
        return Availability(False, err.reason, err.fix)
    except cuda_driver.DriverError as err:
        return Availability(False, str(err), "check `nvidia-smi`; reinstall or update the NVIDIA driver")
    if count == 0:
        return Availability(False, "the NVIDIA driver reports no CUDA device", cuda_driver.DEVICE_FIX)
    return Availability(True, f"{count} CUDA device(s), driver CUDA {version // 1000}.{version % 1000 // 10}")


def nvrtc_availability() -> Availability:
    """cuda-python's NVRTC bindings, the NVRTC library, the driver and a device, checked in that order."""
    from tilecraft.execution.nvrtc import compiler

    try:
        compiler.nvrtc_module()
        version = compiler.nvrtc_version()
    except compiler.NvrtcUnavailable as err:
        return Availability(False, err.reason, err.fix)
    devices = device_availability()
    if not devices.ok:
        return devices
    return Availability(True, f"NVRTC {version}; {devices.reason}")
