"""The runtime types: what a compiled kernel is and what a call to it deals in, below the JIT and shared by
every execution backend.

- `artifact`: `CompiledArtifact`, the frozen record between codegen and launch (device sources and
  binaries by format, `ParamInfo` per parameter, `KernelInfo` launch metadata per device kernel, tensor
  maps), and its files on disk (`artifact_files`, `artifact_from_files`);
- `launch`: what an execution backend makes of an artifact (`Built`, `Loaded`), its `Launcher`, and the
  raw launch descriptions of the fast paths (`FastPath`, `NativeLaunch`);
- `arrays`, `dlpack`, `packed`: reading a caller's arrays (numpy, torch, DLPack) without a copy, and
  4-bit values packed two to a byte;
- `devices`: DLPack device codes, and the devices an autotuning measures on (`BenchmarkDevice`);
- `timing`: the profiler's clocks (`DeviceTimer`, `KernelClock`).

What a backend implements and registers (the manifest, targets, pipelines, codegen, the execution-backend
protocol) is the contract in `tilecraft.backend`; the execution backends themselves are in
`tilecraft.execution`. Importing this package imports none of its modules (numpy among them): each name
is loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from tilecraft._modules import imported as imported_module  # noqa: F401 - in __all__

_HOMES = {
    **dict.fromkeys(("ArrayArg", "ArrayReader", "as_array_arg", "is_array"), "arrays"),
    **dict.fromkeys(
        ("ArtifactDecodeError", "CompiledArtifact", "KernelInfo", "ParamInfo", "TensorMapInfo",
         "artifact_files", "artifact_from_files"),
        "artifact",
    ),
    **dict.fromkeys(("BenchmarkDevice", "DLPACK_HOST", "describe_device", "host_device"), "devices"),
    **dict.fromkeys(
        ("Built", "FastPath", "Launcher", "Loaded", "NativeKernel", "NativeLaunch", "StoredFiles"), "launch"
    ),
    **dict.fromkeys(("pack", "unpack"), "packed"),
    **dict.fromkeys(("DeviceTimer", "KernelClock", "KernelClockUnavailable"), "timing"),
}  # fmt: skip

__all__ = sorted([*_HOMES, "imported_module"])


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tilecraft.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tilecraft.runtime.{home}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
