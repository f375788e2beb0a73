"""The WebGPU target kind `webgpu` (alias `wgpu`): one WebGPU adapter, as wgpu-py finds it.

Attributes (all canonical after normalization):

* `adapter`: the adapter's index in wgpu's list (`tilecraft doctor` shows it); absent: the adapter wgpu
  prefers (`power_preference="high-performance"`).
* `f16`, `f64`, `int64`, `float32_atomics`, `subgroups`: whether the adapter has the features
  `shader-f16`, `shader-f64`, `shader-int64`, `shader-float32-atomic` and `subgroup`.
* `subgroup_size`: invocations per subgroup, where the adapter fixes it (or a probe dispatch measured it).
* `max_workgroup_size` (invocations per workgroup), `workgroup_memory` (bytes per workgroup),
  `max_workgroups` (per grid dim), `max_storage_buffers` (per shader stage), `max_binding_size` (bytes of
  one storage buffer binding).
* `max_loop_iterations`: loop passes one invocation may run, counted over all its loops, before the
  driver ends them silently (llvmpipe, lavapipe's driver: 65535); 0 where the driver has no such limit.

Capabilities that are not given are read from the adapter, lazily (never at import) and at most once per
process for each adapter, when wgpu is importable and the adapter exists; otherwise they stay unset, so a
target can still be named (and its WGSL generated) on a machine without WebGPU. A capability that is
given is kept as given; normalizing a normalized target changes nothing.

`"auto"` never picks this kind (`auto=False`): where a WebGPU adapter exists, a native backend fits the
same hardware better, so WebGPU is used when named. Its detector still reports whether there is one.
"""

from __future__ import annotations

from typing import Any

from tilecraft.backend.errors import TargetError
from tilecraft.backend.target import Target
from tilecraft.backend.target_kind import TargetKind, register_target_kind

KIND = "webgpu"
ALIASES = ("wgpu",)
FEATURES = ("f16", "f64", "int64", "float32_atomics", "subgroups")
LIMITS = ("subgroup_size", "max_workgroup_size", "workgroup_memory", "max_workgroups", "max_storage_buffers",
          "max_binding_size", "max_loop_iterations")  # fmt: skip
# Limits that may be 0 (none); the others are at least 1.
UNLIMITED_AT_ZERO = ("max_loop_iterations",)
ATTRIBUTES = ("adapter", *FEATURES, *LIMITS)


def normalize(attrs: dict[str, Any]) -> dict[str, Any]:
    """Canonical attributes: the adapter index when given, the capabilities given, and the missing ones
    read from the adapter when it can be reached; idempotent. Unknown names never get here: target
    parsing rejects them against ATTRIBUTES."""
    out: dict[str, Any] = {}
    if attrs.get("adapter") is not None:
        out["adapter"] = _count(attrs["adapter"], "adapter", minimum=0)
    for key in FEATURES:
        if attrs.get(key) is not None:
            out[key] = _flag(attrs[key], key)
    for key in LIMITS:
        if attrs.get(key) is not None:
            out[key] = _count(attrs[key], key, minimum=0 if key in UNLIMITED_AT_ZERO else 1)
    if any(key not in out for key in (*FEATURES, *LIMITS)):
        found = adapter_capabilities(out.get("adapter")) or {}
        out.update({key: value for key, value in found.items() if key not in out})
    return out


def _flag(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise TargetError(f"target {KIND}: {key} must be true or false, got {value!r}")
    return value


def _count(value: Any, key: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TargetError(f"target {KIND}: {key} must be an int >= {minimum}, got {value!r}")
    return value


def adapter_capabilities(adapter: int | None) -> dict[str, bool | int] | None:
    """The capability attributes of the adapter's device, or None when wgpu or the adapter is missing."""
    status = _device_status(adapter)
    return None if isinstance(status, Exception) else status.capabilities()


def _device_status(adapter: int | None) -> Any:
    from tilecraft.execution.wgpu.device import device_status

    return device_status(adapter)


def detect() -> Target | str:
    """The adapter wgpu prefers, or why there is none (only tools and tests ask: `auto` skips this kind)."""
    status = _device_status(None)
    if isinstance(status, Exception):
        return status.reason
    return Target.parse({"kind": KIND})


WEBGPU_TARGET_KIND = register_target_kind(
    TargetKind(
        KIND,
        aliases=ALIASES,
        attributes=ATTRIBUTES,
        normalize=normalize,
        detect=detect,
        detect_priority=35,
        doc="a WebGPU adapter (WGSL compute shaders through wgpu-py; Vulkan, Metal or D3D12 underneath)",
        examples=(
            "webgpu -f16=true -f64=false -int64=false -float32_atomics=false -subgroups=false "
            "-max_workgroup_size=256 -workgroup_memory=16384 -max_workgroups=65535 -max_storage_buffers=8 "
            "-max_binding_size=134217728 -max_loop_iterations=0",
            "wgpu -f16=true -f64=true -int64=true -float32_atomics=true -subgroups=true -subgroup_size=8 "
            "-max_workgroup_size=1024 -workgroup_memory=32768 -max_workgroups=65535 -max_storage_buffers=32 "
            "-max_binding_size=134217728 -max_loop_iterations=65535",
            {"kind": "webgpu", "f16": False, "subgroups": False, "workgroup_memory": 16384},
        ),
        auto=False,
    )
)
