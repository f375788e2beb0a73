"""The CUDA backend's manifest: the one place that assembles and registers it."""

from __future__ import annotations

from tilecraft.backend.codegen import DeviceCodegen
from tilecraft.backend.module import BackendModule
from tilecraft.backend.registry import register_backend
from tilecraft.cuda.codegen import BINARY_FORMAT, SOURCE_FORMAT, compile_cubin, device_source
from tilecraft.cuda.pipeline import PIPELINE
from tilecraft.cuda.target import KIND
from tilecraft.execution.nvcc.spec import NVCC
from tilecraft.execution.nvrtc.spec import NVRTC

CUDA_BACKEND = register_backend(
    BackendModule(
        name="cuda",
        target_kinds=(KIND,),
        pipelines={KIND: PIPELINE},
        device_codegens={
            KIND: DeviceCodegen(device_source, compile_cubin, (SOURCE_FORMAT,), (BINARY_FORMAT,))
        },
        execution_backends=(NVRTC, NVCC),
        dialect="tilecraft.cuda.language",
        doc="NVIDIA GPUs (sm_80+) through CUDA C++: mma.sync tensor cores, cp.async pipelines",
    )
)
