"""The OpenCL backend's manifest: the one place that assembles and registers it."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.codegen import DeviceCodegen
from tilecraft.backend.module import BackendModule
from tilecraft.backend.registry import register_backend
from tilecraft.execution.opencl.spec import OPENCL
from tilecraft.opencl.codegen import SOURCE_FORMAT, device_source
from tilecraft.opencl.pipeline import PIPELINE
from tilecraft.opencl.target import KIND

OPENCL_BACKEND = register_backend(
    BackendModule(
        name="opencl",
        target_kinds=(KIND,),
        pipelines={KIND: PIPELINE},
        device_codegens={KIND: DeviceCodegen(device_source, None, (SOURCE_FORMAT,), ())},
        execution_backends=(OPENCL,),
        dialect="tilecraft.opencl.language",
        doc="OpenCL 1.2 devices through OpenCL C: work-groups of work-items, local-memory reductions",
        api_version=API_VERSION,
    )
)
