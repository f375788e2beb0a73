"""The Metal device through PyObjC (`pyobjc-framework-Metal`): the import, the default device, its GPU
family, and the per-process runtime (device and command queue).

Everything is lazy: PyObjC is imported on first use, never when this module is, and only on macOS
(`sys.platform == "darwin"`; elsewhere Metal does not exist). The device is looked up at most once per
process; `reset()` forgets it (tests, which install a fake `Metal` module). Every way of not finding a
device is a `MetalUnavailable` with its own reason and fix.
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

PYOBJC_FIX = "`pip install pyobjc-framework-Metal` (macOS)"
MACOS_FIX = (
    "run on a Mac with an Apple GPU; elsewhere generate the MSL only: "
    "tilecraft.lower(kernel, target='metal -family=apple8').source('metal-source')"
)
DEVICE_FIX = "use a Mac whose GPU supports Metal (MTLCreateSystemDefaultDevice returned nothing)"
# MTLGPUFamilyApple<n> = 1000 + n (MTLGPUFamilyApple1 is 1001).
APPLE_FAMILY_BASE = 1000
FAMILIES_NEWEST_FIRST = (9, 8, 7, 6)


class MetalUnavailable(Unavailable):
    """Not macOS, PyObjC's Metal bindings missing, or no device; `reason` and `fix` say which."""


def is_macos() -> bool:
    return sys.platform == "darwin"


def import_metal() -> ModuleType:
    """PyObjC's `Metal` module, or MetalUnavailable saying why not."""
    if not is_macos():
        raise MetalUnavailable(f"Metal exists only on macOS (this is {sys.platform})", MACOS_FIX)
    try:
        return importlib.import_module("Metal")
    except ModuleNotFoundError as err:
        if err.name not in ("Metal", "objc"):
            raise MetalUnavailable(f"PyObjC's Metal cannot be imported: {err}", PYOBJC_FIX) from None
        raise MetalUnavailable("PyObjC's Metal bindings are not installed", PYOBJC_FIX) from None
    except ImportError as err:
        raise MetalUnavailable(f"PyObjC's Metal cannot be imported: {err}", PYOBJC_FIX) from None


@dataclass
class MetalRuntime:
    """The default device, its family and a command queue; `lock` serializes launches."""

    metal: ModuleType
    device: Any
    family: str
    queue: Any
    lock: threading.Lock = field(default_factory=threading.Lock)

    def describe(self) -> str:
        return f"Metal device {self.device.name()} ({self.family})"


_RUNTIME: MetalRuntime | MetalUnavailable | None = None
_LOCK = threading.Lock()


def reset() -> None:
    """Forget the device (tests that swap the `Metal` module)."""
    global _RUNTIME
    with _LOCK:
        _RUNTIME = None


def _open() -> MetalRuntime:
    metal = import_metal()
    device = metal.MTLCreateSystemDefaultDevice()
    if device is None:
        raise MetalUnavailable("no Metal device (MTLCreateSystemDefaultDevice returned none)", DEVICE_FIX)
    family = read_family(device)
    queue = device.newCommandQueue()
    return MetalRuntime(metal, device, family, queue)


def read_family(device: Any) -> str:
    """The newest Apple family the device supports, as `appleN`."""
    for n in FAMILIES_NEWEST_FIRST:
        if device.supportsFamily_(APPLE_FAMILY_BASE + n):
            return f"apple{n}"
    raise MetalUnavailable(
        f"Metal device {device.name()} supports none of the Apple GPU families apple6 to apple9",
        "use a Mac with Apple silicon (M1 or later)",
    )


def runtime() -> MetalRuntime:
    """The process's Metal runtime; MetalUnavailable (the same one each time) when there is none."""
    global _RUNTIME
    with _LOCK:
        if _RUNTIME is None:
            try:
                _RUNTIME = _open()
            except MetalUnavailable as why:
                _RUNTIME = why
        found = _RUNTIME
    if isinstance(found, MetalUnavailable):
        raise found
    return found


def device_family() -> str:
    """The default device's family (`appleN`); MetalUnavailable when there is no device."""
    return runtime().family


def availability() -> Availability:
    try:
        rt = runtime()
    except MetalUnavailable as why:
        return Availability(False, why.reason, why.fix)
    return Availability(True, rt.describe())
