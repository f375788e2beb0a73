"""The `hip` execution backend: Build keeps the artifact's code object (compiled by the HIP target's
clang step in codegen) with its source; Load puts it on the target's device with `hipModuleLoadData`;
Launch is the generated launcher the CUDA driver runtime also uses (tilecraft/execution/cuda_driver/
launch.py: parameter slots, grids, streams), calling `hipModuleLaunchKernel`, whose signature is
cuLaunchKernel's. An export loads without any compiler.

Arrays: torch's ROCm tensors (DLPack device type kDLROCM), 16-byte aligned; outputs are allocated with
torch next to the inputs; streams are torch's current stream on the device unless one is given.
"""

from __future__ import annotations

import contextlib
import hashlib
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tilecraft.errors import ArgumentError, TilecraftError
from tilecraft.execution.base import CachedExecutionBackend
from tilecraft.execution.cuda_driver import interop
from tilecraft.execution.cuda_driver.launch import (
    LaunchHooks,
    build_launcher,
    check_artifact,
    make_stream_resolver,
    torch_current_stream,
)
from tilecraft.execution.hip import runtime as hip_runtime
from tilecraft.ir.dtype import DataType
from tilecraft.runtime.arrays import ArrayArg
from tilecraft.runtime.artifact import CompiledArtifact
from tilecraft.runtime.launch import Built, FastPath, Loaded

BINARY_FORMAT = "hsaco"
SOURCE_FORMAT = "hip-source"
CODE_OBJECT_FILE = "kernel.hsaco"
SOURCE_FILE = "kernel.hip"
ALIGNMENT = 16
_IMAGE_ERRORS = (hip_runtime.HIP_ERROR_INVALID_IMAGE, hip_runtime.HIP_ERROR_NO_BINARY_FOR_GPU)


@dataclass(eq=False)
class HipModule:
    """A code object loaded on one device: the module and one function per kernel; unloaded when this
    object is collected (every launcher keeps a reference to it)."""

    runtime: Any
    device: int
    module: int
    functions: tuple[int, ...]
    _finalizer: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._finalizer = weakref.finalize(self, _unload, self.runtime, self.module)
        self._finalizer.atexit = False  # the runtime may already be shutting down at exit


def _unload(runtime: Any, module: int) -> None:
    # best effort: a failing runtime at this point has nothing left to free
    with contextlib.suppress(TilecraftError):
        runtime.unload_module(module)


