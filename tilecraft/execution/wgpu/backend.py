"""The `wgpu` execution backend: Build validates the `wgsl-source` module on the target's adapter (wgpu's
shader compiler, naga, checks it) and keeps the source in the cache; Load makes the shader module and one
compute pipeline per kernel, once per process for each build (pipelines take ~170 ms on lavapipe);
Launch copies host arrays in, dispatches the kernels in order and copies the written ones back.

The device is the target's `adapter` (an index; absent: the adapter wgpu prefers), made once per process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilecraft.errors import ToolchainError
from tilecraft.execution.base import CachedExecutionBackend
from tilecraft.execution.host_memory import refuse_device
from tilecraft.execution.wgpu import device as wgpu_device
from tilecraft.execution.wgpu.abi import WGSL_SOURCE
from tilecraft.execution.wgpu.launch import KernelPlan, build_launcher, check_artifact, plan_kernels
from tilecraft.execution.wgpu.spec import WGPU
from tilecraft.runtime.arrays import ArrayArg
from tilecraft.runtime.artifact import CompiledArtifact
from tilecraft.runtime.launch import Built, Loaded

SOURCE_FILE = "kernel.wgsl"


@dataclass(eq=False)
class WgpuProgram:
    """A module loaded on one device, with a dispatch plan per kernel."""

    runtime: wgpu_device.DeviceRuntime
    module: Any
    plans: tuple[KernelPlan, ...]


def artifact_runtime(artifact: CompiledArtifact) -> wgpu_device.DeviceRuntime:
    return wgpu_device.runtime(artifact.target.attr("adapter"))


def shader_module(runtime: wgpu_device.DeviceRuntime, source: str, keep_dir: Path | None = None) -> Any:
    """The device's shader module of `source`; ToolchainError with wgpu's message (and where the source
    was kept) when naga or the driver refuses it."""
    try:
        return runtime.device.create_shader_module(code=source)
    except Exception as err:  # noqa: BLE001 - wgpu raises GPUValidationError and others
        raise ToolchainError(_refusal("the WGSL module", runtime, err, source, keep_dir)) from None


def _refusal(what: str, runtime: wgpu_device.DeviceRuntime, err: Exception, source: str,
             keep_dir: Path | None) -> str:  # fmt: skip
    where = ""
    if keep_dir is not None:
        keep_dir.mkdir(parents=True, exist_ok=True)
        (keep_dir / SOURCE_FILE).write_text(source)
        where = f"\nthe source is kept at {keep_dir / SOURCE_FILE}"
    return f"wgpu refused {what} on {runtime.description}: {err}{where}"


def compute_pipelines(runtime: wgpu_device.DeviceRuntime, module: Any, artifact: CompiledArtifact,
                      source: str, keep_dir: Path | None = None) -> list[Any]:  # fmt: skip
    pipelines = []
    for info in artifact.kernels:
        try:
            pipelines.append(runtime.device.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": info.symbol}))  # fmt: skip
        except Exception as err:  # noqa: BLE001
            raise ToolchainError(_refusal(f"the compute pipeline of {info.symbol}", runtime, err, source,
                                          keep_dir)) from None  # fmt: skip
    return pipelines


class WgpuExecutionBackend(CachedExecutionBackend):
    """Build: naga's validation of the WGSL on the device. Load: a shader module and compute pipelines,
    kept per process. Launch: host arrays copied in and out around the dispatches, synchronously."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._programs: dict[str, WgpuProgram] = {}
        self._programs_lock = threading.Lock()

    def toolchain_version(self) -> str:
        return f"wgpu {wgpu_device.import_wgpu().__version__}"

    def build_options(self, artifact: CompiledArtifact, ctx: Any) -> Mapping[str, Any]:
        """The adapter and driver the module was validated for."""
        return {"device": artifact_runtime(artifact).identity()}

    def compile(self, artifact: CompiledArtifact, ctx: Any) -> tuple[Mapping[str, bytes], Mapping[str, Any]]:
        check_artifact(artifact)
        source = artifact.source(WGSL_SOURCE)
        runtime = artifact_runtime(artifact)
        keep = self.cache.failure_dir(self.cache_key(artifact, ctx))
        module = shader_module(runtime, source, keep)
        compute_pipelines(runtime, module, artifact, source, keep)
        return {SOURCE_FILE: source.encode()}, {"kernels": [info.symbol for info in artifact.kernels]}

    def load(self, built: Built) -> Loaded:
        with self._programs_lock:
            program = self._programs.get(built.key)
            if program is None:
                artifact = built.artifact
                check_artifact(artifact)
                runtime = artifact_runtime(artifact)
                source = built.read(SOURCE_FILE).decode()
                keep = self.cache.failure_dir(built.key)
                module = shader_module(runtime, source, keep)
                pipelines = compute_pipelines(runtime, module, artifact, source, keep)
                program = WgpuProgram(runtime, module, plan_kernels(artifact, pipelines))
                self._programs[built.key] = program
        return Loaded(built, program)

    def launcher(self, loaded: Loaded) -> Callable[..., None]:
        program: WgpuProgram = loaded.handle
        return build_launcher(loaded.built.artifact, program.plans, program.runtime)

    def check_device(self, arg: ArrayArg, name: str) -> None:
        """Arrays must be in host memory: the launcher copies them to the WebGPU device and back."""
        if not self.accepts_device(arg):
            refuse_device(arg, name, "wgpu", "the WebGPU device",
                          "pass a numpy array or a CPU tensor (for torch: tensor.cpu())")


__all__ = ["WGPU", "WgpuExecutionBackend", "WgpuProgram"]
