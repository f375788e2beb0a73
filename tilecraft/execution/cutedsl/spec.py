"""The `cutedsl` execution backend's spec: cheap to import; probes the CuTe DSL and the driver only when
asked."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.execution import Availability, ExecutionBackendSpec
from tilecraft.execution.cuda_driver import DEVICE_TYPES


def _availability() -> Availability:
    """NVIDIA's CuTe DSL (package nvidia-cutlass-dsl, the extra tilecraft[cutedsl]), then the driver and a
    device. An export of a cutedsl kernel loads without the DSL (tilecraft.load)."""
    from tilecraft.errors import ToolchainNotFound
    from tilecraft.execution.cuda_driver.probe import device_availability
    from tilecraft.execution.cutedsl import compiler

    try:
        version = compiler.dsl_version()
    except ToolchainNotFound as err:
        return Availability(False, str(err).split("; install it")[0], compiler.INSTALL_HINT)
    devices = device_availability()
    if not devices.ok:
        return devices
    return Availability(True, f"CuTe DSL {version}; {devices.reason}")


CUTEDSL = ExecutionBackendSpec(
    name="cutedsl",
    availability=_availability,
    implementation="tilecraft.execution.cutedsl.backend:CuteDslExecutionBackend",
    consumes=("cutedsl-source", "cubin"),
    needs_host_codegen=False,
    eager_device_compile=False,
    device_types=DEVICE_TYPES,
    doc="the CuTe DSL's JIT compiles the generated Python to a cubin at Build, kept in the content-addressed "
    "cache (no GPU needed); loaded and launched through the CUDA driver",
    api_version=API_VERSION,
)
