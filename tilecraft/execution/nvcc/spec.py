"""The `nvcc` execution backend's spec: cheap to import; probes nvcc and the driver only when asked."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.execution import Availability, ExecutionBackendSpec
from tilecraft.execution.cuda_driver import DEVICE_TYPES


def _availability() -> Availability:
    """nvcc (TILECRAFT_NVCC, $CUDA_HOME/bin, $CUDA_PATH/bin, PATH, /usr/local/cuda/bin), then the driver
    and a device."""
    from tilecraft.execution.cuda_driver import toolkit
    from tilecraft.execution.cuda_driver.probe import device_availability

    path = toolkit.find_nvcc()
    if path is None:
        return Availability(False, toolkit.missing_reason(), toolkit.INSTALL_HINT)
    devices = device_availability()
    if not devices.ok:
        return devices
    return Availability(True, f"nvcc {path}; {devices.reason}")


NVCC = ExecutionBackendSpec(
    name="nvcc",
    availability=_availability,
    implementation="tilecraft.execution.nvcc.backend:NvccExecutionBackend",
    consumes=("cuda-source", "cubin"),
    needs_host_codegen=False,
    eager_device_compile=True,
    device_types=DEVICE_TYPES,
    doc="nvcc compiles the CUDA source to a cubin ahead of time (eagerly, in codegen); loaded and launched "
    "through the CUDA driver",
    api_version=API_VERSION,
)
