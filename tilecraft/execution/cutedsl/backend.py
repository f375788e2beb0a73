"""The `cutedsl` execution backend: Build keeps the artifact's `cubin` (compiled by the CuTe DSL in
codegen) with the Python it came from, or compiles that Python with the DSL when codegen did not; Load
and Launch are the shared CUDA runtime's. An export loads without the DSL."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tilecraft.execution.cuda_driver.runtime import (
    BINARY_FORMAT,
    CudaRuntimeBackend,
    artifact_arch,
    check_artifact,
    sha256,
)
from tilecraft.execution.cutedsl import compiler
from tilecraft.execution.cutedsl.spec import CUTEDSL
from tilecraft.runtime.artifact import CompiledArtifact

SOURCE_FORMAT = "cutedsl-source"
PYTHON_FILE = "kernel_cutedsl.py"


class CuteDslExecutionBackend(CudaRuntimeBackend):
    """Build: the artifact's cubin (or the CuTe DSL here). Load/Launch: the CUDA driver."""

    def build_options(self, artifact: CompiledArtifact, ctx: Any) -> Mapping[str, Any]:
        if BINARY_FORMAT in artifact.device_binaries:
            # The cubin is the build's input: key on its content, whichever DSL made it.
            return {"cubin_sha256": sha256(artifact.binary(BINARY_FORMAT))}
        return {"arch": artifact_arch(artifact), "dsl": compiler.dsl_version()}

    def compile(self, artifact: CompiledArtifact, ctx: Any) -> tuple[Mapping[str, bytes], Mapping[str, Any]]:
        check_artifact(artifact)
        if BINARY_FORMAT in artifact.device_binaries:
            files, meta = self.build_files(
                artifact, artifact.binary(BINARY_FORMAT), {"compiled_by": "codegen"}
            )
        else:
            symbols = [k.symbol for k in artifact.kernels]
            cubin = compiler.compile_module(artifact.source(SOURCE_FORMAT), artifact_arch(artifact), symbols)
            files, meta = self.build_files(
                artifact, cubin, {**self.build_options(artifact, ctx), "compiled_by": "dsl"}
            )
        files[PYTHON_FILE] = artifact.source(SOURCE_FORMAT).encode()
        return files, meta


__all__ = ["CUTEDSL", "CuteDslExecutionBackend"]
