"""The `metal` execution backend: Build compiles `metal-source` with the device's Metal compiler
(`newLibraryWithSource:options:error:`, through PyObjC) to check it, and keeps the source in the cache;
Load compiles it again into an MTLLibrary (Metal keeps compiled shaders in its own system cache, so
this is cheap after the first time) and makes a compute pipeline per kernel; Launch copies the host
arrays into shared MTLBuffers, runs the kernels in order in one command buffer and copies the results
back (launch.py).

Fast math (`tl.enable_fast_math`) maps to MTLCompileOptions.fastMathEnabled, which is off otherwise:
Metal's default is on, and it lets the compiler assume no NaN or infinity, while kernels start
max-reductions at -inf.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilecraft.errors import ToolchainError
from tilecraft.execution.base import CachedExecutionBackend
from tilecraft.execution.host_memory import refuse_device
from tilecraft.execution.metal import device as metal_device
from tilecraft.execution.metal.launch import KernelPlan, build_launcher, check_artifact, plan_kernel
from tilecraft.execution.metal.spec import METAL, SOURCE_FORMAT
from tilecraft.runtime.arrays import ArrayArg
from tilecraft.runtime.artifact import CompiledArtifact
from tilecraft.runtime.launch import Built, Loaded

SOURCE_FILE = "kernel.metal"


@dataclass(eq=False)
class MetalLibrary:
    """A library loaded on the device, with a launch plan per kernel."""

    runtime: metal_device.MetalRuntime
    library: Any
    plans: tuple[KernelPlan, ...]


def compile_library(runtime: metal_device.MetalRuntime, source: str, fast_math: bool, keep_dir: Path) -> Any:
    """The MTLLibrary of `source`; ToolchainError with the compiler's log on failure."""
    options = runtime.metal.MTLCompileOptions.new()
    options.setFastMathEnabled_(bool(fast_math))
    library, error = runtime.device.newLibraryWithSource_options_error_(source, options, None)
    if library is None:
        keep_dir.mkdir(parents=True, exist_ok=True)
        kept = keep_dir / SOURCE_FILE
        kept.write_text(source)
        log = error.localizedDescription() if error is not None else "no error given"
        raise ToolchainError(
            f"the Metal compiler rejected the library on {runtime.describe()}\n  source kept at: {kept}\n"
            f"compiler log:\n{str(log).strip()}"
        )
    return library


class MetalExecutionBackend(CachedExecutionBackend):
    """Build: the device's Metal compiler, in process. Load: the library and its pipelines. Launch:
    host arrays copied in and out around one command buffer, synchronously."""

    def toolchain_version(self) -> str:
        release = platform.mac_ver()[0] or platform.platform()
        return f"Metal (macOS {release})"

    def build_options(self, artifact: CompiledArtifact, ctx: Any) -> Mapping[str, Any]:
        """Fast math, and the device: Metal compiles for the GPU it runs on."""
        runtime = metal_device.runtime()
        return {"fast_math": bool(artifact.extra_value("fast_math", False)), "device": str(runtime.device.name()),
                "family": runtime.family}  # fmt: skip

    def compile(self, artifact: CompiledArtifact, ctx: Any) -> tuple[Mapping[str, bytes], Mapping[str, Any]]:
        check_artifact(artifact)
        self._check_family(artifact)
        source = artifact.source(SOURCE_FORMAT)
        options = self.build_options(artifact, ctx)
        keep = self.cache.failure_dir(self.cache_key(artifact, ctx))
        compile_library(metal_device.runtime(), source, options["fast_math"], keep)
        return {SOURCE_FILE: source.encode()}, {**options, "kernels": [k.symbol for k in artifact.kernels]}

    def load(self, built: Built) -> Loaded:
        artifact = built.artifact
        check_artifact(artifact)
        runtime = metal_device.runtime()
        fast = bool(built.entry.meta.get("fast_math", artifact.extra_value("fast_math", False)))
        library = compile_library(
            runtime, built.read(SOURCE_FILE).decode(), fast, self.cache.failure_dir(built.key)
        )
        plans = tuple(plan_kernel(artifact, info, library, runtime) for info in artifact.kernels)
        return Loaded(built, MetalLibrary(runtime, library, plans))

    def launcher(self, loaded: Loaded) -> Callable[..., None]:
        handle: MetalLibrary = loaded.handle
        return build_launcher(loaded.built.artifact, handle.plans, handle.runtime)

    @staticmethod
    def _check_family(artifact: CompiledArtifact) -> None:
        """Code for a newer family than the device's would use instructions it lacks."""
        wanted = str(artifact.target.attr("family", ""))
        have = metal_device.runtime().family
        if wanted and int(wanted[len("apple") :]) > int(have[len("apple") :]):
            raise ToolchainError(
                f"the kernel was generated for {wanted}, but the Metal device is {have}; generate it for "
                f"-family={have} (or leave the family out to read it from the device)"
            )

    def check_device(self, arg: ArrayArg, name: str) -> None:
        """Arrays must be in host memory: the launcher copies them to MTLBuffers and back."""
        if not self.accepts_device(arg):
            refuse_device(arg, name, "metal", "Metal buffers",
                          "pass a numpy array or a CPU tensor (for torch: tensor.cpu())")


__all__ = ["METAL", "MetalExecutionBackend", "MetalLibrary"]
