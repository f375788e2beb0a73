"""The `nvrtc` execution backend's spec: cheap to import; probes NVRTC and the driver only when asked."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.execution.base import Availability, ExecutionBackendSpec

DLPACK_CUDA = 2  # kDLCUDA: the DLPack device code of the arrays its launcher accepts


def _availability() -> Availability:
    from tilecraft.execution.nvrtc.probe import nvrtc_availability

    return nvrtc_availability()


NVRTC = ExecutionBackendSpec(
    name="nvrtc",
    availability=_availability,
    implementation="tilecraft.execution.nvrtc.backend:NvrtcExecutionBackend",
    consumes=("cuda-source",),
    needs_host_codegen=False,
    eager_device_compile=False,
    device_types=(DLPACK_CUDA,),
    doc="NVRTC compiles the CUDA source to a cubin in process; loaded and launched through the CUDA driver",
    api_version=API_VERSION,
)
