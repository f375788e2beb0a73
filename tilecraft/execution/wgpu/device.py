"""WebGPU adapters and devices through wgpu-py: the import, the adapter a target names, its capabilities,
the availability probe, and one device per adapter per process.

Everything is lazy: wgpu is imported on first use, never when this module is. Creating a device takes
about a second (lavapipe: 1.2 s), so each adapter's device is made once per process and kept; `reset()`
forgets them (tests). Every way of not finding a device is a `WgpuUnavailable` with its reason and fix.
"""

from __future__ import annotations

import importlib
import sys
import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from tilecraft.backend.execution import Availability
from tilecraft.errors import Unavailable

WGPU_FIX = "`pip install wgpu` (wgpu-py with wgpu-native; it needs Python >= 3.11)"
ADAPTER_FIX = (
    "install a Vulkan driver: Mesa's lavapipe runs on the CPU (Debian/Ubuntu: "
    "`apt-get install mesa-vulkan-drivers libvulkan1`), or your GPU vendor's Vulkan driver; "
    "`vulkaninfo --summary` lists what the Vulkan loader finds"
)
# wgpu feature name -> the target attribute that records it
FEATURES = {
    "shader-f16": "f16",
    "shader-f64": "f64",
    "shader-int64": "int64",
    "shader-float32-atomic": "float32_atomics",
    "subgroup": "subgroups",
}
# wgpu limit name -> the target attribute that records it
LIMITS = {
    "max-compute-invocations-per-workgroup": "max_workgroup_size",
    "max-compute-workgroup-storage-size": "workgroup_memory",
    "max-compute-workgroups-per-dimension": "max_workgroups",
    "max-storage-buffers-per-shader-stage": "max_storage_buffers",
    "max-storage-buffer-binding-size": "max_binding_size",
}
# Mesa's llvmpipe (lavapipe's Vulkan driver) ends every loop of an invocation once that invocation has
# passed the end of a loop this many times in all (gallivm's loop limiter, LP_MAX_TGSI_LOOP_ITERATIONS in
# lp_bld_limits.h; lp_exec_endloop decrements one counter per function), without an error. Other drivers
# have no such counter (0: none).
LLVMPIPE_LOOP_ITERATIONS = 65535
# A one-workgroup shader that records the subgroup size its invocations see.
SUBGROUP_PROBE = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn tc_probe(@builtin(local_invocation_index) t: u32, @builtin(subgroup_size) size: u32) {
    out[t] = size;
}
"""


class WgpuUnavailable(Unavailable):
    """wgpu, a WebGPU adapter or the requested one is missing; `reason` and `fix` say which."""


def import_wgpu() -> ModuleType:
    """The wgpu module, or WgpuUnavailable saying how to install it."""
    if sys.version_info < (3, 11):
        raise WgpuUnavailable(
            f"wgpu needs Python >= 3.11; this is Python {sys.version_info.major}.{sys.version_info.minor}",
            "run tilecraft on Python 3.11 or newer to use the WebGPU target",
        )
    try:
        return importlib.import_module("wgpu")
    except ModuleNotFoundError as err:
        if err.name != "wgpu":
            raise WgpuUnavailable(f"wgpu cannot be imported: {err}", WGPU_FIX) from None
        raise WgpuUnavailable("wgpu is not installed", WGPU_FIX) from None
    except (OSError, RuntimeError) as err:  # wgpu-native's library failed to load
        raise WgpuUnavailable(f"wgpu cannot load wgpu-native: {err}", WGPU_FIX) from None


@dataclass(eq=False)
class DeviceRuntime:
    """One adapter's device, its queue and what it was created with, shared by every kernel of the
    process. `lock` serializes calls: a call's copies, dispatches and read-backs belong together."""

    adapter: Any
    device: Any
    features: frozenset[str]
    limits: dict[str, int]
    description: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    subgroup_size: int | None = None

    def capabilities(self) -> dict[str, bool | int]:
        """The target attributes this device has (features, limits, subgroup size)."""
        caps: dict[str, bool | int] = {attr: name in self.features for name, attr in FEATURES.items()}
        caps.update({attr: int(self.limits[name]) for name, attr in LIMITS.items() if name in self.limits})
        if self.subgroup_size is not None:
            caps["subgroup_size"] = self.subgroup_size
        caps["max_loop_iterations"] = loop_iteration_limit(self.adapter.info)
        return caps

    def identity(self) -> dict[str, str]:
        """What a pipeline built here depends on: the adapter and its driver."""
        info = self.adapter.info
        return {"adapter": self.description, "backend": str(info.get("backend_type", "")),
                "driver": str(info.get("description", ""))}  # fmt: skip


