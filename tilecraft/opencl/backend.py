"""The OpenCL backend's manifest: the one place that assembles and registers it."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.codegen import DeviceCodegen
from tilecraft.backend.module import BackendModule
from tilecraft.backend.registry import register_backend
from tilecraft.execution.opencl.spec import OPENCL
from tilecraft.opencl.codegen import SOURCE_FORMAT, device_source
from tilecraft.opencl.pipeline import PIPELINE
from tilecraft.opencl.target import FLOAT64, INT64_ATOMICS, KIND, LOCAL_MEMORY, WORK_GROUP_SIZE

OPENCL_BACKEND = register_backend(
    BackendModule(
        name="opencl",
        target_kinds=(KIND,),
        pipelines={KIND: PIPELINE},
        device_codegens={KIND: DeviceCodegen(device_source, None, (SOURCE_FORMAT,), ())},
        execution_backends=(OPENCL,),
        unsupported={
            FLOAT64: "float64 needs the device's cl_khr_fp64 (a target with -fp64=true)",
            INT64_ATOMICS: "64-bit atomic updates need the device's cl_khr_int64_base_atomics (-int64_atomics=true)",
            LOCAL_MEMORY: "a work-group has the device's local_mem bytes of local memory (OpenCL guarantees 16 KiB; "
            "the conformance tiles need up to 96 KiB)",
            WORK_GROUP_SIZE: "a work-group holds at most the device's max_work_group_size work-items (at least 1)",
        },
        dialect="tilecraft.opencl.language",
        doc="OpenCL 1.2 devices through OpenCL C: work-groups of work-items, local-memory reductions",
        api_version=API_VERSION,
    )
)
