"""The `hip` execution backend's spec: cheap to import; probes the HIP runtime only when asked."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.execution import Availability, ExecutionBackendSpec
from tilecraft.execution.hip import DEVICE_TYPES


def _availability() -> Availability:
    """libamdhip64 loads, initializes and reports at least one device."""
    from tilecraft.execution.hip import runtime

    try:
        hip = runtime.get_runtime()
        count = hip.device_count()
    except runtime.RuntimeUnavailable as err:
        return Availability(False, err.reason, err.fix)
    except runtime.HipError as err:
        return Availability(False, str(err), runtime.DEVICE_FIX)
    if count == 0:
        return Availability(False, "the HIP runtime reports no AMD GPU", runtime.DEVICE_FIX)
    return Availability(True, f"{count} AMD GPU(s), HIP runtime {hip.version()}")


HIP = ExecutionBackendSpec(
    name="hip",
    availability=_availability,
    implementation="tilecraft.execution.hip.backend:HipExecutionBackend",
    consumes=("hsaco",),
    needs_host_codegen=False,
    eager_device_compile=True,
    device_types=DEVICE_TYPES,
    doc="clang compiles the HIP source to a code object in codegen; loaded and launched through the HIP "
    "runtime (libamdhip64, ctypes)",
    api_version=API_VERSION,
)
