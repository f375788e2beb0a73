"""The OpenCL target kind `opencl` (alias `ocl`): one device of one OpenCL platform, by index.

Attributes (all canonical after normalization):

* `platform`: the platform index in the ICD loader's list (default 0).
* `device`: the device index within that platform (default 0).
* `fp16`, `fp64`, `int64_atomics`: whether the device has `cl_khr_fp16`, `cl_khr_fp64` and
  `cl_khr_int64_base_atomics`.
* `local_mem`: bytes of local memory per work-group; `max_work_group_size`: work-items per work-group.

`capabilities(target)` states them as the record tilecraft/backend/capabilities.py describes: float64
and 64-bit atomic updates where the device has the extensions, the work-group and local-memory limits;
what is unknown refuses nothing.

Capabilities that are not given are read from the device, lazily (never at import) and at most once per
process for each device, when pyopencl is importable and the device exists; otherwise they stay unset,
so a target can still be named (and its code generated) on a machine without OpenCL. A capability that
is given is kept as given. Normalizing a normalized target changes nothing.

The vendor and device names are not attributes: they contain spaces, which a target string cannot
carry. They are part of the `opencl` execution backend's cache key instead.

`"auto"` never picks this kind (`auto=False`): on most machines that have an OpenCL platform a native
backend fits better, so OpenCL is used when named. Its detector still reports whether device 0 of
platform 0 is there (`tilecraft doctor`, the conformance suite).
"""

from __future__ import annotations

from typing import Any

from tilecraft.backend.capabilities import (
    ATOMIC_DTYPES_32BIT,
    EVERY_DTYPE,
    Atomics,
    Capabilities,
    Lack,
    Limit,
    Memory,
    no_mbarriers,
    support_of,
)
from tilecraft.backend.errors import TargetError
from tilecraft.backend.target import Target
from tilecraft.backend.target_kind import TargetKind, register_target_kind
from tilecraft.opencl.storage import SHARED_ALIGN

KIND = "opencl"
ALIASES = ("ocl",)
INDICES = ("platform", "device")
CAPABILITIES: dict[str, type] = {
    "fp16": bool, "fp64": bool, "int64_atomics": bool, "local_mem": int, "max_work_group_size": int,
}  # fmt: skip
ATTRIBUTES = (*INDICES, *CAPABILITIES)


def normalize(attrs: dict[str, Any]) -> dict[str, Any]:
    """Canonical attributes: the indices (default 0) and the capabilities, the missing ones read from
    the device when it can be reached; idempotent. Unknown attribute names never get here: target
    parsing rejects them against ATTRIBUTES."""
    out: dict[str, Any] = {key: _index(attrs.get(key, 0), key) for key in INDICES}
    for key, kind in CAPABILITIES.items():
        if attrs.get(key) is not None:
            out[key] = _capability(attrs[key], key, kind)
    if any(key not in out for key in CAPABILITIES):
        found = device_capabilities(out["platform"], out["device"]) or {}
        out.update({key: value for key, value in found.items() if key not in out})
    return out


def _index(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TargetError(f"target {KIND}: {key} must be an index (an int >= 0), got {value!r}")
    return value


def _capability(value: Any, key: str, kind: type) -> bool | int:
    if kind is bool:
        if not isinstance(value, bool):
            raise TargetError(f"target {KIND}: {key} must be true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise TargetError(f"target {KIND}: {key} must be an int > 0, got {value!r}")
    return value


def device_capabilities(platform: int, device: int) -> dict[str, bool | int] | None:
    """The capability attributes of the device, or None when pyopencl or the device is missing."""
    status = _device_status(platform, device)
    return None if isinstance(status, Exception) else status.capabilities()


def _device_status(platform: int, device: int) -> Any:
    """The execution backend's DeviceInfo, or an OpenCLUnavailable saying why there is none."""
    from tilecraft.execution.opencl.device import device_status

    return device_status(platform, device)


# The limits the capabilities report (LoweringError.unsupported), declared in the manifest: they depend on
# the device a target names.
FLOAT64 = "dtype:float64"
INT64_ATOMICS = "feature:int64-atomics"
WORK_GROUP_SIZE = "resource:work-group-size"
LOCAL_MEMORY = "resource:local-memory"
# OpenCL has no query for a work-item's private memory. This is the largest any tested device offers
# (NVIDIA: 512 KiB of local memory per thread); past it no device runs the kernel.
PRIVATE_MEMORY_PER_WORK_ITEM = 512 * 1024


def capabilities(target: Target) -> Capabilities:
    """What the device has, from the capability attributes (unknown where they are unset)."""
    fp64, atomics64 = target.attr("fp64"), target.attr("int64_atomics")
    work_items = target.attr("max_work_group_size")
    float64 = support_of(fp64, Lack("this OpenCL device has no cl_khr_fp64", "use float32, or a device with double "
                                    "precision", FLOAT64))  # fmt: skip
    atomics = Atomics()
    if atomics64 is False:
        atomics = Atomics(dtypes=ATOMIC_DTYPES_32BIT, lack=Lack(
            "the device lacks cl_khr_int64_base_atomics (and the extended atomics for max/min)",
            "accumulate in a float32 or int32 buffer", INT64_ATOMICS))
    return Capabilities(
        max_threads=Limit(work_items, f"this OpenCL device runs at most {work_items} work-items per work-group",
                          WORK_GROUP_SIZE) if work_items else Limit(),
        shared_memory=Memory(target.attr("local_mem"), "shared (local) memory", SHARED_ALIGN, key=LOCAL_MEMORY),
        private_memory=Memory(PRIVATE_MEMORY_PER_WORK_ITEM, "private memory",
                              fix="use smaller tiles or more threads (work-items per work-group)"),
        mbarriers=no_mbarriers("the OpenCL target"),
        **EVERY_DTYPE | {"float64": float64},
        atomics=atomics,
        print=True,
    )  # fmt: skip


def detect() -> Target | str:
    """Device 0 of platform 0, or why there is none (only tools and tests ask: `auto` skips this kind)."""
    status = _device_status(0, 0)
    if isinstance(status, Exception):
        return status.reason
    return Target.parse({"kind": KIND})


OPENCL_TARGET_KIND = register_target_kind(
    TargetKind(
        KIND,
        aliases=ALIASES,
        attributes=ATTRIBUTES,
        normalize=normalize,
        detect=detect,
        detect_priority=30,
        capabilities=capabilities,
        doc="an OpenCL device (work-groups of work-items), named by platform and device index",
        examples=(
            "opencl",
            "ocl -device=0",
            "opencl -platform=0 -device=0 -fp16=false -fp64=true -int64_atomics=true -local_mem=65536 "
            "-max_work_group_size=256",
            {"kind": "opencl", "fp64": False, "local_mem": 32768},
        ),
        auto=False,
    )
)
