"""The HIP backend's manifest: the one place that assembles and registers it."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.codegen import DeviceCodegen
from tilecraft.backend.module import BackendModule
from tilecraft.backend.registry import register_backend
from tilecraft.execution.hip.spec import HIP
from tilecraft.hip.carver import CDNA
from tilecraft.hip.codegen import BINARY_FORMAT, SOURCE_FORMAT, compile_code_object, device_source
from tilecraft.hip.pipeline import PIPELINE
from tilecraft.hip.target import FLOAT64_MATH, KIND, LDS, PRINT
from tilecraft.transform.narrow_dtypes import NARROW_DTYPES

HIP_BACKEND = register_backend(
    BackendModule(
        name="hip",
        target_kinds=(KIND,),
        pipelines={KIND: PIPELINE},
        device_codegens={
            KIND: DeviceCodegen(device_source, compile_code_object, (SOURCE_FORMAT,), (BINARY_FORMAT,))
        },
        execution_backends=(HIP,),
        callbacks={"carver.arch.CDNA": CDNA},
        unsupported={
            LDS: "a work-group has the arch's LDS: 64 KiB on gfx90a, gfx942 and gfx1100, 160 KiB on gfx950 (the "
            "conformance tiles need up to 128 KiB)",
            FLOAT64_MATH: "float64 exp, log, sin, cos, tanh, erf and pow need ROCm's ocml device library, which the "
            "code object is built without; compute them in float32",
            PRINT: "device printf needs ROCm's hostcall buffer, which this backend does not set up; copy values "
            "to an output buffer",
            NARROW_DTYPES: "the HIP backend does not lower 4-bit (int4, uint4, float4_e2m1fn) or microscaling "
            "(float6, float8_e8m0fnu) dtypes; convert the data on the host or use the cpu, cuda or opencl target",
        },
        dialect="tilecraft.hip.language",
        doc="AMD GPUs (CDNA2/CDNA3, RDNA3) through HIP C++ compiled by clang without ROCm: wave64, ds_bpermute "
        "reductions, MFMA gemms (fp8 on gfx942)",
        api_version=API_VERSION,
    )
)
