"""The `opencl` execution backend's spec: cheap to import; pyopencl is imported only when it is probed."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.execution import Availability, ExecutionBackendSpec
from tilecraft.runtime.devices import DLPACK_HOST

SOURCE_FORMAT = "opencl-source"
# Defined by the build for a CPU device: the source's unrolled loops test it and stay rolled there.
NO_UNROLL = "TC_NO_UNROLL"


def _availability() -> Availability:
    from tilecraft.execution.opencl.device import availability

    return availability()


OPENCL = ExecutionBackendSpec(
    name="opencl",
    availability=_availability,
    implementation="tilecraft.execution.opencl.backend:OpenCLExecutionBackend",
    consumes=(SOURCE_FORMAT,),
    needs_host_codegen=False,
    eager_device_compile=False,
    device_types=(DLPACK_HOST,),  # host arrays: the launcher copies them to the device and back
    doc="pyopencl builds the OpenCL C program for one device; host arrays are copied in and out per call",
    api_version=API_VERSION,
)
