"""The backend contract: what a target backend or an execution backend implements, declares and registers.

- the target: `Target`, `TargetKind`, `register_target_kind`, `lookup_target_kind`, `check_idempotent`,
  `TargetError` (what a normalizer raises);
- the manifest and its registration: `BackendModule` (its `unsupported` declares the backend's limits),
  `register_backend`, `backend_for`, `API_VERSION`;
- the pass pipeline: `PassPipeline`, `Pass`, `module_pass`, `PassContext`, and `SimtTarget`, the hardware
  facts a SIMT backend gives the shared SIMT passes;
- codegen: `DeviceCodegen`, `DeviceCode`, `HostCodegen`, `HostCode`, `HostCodegenHook`;
- execution: `ExecutionBackendSpec`, `Availability`, and `ExecutionBackend`, the protocol an execution
  backend implements;
- the context every later stage consults: `create_backend_context`, `BackendContext`.

The conformance kit a backend runs is `tilecraft.testing.conformance`; the runtime types (the compiled
artifact, arrays, devices, what a build and a load make) are in `tilecraft.runtime`; the rest of the
infrastructure is in this package's modules (`registry`, `detection`, `errors`, `split`, `instrument`...).
docs/backends.md documents every name below. Nothing here names a backend, a target kind or an execution
backend; backends register themselves (see docs/architecture.md).

Importing this package is cheap: no toolchain or hardware probes, no IR import, no backend import.
"""

from tilecraft._modules import moved as _moved
from tilecraft.backend.api import API_VERSION
from tilecraft.backend.codegen import DeviceCode, DeviceCodegen, HostCode, HostCodegen, HostCodegenHook
from tilecraft.backend.context import BackendContext, create_backend_context
from tilecraft.backend.errors import TargetError
from tilecraft.backend.execution import Availability, ExecutionBackend, ExecutionBackendSpec
from tilecraft.backend.module import BackendModule
from tilecraft.backend.pipeline import Pass, PassContext, PassPipeline, module_pass
from tilecraft.backend.registry import backend_for, register_backend
from tilecraft.backend.simt import SimtTarget
from tilecraft.backend.target import Target, check_idempotent
from tilecraft.backend.target_kind import TargetKind, lookup_target_kind, register_target_kind

__all__ = [
    "API_VERSION", "Availability", "BackendContext", "BackendModule", "DeviceCode", "DeviceCodegen",
    "ExecutionBackend", "ExecutionBackendSpec", "HostCode", "HostCodegen", "HostCodegenHook", "Pass",
    "PassContext", "PassPipeline", "SimtTarget", "Target", "TargetError", "TargetKind", "backend_for",
    "check_idempotent", "create_backend_context", "lookup_target_kind", "module_pass", "register_backend",
    "register_target_kind",
]  # fmt: skip

# Names this package exported before it was narrowed to the contract, and the module each lives in now.
_MOVED = {
    **dict.fromkeys(
        ("BenchmarkDevice", "Built", "CompiledArtifact", "FastPath", "KernelInfo", "Launcher", "Loaded",
         "ParamInfo", "imported_module", "arrays", "artifact", "devices", "dlpack", "packed", "timing"),
        "tilecraft.runtime",
    ),
    **dict.fromkeys(
        ("DEVICE", "HOST", "ROLE_ATTR", "mark_role", "split_host_device"), "tilecraft.backend.split"
    ),
    "MIN_API_VERSION": "tilecraft.backend.api",
    **dict.fromkeys(
        ("ArtifactError", "ExecutionBackendNotDeclared", "ExecutionBackendUnavailable", "ManifestError",
         "NoExecutionBackendAvailable", "PassError", "PluginAPIError"),
        "tilecraft.backend.errors",
    ),
    **dict.fromkeys(("DetectionResult", "detect_target", "detection_report"), "tilecraft.backend.detection"),
    "FunctionPass": "tilecraft.backend.pipeline",
    **dict.fromkeys(("IRDumper", "PassInstrument", "PassTiming"), "tilecraft.backend.instrument"),
    **dict.fromkeys(("LaneExchange", "SimtFacts"), "tilecraft.backend.simt"),
    **dict.fromkeys(("PluginProblem", "plugin_problems"), "tilecraft.backend._loader"),
    **dict.fromkeys(
        ("isolated_registry", "registered_backends", "target_kinds", "unregister_backend"),
        "tilecraft.backend.registry",
    ),
    "select_execution_backend": "tilecraft.backend.context",
    **dict.fromkeys(("registered_target_kinds", "unregister_target_kind"), "tilecraft.backend.target_kind"),
}  # fmt: skip


def __getattr__(name: str):
    """A name that moved out of the contract is an error naming its new module, never a silent alias."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module 'tilecraft.backend' has no attribute {name!r}")
    raise _moved(__name__, name, home, "tilecraft.backend holds the backend contract only (docs/backends.md)")
