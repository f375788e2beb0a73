"""The `nvrtc` execution backend: Build compiles `cuda-source` with NVRTC to `kernel.cubin` (kept in the
cache with `kernel.cu`); Load and Launch are the shared CUDA runtime's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tilecraft.execution.cuda_driver.runtime import (
    SOURCE_FORMAT,
    CudaRuntimeBackend,
    artifact_arch,
    check_artifact,
    compile_flags,
)
from tilecraft.execution.nvrtc import compiler
from tilecraft.execution.nvrtc.spec import NVRTC
from tilecraft.runtime.artifact import CompiledArtifact


class NvrtcExecutionBackend(CudaRuntimeBackend):
    """Build: NVRTC, in process, to a cubin for the target's arch. Load/Launch: the CUDA driver."""

    def toolchain_version(self) -> str:
        return f"nvrtc {compiler.nvrtc_version()}"

    def build_options(self, artifact: CompiledArtifact, ctx: Any) -> Mapping[str, Any]:
        arch = artifact_arch(artifact)
        return {"arch": arch, "options": list(compiler.nvrtc_options(arch, _requested(artifact)))}

    def compile(self, artifact: CompiledArtifact, ctx: Any) -> tuple[Mapping[str, bytes], Mapping[str, Any]]:
        check_artifact(artifact)
        arch = artifact_arch(artifact)
        keep = self.cache.failure_dir(self.cache_key(artifact, ctx))
        cubin = compiler.nvrtc_compile(
            artifact.source(SOURCE_FORMAT), arch, _requested(artifact), keep_dir=keep
        )
        return self.build_files(
            artifact, cubin, {**self.build_options(artifact, ctx), "nvrtc": compiler.nvrtc_version()}
        )


def _requested(artifact: CompiledArtifact) -> tuple[str, ...]:
    """Fast math when the artifact asks for it (pass config tl.enable_fast_math), then the user's flags."""
    return compiler.requested_options(bool(artifact.extra_value("fast_math", False)), compile_flags(artifact))


__all__ = ["NVRTC", "NvrtcExecutionBackend"]
