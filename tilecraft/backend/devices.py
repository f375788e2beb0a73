"""Where arrays live, in DLPack's words: device type codes (`DLDeviceType`) and how an error names one.

The array readers (`backend/arrays.py`) record each array's DLPack device type and index; an execution
backend's spec declares the device types its launcher reads (`ExecutionBackendSpec.device_types`), and
its `check_device` refuses the others. Codes of device memory are the execution backend's to name.
"""

from __future__ import annotations

DLPACK_HOST = 1
"""DLPack's device type 1: host memory, where numpy arrays live."""


def describe_device(code: int, index: int = 0) -> str:
    """How an error names DLPack device `code`, index `index`."""
    return f"DLPack device {code}:{index}"
