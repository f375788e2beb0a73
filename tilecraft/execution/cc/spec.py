"""The `cc` execution backend's spec: cheap to import, probes the compiler only when asked."""

from __future__ import annotations

from tilecraft.execution.base import Availability, ExecutionBackendSpec


def _availability() -> Availability:
    from tilecraft.execution.cc.toolchain import INSTALL_HINT, find_compiler_path

    path = find_compiler_path()
    if path is None:
        return Availability(False, "no C compiler found (looked for $TILECRAFT_CC, $CC, gcc, clang, cc)",
                            INSTALL_HINT)  # fmt: skip
    return Availability(True, f"C compiler {path}")


CC = ExecutionBackendSpec(
    name="cc",
    availability=_availability,
    implementation="tilecraft.execution.cc.backend:CCExecutionBackend",
    consumes=("c-source", "c-host-source"),
    needs_host_codegen=True,
    eager_device_compile=False,
    device_types=("cpu",),
    doc="the system C compiler (gcc or clang, -O3 -march=native, OpenMP when supported); loaded with ctypes",
)
