"""The `metal` execution backend's spec: cheap to import; PyObjC is imported only when it is probed."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.execution import Availability, ExecutionBackendSpec
from tilecraft.runtime.devices import DLPACK_HOST

SOURCE_FORMAT = "metal-source"


def _availability() -> Availability:
    from tilecraft.execution.metal.device import availability

    return availability()


METAL = ExecutionBackendSpec(
    name="metal",
    availability=_availability,
    implementation="tilecraft.execution.metal.backend:MetalExecutionBackend",
    consumes=(SOURCE_FORMAT,),
    needs_host_codegen=False,
    eager_device_compile=False,
    device_types=(DLPACK_HOST,),  # host arrays: the launcher copies them into shared MTLBuffers and back
    doc="PyObjC's Metal compiles the MSL for the default device (macOS only); host arrays are copied in and out",
    api_version=API_VERSION,
)
