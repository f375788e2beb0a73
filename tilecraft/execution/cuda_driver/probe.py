"""The driver half of both CUDA execution backends' availability probes: each missing piece has its own
reason and fix (the compiler half is each backend's)."""

from __future__ import annotations

from tilecraft.backend.execution import Availability


def device_availability() -> Availability:
    """A loadable NVIDIA driver that initializes, and at least one CUDA device."""
    from tilecraft.execution.cuda_driver import driver as cuda_driver

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
