"""The `nvrtc` execution backend's spec: cheap to import; probes NVRTC and the driver only when asked."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.execution import Availability, ExecutionBackendSpec
from tilecraft.execution.cuda_driver import DEVICE_TYPES


def _availability() -> Availability:
    """cuda-python's NVRTC bindings, the NVRTC library, the driver and a device, checked in that order."""
    from tilecraft.execution.cuda_driver.probe import device_availability
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


NVRTC = ExecutionBackendSpec(
    name="nvrtc",
    availability=_availability,
    implementation="tilecraft.execution.nvrtc.backend:NvrtcExecutionBackend",
    consumes=("cuda-source",),
    needs_host_codegen=False,
    eager_device_compile=False,
    device_types=DEVICE_TYPES,
    doc="NVRTC compiles the CUDA source to a cubin in process; loaded and launched through the CUDA driver",
    api_version=API_VERSION,
)
