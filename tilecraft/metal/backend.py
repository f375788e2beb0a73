"""The Metal backend's manifest: the one place that assembles and registers it."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.module import BackendModule
from tilecraft.backend.registry import register_backend
from tilecraft.execution.metal.spec import METAL
from tilecraft.metal.codegen import DEVICE_CODEGEN
from tilecraft.metal.pipeline import PIPELINE
from tilecraft.metal.target import (
    FLOAT64,
    INT64_ATOMICS,
    KIND,
    PRINT,
    THREADGROUP_MEMORY_KEY,
    THREADGROUP_SIZE,
)
from tilecraft.transform.narrow_dtypes import NARROW_DTYPES

METAL_BACKEND = register_backend(
    BackendModule(
        name="metal",
        target_kinds=(KIND,),
        pipelines={KIND: PIPELINE},
        device_codegens={KIND: DEVICE_CODEGEN},
        execution_backends=(METAL,),
        unsupported={
            FLOAT64: "Metal has no double precision; compute in float32",
            INT64_ATOMICS: "Metal's atomics are 32-bit (atomic_int, atomic_uint, atomic_float in device memory "
            "from apple7); accumulate in a 32-bit buffer",
            PRINT: "MSL has no printf; copy the values to an output buffer",
            NARROW_DTYPES: "the Metal backend does not lower 4-bit (int4, uint4, float4_e2m1fn) or microscaling "
            "(float6, float8_e8m0fnu) dtypes; convert the data on the host or use the cpu, cuda or opencl target",
            THREADGROUP_MEMORY_KEY: "a threadgroup has the target's threadgroup_memory bytes (32 KiB on Apple GPUs; "
            "the conformance tiles need up to 96 KiB)",
            THREADGROUP_SIZE: "a threadgroup holds at most the target's max_threads threads (1024)",
        },
        dialect="tilecraft.metal.language",
        doc="Apple GPUs through the Metal Shading Language: SIMD groups of 32, simdgroup_matrix gemm from apple7",
        api_version=API_VERSION,
    )
)
