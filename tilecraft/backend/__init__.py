"""Shared backend infrastructure: targets, manifests, the registry, the backend context, pass pipelines,
codegen components, the compiled artifact and the execution-backend protocol. Nothing here names a
backend, a target kind or an execution backend; backends register themselves (see docs/architecture.md).

Importing this package is cheap: no toolchain or hardware probes, no IR import, no backend import.
"""

from tilecraft._modules import imported as imported_module
from tilecraft.backend._loader import PluginProblem, plugin_problems
from tilecraft.backend.api import API_VERSION, MIN_API_VERSION
from tilecraft.backend.artifact import CompiledArtifact, KernelInfo, ParamInfo
from tilecraft.backend.codegen import DeviceCode, DeviceCodegen, HostCode, HostCodegen, HostCodegenHook
from tilecraft.backend.context import BackendContext, create_backend_context, select_execution_backend
from tilecraft.backend.detection import DetectionResult, detect_target, detection_report
from tilecraft.backend.errors import (
    ArtifactError,
    ExecutionBackendNotDeclared,
    ExecutionBackendUnavailable,
    ManifestError,
    NoExecutionBackendAvailable,
    PassError,
    PluginAPIError,
    TargetError,
)
from tilecraft.backend.execution import (
    Availability,
    BenchmarkDevice,
    Built,
    ExecutionBackend,
    ExecutionBackendSpec,
    FastPath,
    Launcher,
    Loaded,
)
from tilecraft.backend.instrument import IRDumper, PassInstrument, PassTiming
from tilecraft.backend.module import BackendModule
from tilecraft.backend.pipeline import FunctionPass, Pass, PassContext, PassPipeline, module_pass
from tilecraft.backend.registry import (
    backend_for,
    isolated_registry,
    register_backend,
    registered_backends,
    target_kinds,
    unregister_backend,
)
from tilecraft.backend.simt import LaneExchange, SimtFacts, SimtTarget
from tilecraft.backend.split import DEVICE, HOST, ROLE_ATTR, mark_role, split_host_device
from tilecraft.backend.target import Target, check_idempotent
from tilecraft.backend.target_kind import (
    TargetKind,
    lookup_target_kind,
    register_target_kind,
    registered_target_kinds,
    unregister_target_kind,
)

__all__ = [
    "API_VERSION", "DEVICE", "HOST", "MIN_API_VERSION", "ROLE_ATTR", "ArtifactError", "Availability",
    "BackendContext", "BackendModule", "BenchmarkDevice", "Built", "CompiledArtifact", "DetectionResult", "DeviceCode",
    "DeviceCodegen", "ExecutionBackend", "ExecutionBackendNotDeclared", "ExecutionBackendSpec",
    "ExecutionBackendUnavailable", "FastPath", "FunctionPass", "HostCode", "HostCodegen",
    "HostCodegenHook", "IRDumper", "KernelInfo", "LaneExchange", "Launcher", "Loaded", "ManifestError",
    "NoExecutionBackendAvailable", "ParamInfo", "Pass", "PassContext", "PassError", "PassInstrument",
    "PassPipeline", "PassTiming", "PluginAPIError", "PluginProblem", "SimtFacts", "SimtTarget", "Target",
    "TargetError", "TargetKind", "backend_for", "check_idempotent", "create_backend_context",
    "detect_target", "detection_report", "imported_module", "isolated_registry", "lookup_target_kind", "mark_role",
    "module_pass", "plugin_problems",
    "register_backend", "register_target_kind", "registered_backends", "registered_target_kinds",
    "select_execution_backend", "split_host_device", "target_kinds", "unregister_backend",
    "unregister_target_kind",
]  # fmt: skip
