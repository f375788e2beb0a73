"""The `nvcc` execution backend: Build keeps the artifact's `cubin` (compiled by nvcc in codegen) with
its source; Load and Launch are the shared CUDA runtime's. An export loads without any compiler."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tilecraft.execution.cuda_driver.runtime import (
    BINARY_FORMAT,
    SOURCE_FORMAT,
    CudaRuntimeBackend,
    artifact_arch,
    check_artifact,
    compile_flags,
    sha256,
)
from tilecraft.execution.nvcc import toolchain
from tilecraft.execution.nvcc.spec import NVCC
from tilecraft.runtime.artifact import CompiledArtifact


class NvccExecutionBackend(CudaRuntimeBackend):
    """Build: the artifact's cubin (or nvcc here, when codegen did not compile). Load/Launch: the driver."""

    def build_options(self, artifact: CompiledArtifact, ctx: Any) -> Mapping[str, Any]:
        if BINARY_FORMAT in artifact.device_binaries:
            # The cubin is the build's input: key on its content, whichever nvcc made it.
            return {"cubin_sha256": sha256(artifact.binary(BINARY_FORMAT))}
        arch = artifact_arch(artifact)
        # Fast math when the artifact asks for it (pass config tl.enable_fast_math), then the user's flags.
        flags = list(
            toolchain.requested_flags(bool(artifact.extra_value("fast_math", False)), compile_flags(artifact))
        )
        return {"arch": arch, "flags": flags, "nvcc": toolchain.nvcc_version()}

    def compile(self, artifact: CompiledArtifact, ctx: Any) -> tuple[Mapping[str, bytes], Mapping[str, Any]]:
        check_artifact(artifact)
        options = dict(self.build_options(artifact, ctx))
        if BINARY_FORMAT in artifact.device_binaries:
            return self.build_files(artifact, artifact.binary(BINARY_FORMAT), {"compiled_by": "codegen"})
        keep = self.cache.failure_dir(self.cache_key(artifact, ctx))
        cubin = toolchain.compile_cubin(
            artifact.source(SOURCE_FORMAT), options["arch"], options["flags"], keep_dir=keep
        )
        return self.build_files(artifact, cubin, {**options, "compiled_by": "nvcc"})


__all__ = ["NVCC", "NvccExecutionBackend"]
