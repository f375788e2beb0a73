"""The `wgpu` execution backend's spec: cheap to import; wgpu is imported only when it is probed."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.execution import Availability, ExecutionBackendSpec
from tilecraft.execution.wgpu.abi import WGSL_SOURCE
from tilecraft.runtime.devices import DLPACK_HOST


def _availability() -> Availability:
    from tilecraft.execution.wgpu.device import availability

    return availability()


WGPU = ExecutionBackendSpec(
    name="wgpu",
    availability=_availability,
    implementation="tilecraft.execution.wgpu.backend:WgpuExecutionBackend",
    consumes=(WGSL_SOURCE,),
    needs_host_codegen=False,
    eager_device_compile=False,
    device_types=(DLPACK_HOST,),  # host arrays: the launcher copies them to the device and back
    doc="wgpu-py makes a compute pipeline per WGSL entry point on one WebGPU adapter; host arrays are "
    "copied in and out per call",
    api_version=API_VERSION,
)
