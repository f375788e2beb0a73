"""The `cc` execution backend's spec: cheap to import, probes the compiler only when asked."""

from __future__ import annotations

import shlex

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.execution import Availability, ExecutionBackendSpec
from tilecraft.runtime.devices import DLPACK_HOST


def _availability() -> Availability:
    from tilecraft.execution.cc.toolchain import CompilerNotFound, locate

    try:
        found = locate()
    except CompilerNotFound as err:
        return Availability(False, err.reason, err.fix)
    return Availability(True, f"C compiler {shlex.join(found.program + found.options)} (from {found.origin})")


CC = ExecutionBackendSpec(
    name="cc",
    availability=_availability,
    implementation="tilecraft.execution.cc.backend:CCExecutionBackend",
    consumes=("c-source", "c-host-source"),
    needs_host_codegen=True,
    eager_device_compile=False,
    device_types=(DLPACK_HOST,),
    doc="the system C compiler (gcc or clang, -O3 -march=native, OpenMP when supported); loaded with ctypes",
    api_version=API_VERSION,
)