def loop_iteration_limit(info: Any) -> int:
    """The loop passes an invocation may run on the adapter described by `info` (wgpu's adapter info),
    0 where the driver does not limit them."""
    names = f"{info.get('vendor', '')} {info.get('device', '')}".lower()
    return LLVMPIPE_LOOP_ITERATIONS if "llvmpipe" in names else 0


_lock = threading.Lock()
_runtimes: dict[int | None, DeviceRuntime | WgpuUnavailable] = {}


def reset() -> None:
    """Forget every device (tests)."""
    with _lock:
        _runtimes.clear()


def adapters() -> list[Any]:
    """Every adapter wgpu finds, in its order (the target's `adapter` index)."""
    return list(import_wgpu().gpu.enumerate_adapters_sync())


def _find_adapter(index: int | None) -> Any:
    wgpu = import_wgpu()
    if index is None:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        if adapter is None:
            raise WgpuUnavailable("wgpu finds no WebGPU adapter", ADAPTER_FIX)
        return adapter
    found = adapters()
    if index >= len(found):
        names = "; ".join(f"{k}: {describe(a)}" for k, a in enumerate(found)) or "none"
        raise WgpuUnavailable(f"WebGPU adapter {index} does not exist (adapters: {names})", ADAPTER_FIX)
    return found[index]


def describe(adapter: Any) -> str:
    info = adapter.info
    return f"{info.get('device', '?')} ({info.get('backend_type', '?')}, {info.get('adapter_type', '?')})"


def _create(index: int | None) -> DeviceRuntime:
    adapter = _find_adapter(index)
    features = frozenset(str(f) for f in adapter.features)
    wanted = sorted(f for f in FEATURES if f in features)
    limits = {name: int(adapter.limits[name]) for name in adapter.limits}
    try:
        device = adapter.request_device_sync(required_features=wanted, required_limits=limits)
    except Exception as err:  # noqa: BLE001 - wgpu raises its own error types
        raise WgpuUnavailable(f"{describe(adapter)} refused a device: {err}", ADAPTER_FIX) from None
    runtime = DeviceRuntime(adapter, device, frozenset(wanted), limits, describe(adapter))
    if "subgroup" in features:
        runtime.subgroup_size = _measure_subgroup_size(runtime)
    return runtime


def _measure_subgroup_size(runtime: DeviceRuntime) -> int | None:
    """The subgroup size compute shaders get, when the adapter fixes it (minimum == maximum) or one
    probe dispatch shows every invocation the same power of two; None otherwise."""
    info = runtime.adapter.info
    # wgpu 0.32 spells the keys "stackgroup_*"
    low = info.get("subgroup_min_size", info.get("stackgroup_min_size"))
    high = info.get("subgroup_max_size", info.get("stackgroup_max_size"))
    if low and low == high:
        return int(low)
    import numpy as np

    wgpu = import_wgpu()
    device = runtime.device
    module = device.create_shader_module(code=SUBGROUP_PROBE)
    pipeline = device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "tc_probe"})
    out = device.create_buffer(size=64 * 4, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0),
                                     entries=[{"binding": 0, "resource": {"buffer": out}}])  # fmt: skip
    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, group)
    compute.dispatch_workgroups(1)
    compute.end()
    device.queue.submit([encoder.finish()])
    sizes = set(np.frombuffer(device.queue.read_buffer(out), np.uint32).tolist())
    size = sizes.pop() if len(sizes) == 1 else 0
    return size if size > 0 and size & (size - 1) == 0 else None


def runtime(index: int | None = None) -> DeviceRuntime:
    """The device of adapter `index` (None: the one wgpu prefers), made once per process; raises
    WgpuUnavailable."""
    with _lock:
        found = _runtimes.get(index)
        if found is None:
            try:
                found = _create(index)
            except WgpuUnavailable as err:
                found = err
            _runtimes[index] = found
    if isinstance(found, WgpuUnavailable):
        raise found
    return found


def device_status(index: int | None = None) -> DeviceRuntime | WgpuUnavailable:
    """The device, or the WgpuUnavailable saying why there is none."""
    try:
        return runtime(index)
    except WgpuUnavailable as err:
        return err


def availability() -> Availability:
    """The `wgpu` execution backend runs where wgpu imports and an adapter gives a device."""
    status = device_status(None)
    if isinstance(status, WgpuUnavailable):
        return Availability(False, status.reason, status.fix)
    return Availability(True, f"wgpu on {status.description}")
