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

`capabilities(target)` states these as the record tilecraft/backend/capabilities.py describes, with what
WGSL itself lacks (float8, printf, float64 transcendentals, atomics past 32-bit words of storage buffers).
What is unknown refuses nothing.

Capabilities that are not given are read from the adapter, lazily (never at import) and at most once per
process for each adapter, when wgpu is importable and the adapter exists; otherwise they stay unset, so a
target can still be named (and its WGSL generated) on a machine without WebGPU. A capability that is
given is kept as given; normalizing a normalized target changes nothing.

`"auto"` never picks this kind (`auto=False`): where a WebGPU adapter exists, a native backend fits the
same hardware better, so WebGPU is used when named. Its detector still reports whether there is one.
"""

from __future__ import annotations

from typing import Any

from tilecraft.backend.capabilities import (
    Atomics,
    Capabilities,
    Functions,
    Lack,
    Limit,
    Memory,
    no_mbarriers,
    support_of,
)
from tilecraft.backend.errors import TargetError
from tilecraft.backend.target import Target
from tilecraft.backend.target_kind import TargetKind, register_target_kind
from tilecraft.transform.narrow_dtypes import narrow_lack

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


# The limits the capabilities report (LoweringError.unsupported), declared in the manifest.
FLOAT64 = "dtype:float64"
INT64 = "feature:int64"
FLOAT8 = "dtype:float8"
ATOMICS = "feature:atomics"
PRINT = "feature:print"
WORKGROUP_SIZE = "resource:workgroup-size"
WORKGROUP_MEMORY = "resource:workgroup-memory"
STORAGE_BUFFERS = "resource:storage-buffers"
WIDE_WORKGROUP = "feature:64-bit-workgroup-memory"
FLOAT64_MATH = "feature:float64-math"
LOOP_ITERATIONS = "resource:loop-iterations"
# WGSL's float64 (naga's shader-f64) has arithmetic and these; sin, exp, log, pow, tanh, ... it refuses
# ("Cannot apply math function to type").
FLOAT64_MATH_OK = ("abs", "floor", "ceil", "round", "sqrt")
# WGSL function-scope arrays live in private memory, which WebGPU does not bound; this keeps a
# per-invocation tile where every tested driver runs it.
PRIVATE_MEMORY_PER_INVOCATION = 64 * 1024
NO_PRINTF = Lack("WGSL has no printf", "copy the values to an output buffer and print them on the host", PRINT)
# What to do with a kernel of 4-bit or microscaling dtypes (transform/narrow_dtypes.py).
NARROW_HINT = (
    "convert the data to int8, float16 or float32 on the host, or run the kernel on a target that has these "
    "dtypes (cpu, cuda, opencl)"
)


def capabilities(target: Target) -> Capabilities:
    """What WGSL and the adapter have, from the capability attributes (unknown where they are unset)."""
    invocations, buffers, int64 = target.attr("max_workgroup_size"), target.attr("max_storage_buffers"), target.attr("int64")
    subgroup = target.attr("subgroup_size") if target.attr("subgroups") else None
    return Capabilities(
        thread_group=subgroup,
        max_threads=Limit(invocations, f"this WebGPU adapter runs at most {invocations} invocations per workgroup",
                          WORKGROUP_SIZE) if invocations else Limit(),
        max_buffers=Limit(buffers, f"a WebGPU shader stage of this adapter binds at most {buffers} storage buffers",
                          STORAGE_BUFFERS) if buffers else Limit(),
        shared_memory=Memory(target.attr("workgroup_memory"), "shared (workgroup) memory", key=WORKGROUP_MEMORY),
        private_memory=Memory(PRIVATE_MEMORY_PER_INVOCATION, "private memory",
                              fix="use smaller tiles or more threads (invocations per workgroup)"),
        mbarriers=no_mbarriers("the WebGPU target"),
        float64=support_of(target.attr("f64"), Lack("this WebGPU adapter lacks shader-f64",
                                                     "use float32, or an adapter with shader-f64", FLOAT64)),
        int64=support_of(int64, Lack("this WebGPU adapter lacks shader-int64", "use int32, or an adapter with "
                                     "shader-int64", INT64)),
        float16=True, bfloat16=True,
        float8=Lack("WGSL has no 8-bit float type and the WebGPU backend does not emulate one",
                    "convert to float16 or float32 on the host", FLOAT8),
        narrow=narrow_lack(target, NARROW_HINT),
        wide_shared=support_of(int64, Lack(
            "WebGPU workgroup memory holds 32-bit words and a 64-bit element is moved through a u64, which this "
            "adapter lacks (shader-int64)", "stage the tile as float32 or int32, keep it in global memory, or use "
            "an adapter with shader-int64", WIDE_WORKGROUP)),
        float64_math=Functions(FLOAT64_MATH_OK, Lack(f"WGSL's float64 has only {', '.join(FLOAT64_MATH_OK)}",
                                                     "compute it in float32 (cast the operand), or use another target",
                                                     FLOAT64_MATH)),
        atomics=Atomics(dtypes=("int32", "uint32", "float32"), scopes=("global",), lack=Lack(
            "WebGPU has atomics on 32-bit words of storage buffers (int32, uint32; float32 through compare-exchange)",
            "accumulate into a global float32 or int32 buffer", ATOMICS)),
        print=NO_PRINTF,
    )  # fmt: skip


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
        capabilities=capabilities,
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
