"""The `opencl` execution backend: Build compiles `opencl-source` with pyopencl for the target's device
and keeps the program binary (when the platform gives one) and the source in the cache; Load rebuilds
the program from the binary, or from the source if the platform rejects the binary; Launch copies the
host arrays in, runs the kernels in order and copies the results back (launch.py, memory.py).

The device is the target's `platform` and `device` attributes (indices, default 0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tilecraft.execution.base import CachedExecutionBackend
from tilecraft.execution.host_memory import refuse_device
from tilecraft.execution.opencl import device as cl_device
from tilecraft.execution.opencl import program as cl_program
from tilecraft.execution.opencl.launch import KernelPlan, build_launcher, check_artifact, plan_kernel
from tilecraft.execution.opencl.spec import OPENCL, SOURCE_FORMAT
from tilecraft.runtime.arrays import ArrayArg
from tilecraft.runtime.artifact import CompiledArtifact
from tilecraft.runtime.launch import Built, Loaded

BINARY_FILE = "program.bin"
SOURCE_FILE = cl_program.SOURCE_FILE


@dataclass(eq=False)
class OpenCLProgram:
    """A program loaded on one device, with a launch plan per kernel. `from_binary` says whether the
    cached binary was used (else the program was rebuilt from source, `binary_error` says why)."""

    runtime: cl_device.DeviceRuntime
    program: Any
    plans: tuple[KernelPlan, ...]
    from_binary: bool
    binary_error: str = ""


def artifact_device(artifact: CompiledArtifact) -> tuple[int, int]:
    """(platform, device) indices from the artifact's target."""
    return int(artifact.target.attr("platform", 0)), int(artifact.target.attr("device", 0))


def artifact_runtime(artifact: CompiledArtifact) -> cl_device.DeviceRuntime:
    return cl_device.runtime(*artifact_device(artifact))


class OpenCLExecutionBackend(CachedExecutionBackend):
    """Build: pyopencl, in process, for one OpenCL device. Load: the program binary. Launch: host
    arrays copied in and out around the kernels, synchronously."""

    def toolchain_version(self) -> str:
        return f"pyopencl {cl_device.import_pyopencl().VERSION_TEXT}"

    def build_options(self, artifact: CompiledArtifact, ctx: Any) -> Mapping[str, Any]:
        """The build options and the device's identity (platform name and version, device name, driver
        version): a program binary is only valid for the device and driver that made it."""
        info = cl_device.find_device(*artifact_device(artifact))
        return {"options": cl_program.program_options(artifact, info.cpu), "device": info.identity()}

    def compile(self, artifact: CompiledArtifact, ctx: Any) -> tuple[Mapping[str, bytes], Mapping[str, Any]]:
        check_artifact(artifact)
        source = artifact.source(SOURCE_FORMAT)
        options = self.build_options(artifact, ctx)
        keep = self.cache.failure_dir(self.cache_key(artifact, ctx))
        program = cl_program.build_from_source(artifact_runtime(artifact), source, options["options"], keep)
        files = {SOURCE_FILE: source.encode()}
        binary = cl_program.program_binary(program)
        if binary is not None:
            files[BINARY_FILE] = binary
        kernels = [info.symbol for info in artifact.kernels]
        return files, {**options, "kernels": kernels, "binary": binary is not None}

    def load(self, built: Built) -> Loaded:
        artifact = built.artifact
        check_artifact(artifact)
        runtime = artifact_runtime(artifact)
        program, binary_error = self._program(built, runtime)
        names = cl_program.kernel_names(program)
        plans = tuple(plan_kernel(artifact, info, program, names, runtime.info) for info in artifact.kernels)
        return Loaded(built, OpenCLProgram(runtime, program, plans, not binary_error, binary_error))

    def _program(self, built: Built, runtime: cl_device.DeviceRuntime) -> tuple[Any, str]:
        """(program, "") from the kept binary, else (program rebuilt from the kept source, why the binary
        was not used)."""
        error = "no program binary was kept"
        if BINARY_FILE in built.entry.files:
            program, error = cl_program.load_binary(runtime, built.read(BINARY_FILE))
            if program is not None:
                return program, ""
        options = built.entry.meta.get("options") or cl_program.program_options(built.artifact, runtime.info.cpu)
        keep = self.cache.failure_dir(built.key)
        return cl_program.build_from_source(runtime, built.read(SOURCE_FILE).decode(), options, keep), error

    def launcher(self, loaded: Loaded) -> Callable[..., None]:
        handle: OpenCLProgram = loaded.handle
        return build_launcher(loaded.built.artifact, handle.plans, handle.runtime)

    def check_device(self, arg: ArrayArg, name: str) -> None:
        """Arrays must be in host memory (the spec's device type): the launcher copies them to the OpenCL
        device and back. Outputs are host arrays too (`empty`'s default)."""
        if not self.accepts_device(arg):
            refuse_device(arg, name, "opencl", "the OpenCL device",
                          "pass a numpy array or a CPU tensor (for torch: tensor.cpu())")


__all__ = ["OPENCL", "OpenCLExecutionBackend", "OpenCLProgram"]