class HipExecutionBackend(CachedExecutionBackend):
    """Build: the artifact's code object. Load/Launch: the HIP runtime."""

    def build_options(self, artifact: CompiledArtifact, ctx: Any) -> Mapping[str, Any]:
        return {"hsaco_sha256": hashlib.sha256(self._code_object(artifact)).hexdigest()}

    def compile(self, artifact: CompiledArtifact, ctx: Any) -> tuple[Mapping[str, bytes], Mapping[str, Any]]:
        check_artifact(artifact)
        files = {CODE_OBJECT_FILE: self._code_object(artifact)}
        if SOURCE_FORMAT in artifact.device_sources:
            files[SOURCE_FILE] = artifact.source(SOURCE_FORMAT).encode()
        return files, {"kernels": [k.symbol for k in artifact.kernels], "arch": artifact.target.attr("arch")}

    def _code_object(self, artifact: CompiledArtifact) -> bytes:
        if BINARY_FORMAT not in artifact.device_binaries:
            raise TilecraftError(
                f"artifact of {artifact.function_name} has no {BINARY_FORMAT} code object: the hip execution "
                "backend loads what the HIP target's clang step compiled in codegen; lower it for a hip target "
                "with execution_backend='hip' (clang must be installed: see docs/hip.md)"
            )
        return artifact.binary(BINARY_FORMAT)

    def load(self, built: Built) -> Loaded:
        artifact = built.artifact
        check_artifact(artifact)
        runtime = hip_runtime.get_runtime()
        device = int(artifact.target.attr("device") or 0)
        runtime.set_device(device)
        module = _load_image(runtime, built.read(CODE_OBJECT_FILE), artifact, device)
        try:
            functions = tuple(runtime.function(module, k.symbol) for k in artifact.kernels)
        except BaseException:
            runtime.unload_module(module)
            raise
        return Loaded(built, HipModule(runtime, device, module, functions))

    def _hooks(self, handle: HipModule, artifact: CompiledArtifact, resolve_stream) -> LaunchHooks:
        return LaunchHooks(
            launch_kernel=handle.runtime.launch_kernel,
            returns_tuple=False,
            resolve_stream=resolve_stream,
            failed=_failure_handler(handle, artifact),
            wrong_device=_wrong_device_handler(handle.device, [p.name for p in artifact.params]),
            tensor_maps=None,
        )

    def launcher(self, loaded: Loaded) -> Callable[..., None]:
        handle: HipModule = loaded.handle
        artifact = loaded.built.artifact
        buffers = [i for i, p in enumerate(artifact.params) if p.kind == "buffer"]
        hooks = self._hooks(handle, artifact, make_stream_resolver(buffers))
        return build_launcher(artifact, handle.functions, handle.device, hooks, keep_alive=handle)

    def fast_path(self, loaded: Loaded) -> FastPath:
        """Raw device pointers and a raw stream, for tilecraft.jit's generated path for torch tensors."""
        handle: HipModule = loaded.handle
        artifact = loaded.built.artifact
        hooks = self._hooks(handle, artifact, lambda stream, args: stream)
        raw = build_launcher(artifact, handle.functions, handle.device, hooks, keep_alive=handle, raw=True)
        return FastPath(raw, handle.device, torch_current_stream, ALIGNMENT)

    def synchronize(self, loaded: Loaded) -> None:
        handle: HipModule = loaded.handle
        handle.runtime.set_device(handle.device)
        handle.runtime.synchronize()

    def check_device(self, arg: ArrayArg, name: str) -> None:
        """Arrays must be in AMD GPU memory (a ROCm torch tensor), 16-byte aligned."""
        if not self.accepts_device(arg):
            raise ArgumentError(
                f"parameter {name!r} is a {arg.library} array on {arg.device}, but this kernel runs on an AMD GPU "
                "through HIP; pass GPU memory (a ROCm build of torch: tensor.cuda() or tensor.to('cuda:N'))"
            )
        if arg.ptr % ALIGNMENT:
            raise ArgumentError(
                f"parameter {name!r} starts at an address that is not {ALIGNMENT}-byte aligned (a view with an "
                "offset, such as x[1:]); pass a fresh tensor (x.clone()) or an aligned slice"
            )

    def empty(self, reference: ArrayArg | None, shape: tuple[int, ...], dtype: DataType) -> Any:
        """An output on `reference`'s GPU, from torch; never host memory."""
        if reference is None or reference.library != "torch":
            raise ArgumentError(
                "cannot allocate the kernel's outputs: the hip execution backend allocates them with torch next "
                "to a torch input; pass torch tensors, or pass the outputs as arguments"
            )
        import torch

        return torch.empty(shape, dtype=interop.torch_dtype(torch, dtype), device=reference.obj.device)

    def to_device(self, array: Any, device: int | None = None) -> Any:
        """A GPU copy of a numpy array, through torch (a ROCm build names AMD GPUs 'cuda:N')."""
        return interop.to_device(array, device)

    def to_host(self, array: Any) -> Any:
        return interop.to_host(array)


def _load_image(runtime: Any, image: bytes, artifact: CompiledArtifact, device: int) -> int:
    try:
        return runtime.load_module(image)
    except hip_runtime.HipError as err:
        if err.code not in _IMAGE_ERRORS:
            raise
        raise TilecraftError(
            f"AMD GPU {device} cannot load the code object of {artifact.function_name}, built for "
            f"{artifact.target.attr('arch')}: {err}; compile for the device's arch (a hip target without -arch "
            "reads it from the device)"
        ) from err


def _failure_handler(handle: HipModule, artifact: CompiledArtifact) -> Callable[[int, int, tuple], None]:
    kernels = artifact.kernels

    def failed(k: int, rc: int, call: tuple[Any, ...]) -> None:
        """A launch failed: raise naming the kernel and its launch configuration."""
        _, gx, gy, gz, bx, by, bz, smem, stream = call[:9]
        raise handle.runtime.error(
            "hipModuleLaunchKernel", int(rc),
            f"kernel {kernels[k].symbol}, grid ({gx}, {gy}, {gz}), block ({bx}, {by}, {bz}), dynamic LDS {smem} "
            f"bytes, stream {stream:#x}, device {handle.device}" if isinstance(stream, int) else
            f"kernel {kernels[k].symbol}, device {handle.device}",
        )  # fmt: skip

    return failed


def _wrong_device_handler(device: int, names: Sequence[str]) -> Callable[[Sequence[Any]], None]:
    def wrong_device(args: Sequence[Any]) -> None:
        misplaced = [f"{name!r} is on device {arg.device_id}" for name, arg in zip(names, args)
                     if isinstance(arg, ArrayArg) and arg.device_id != device]  # fmt: skip
        raise ArgumentError(
            f"this kernel was loaded on AMD GPU {device} (target attribute -device={device}), but "
            f"{', '.join(misplaced)}; move the arrays with tensor.to('cuda:{device}'), or compile for their "
            "device with target 'hip -device=N'"
        )

    return wrong_device


__all__ = ["HipExecutionBackend"]
