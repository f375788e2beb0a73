"""The WebGPU backend's manifest: the one place that assembles and registers it."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.codegen import DeviceCodegen
from tilecraft.backend.module import BackendModule
from tilecraft.backend.registry import register_backend
from tilecraft.execution.wgpu.spec import WGPU
from tilecraft.transform.narrow_dtypes import NARROW_DTYPES
from tilecraft.webgpu.codegen import SOURCE_FORMAT, device_source
from tilecraft.webgpu.pipeline import PIPELINE
from tilecraft.webgpu.target import (
    ATOMICS,
    FLOAT8,
    FLOAT64,
    FLOAT64_MATH,
    INT64,
    KIND,
    LOOP_ITERATIONS,
    PRINT,
    STORAGE_BUFFERS,
    WIDE_WORKGROUP,
    WORKGROUP_MEMORY,
    WORKGROUP_SIZE,
)

WEBGPU_BACKEND = register_backend(
    BackendModule(
        name="webgpu",
        target_kinds=(KIND,),
        pipelines={KIND: PIPELINE},
        device_codegens={KIND: DeviceCodegen(device_source, None, (SOURCE_FORMAT,), ())},
        execution_backends=(WGPU,),
        unsupported={
            FLOAT64: "float64 needs the adapter's shader-f64 (a target with -f64=true)",
            INT64: "64-bit integers need the adapter's shader-int64 (a target with -int64=true)",
            FLOAT8: "WGSL has no 8-bit floats; convert float8 data to float16 or float32 on the host",
            NARROW_DTYPES: "the WebGPU backend does not lower 4-bit (int4, uint4, float4_e2m1fn) or microscaling "
            "(float6, float8_e8m0fnu) dtypes; convert the data on the host or use the cpu, cuda or opencl target",
            ATOMICS: "WebGPU atomics are 32-bit words of storage buffers: int32, uint32 and float32 (the last "
            "through compare-exchange); no 64- or 16-bit atomics, none on workgroup memory here",
            WIDE_WORKGROUP: "workgroup memory holds 32-bit words (narrower elements packed, 64-bit ones split "
            "over two); the split goes through a u64, so 64-bit shared elements need shader-int64",
            PRINT: "WGSL has no printf; write the values to an output buffer",
            FLOAT64_MATH: "WGSL's float64 has arithmetic, abs, floor, ceil, round and sqrt, but no exp, log, sin, "
            "cos, pow, tanh or erf: compute them in float32",
            WORKGROUP_MEMORY: "a workgroup has the adapter's workgroup_memory bytes (WebGPU guarantees 16 KiB, "
            "lavapipe 32 KiB); on lavapipe 5 of the 65 conformance checks need more (40 to 112 KiB)",
            WORKGROUP_SIZE: "a workgroup holds at most the adapter's max_workgroup_size invocations (WebGPU "
            "guarantees 256)",
            LOOP_ITERATIONS: "llvmpipe (lavapipe) ends every loop of an invocation once it has run 65,535 loop "
            "passes in all, silently; kernels past that are refused on such an adapter (max_loop_iterations)",
            STORAGE_BUFFERS: "a shader binds at most the adapter's max_storage_buffers storage buffers (WebGPU "
            "guarantees 8)",
        },
        dialect="tilecraft.webgpu.language",
        doc="WebGPU adapters through WGSL compute shaders: workgroups of invocations, subgroup or "
        "workgroup-memory reductions",
        api_version=API_VERSION,
    )
)
