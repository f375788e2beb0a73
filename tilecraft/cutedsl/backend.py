"""The CuTe DSL variant's manifest: the one place that assembles and registers it.

A variant of kind cuda (`variant=True`): it handles the targets that name it (`cuda -backend=cutedsl`,
or TileLang's spelling `cutedsl`), sharing the kind's target rules and detection with the cuda backend,
and differing in its pipeline's head and lowering choices (pipeline.py), its codegen (CuTe DSL Python,
codegen.py) and its execution backend (the DSL's JIT, tilecraft/execution/cutedsl).
"""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.codegen import DeviceCodegen
from tilecraft.backend.module import BackendModule
from tilecraft.backend.registry import register_backend
from tilecraft.cuda.backend import CUDA_BACKEND
from tilecraft.cuda.storage import ASSUME_ALIGNED, ASSUME_ALIGNED_DOC
from tilecraft.cuda.target import KIND, SHARED_MEMORY
from tilecraft.cutedsl.check import LIMITS
from tilecraft.cutedsl.codegen import BINARY_FORMAT, SOURCE_FORMAT, compile_cubin, device_source
from tilecraft.cutedsl.pipeline import PIPELINE
from tilecraft.cutedsl.target import VARIANT
from tilecraft.execution.cutedsl.spec import CUTEDSL

CUTEDSL_BACKEND = register_backend(
    BackendModule(
        name=VARIANT,
        target_kinds=(KIND,),
        pipelines={KIND: PIPELINE},
        device_codegens={
            KIND: DeviceCodegen(device_source, compile_cubin, (SOURCE_FORMAT,), (BINARY_FORMAT,))
        },
        execution_backends=(CUTEDSL,),
        callbacks=CUDA_BACKEND.callbacks,
        pass_configs={ASSUME_ALIGNED: ASSUME_ALIGNED_DOC},
        unsupported={SHARED_MEMORY: CUDA_BACKEND.unsupported[SHARED_MEMORY], **LIMITS},
        dialect="tilecraft.cutedsl.language",
        doc="NVIDIA GPUs (sm_80+) through NVIDIA's CuTe DSL (Python, JIT to cubin): mma.sync MMA atoms fed by "
        "ldmatrix and cp.async copy atoms; a variant of the cuda target (-backend=cutedsl)",
        api_version=API_VERSION,
        variant=True,
    )
)
