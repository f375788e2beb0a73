"""Devices: where arrays live, in DLPack's words (device type codes, `DLDeviceType`, and how an error
names one), and the devices an autotuning times candidates on (`BenchmarkDevice`).

The array readers (`runtime/arrays.py`) record each array's DLPack device type and index; an execution
backend's spec declares the device types its launcher reads (`ExecutionBackendSpec.device_types`), and
its `check_device` refuses the others. Codes of device memory are the execution backend's to name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DLPACK_HOST = 1
"""DLPack's device type 1: host memory, where numpy arrays live."""


def describe_device(code: int, index: int = 0) -> str:
    """How an error names DLPack device `code`, index `index`."""
    return f"DLPack device {code}:{index}"


@dataclass(frozen=True)
class BenchmarkDevice:
    """One device an autotuning can time candidates on: its name and architecture (a tuning database's
    key) and the environment that gives a fresh process this device alone (a pinned benchmark worker)."""

    name: str
    arch: str
    environment: Mapping[str, str] = field(default_factory=dict)


def host_device() -> BenchmarkDevice:
    """The host processor: its model name (from /proc/cpuinfo on Linux) and machine type."""
    import platform

    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return BenchmarkDevice(name, platform.machine())
