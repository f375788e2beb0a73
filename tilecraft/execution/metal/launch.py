"""Launch: the kernels of an artifact, in order, in one command buffer on the device's queue, between
copying the buffer arguments into shared-storage MTLBuffers and copying back those the kernels write;
a call returns when the command buffer has completed.

The ABI of one kernel (its `KernelInfo`, metal-source in tilecraft/metal/codegen.py): argument k is
bound at buffer index k, in `params` order, each taken by name from the function's parameters or its
symbolic dims. A buffer is an MTLBuffer holding the bytes from its first element to its last; a
scalar is set with setBytes as the MSL type of its dtype (`int8`..`int64`, `uint8`..`uint64`, `float32`
as themselves, `bool` as int, `float16` and `bfloat16` as float). When `dynamic_smem` is n > 0,
threadgroup memory index 0 gets n bytes rounded up to 16. The grid is `grid` threadgroups of `block`
threads (dispatchThreadgroups), `grid` evaluated from its expressions over the scalar parameters and
symbolic dims.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecraft.errors import TilecraftError, ToolchainError
from tilecraft.execution import abi
from tilecraft.execution.abi import ArgSource, arg_source, plain_value, scalar_names
from tilecraft.execution.grid import grid_function
from tilecraft.execution.host_memory import host_regions, refuse_stream
from tilecraft.execution.metal.device import MetalRuntime
from tilecraft.runtime.artifact import CompiledArtifact, KernelInfo, ParamInfo

SCALAR_CODES = {name: code for name, code in abi.SCALAR_CODES.items() if name != "float64"}  # MSL has no double
STORAGE_MODE_SHARED = 0  # MTLResourceStorageModeShared: CPU and GPU see the same memory
COMMAND_BUFFER_COMPLETED = 4  # MTLCommandBufferStatusCompleted
THREADGROUP_MEMORY_GRANULE = 16


def scalar_code(param: ParamInfo, symbol: str) -> str:
    return abi.scalar_code(param, symbol, SCALAR_CODES, "a Metal kernel cannot take")


def check_artifact(artifact: CompiledArtifact) -> None:
    """Launch metadata every kernel must satisfy, checked before anything is built or loaded."""
    abi.check_kernels(artifact, _check_dims, scalar_code)


def _check_dims(info: KernelInfo) -> None:
    if not 1 <= len(info.grid) <= 3 or not 1 <= len(info.block) <= 3:
        raise TilecraftError(f"kernel {info.symbol}: grid {info.grid} and block {info.block} need 1 to 3 dims")


def _size3(values: Sequence[int]) -> tuple[int, int, int]:
    padded = (*values, 1, 1, 1)[:3]
    return int(padded[0]), int(padded[1]), int(padded[2])


@dataclass
class KernelPlan:
    """One kernel's launch, prepared at load: its pipeline state, where each argument comes from, the
    grid function, the threadgroup size and its threadgroup memory."""

    info: KernelInfo
    pipeline: Any
    sources: tuple[ArgSource, ...]
    codes: tuple[str | None, ...]
    grid: Callable[[Sequence[Any], Sequence[int]], tuple[int, ...]]
    block: tuple[int, int, int]
    threadgroup_memory: int

    def groups(self, scalars: Sequence[Any], dims: Sequence[int]) -> tuple[int, int, int]:
        return _size3(abi.work_groups(self.grid, scalars, dims, self.info.symbol))

    def encode(self, metal: Any, command_buffer: Any, args: Sequence[Any], dims: Sequence[int],
               scalars: Sequence[Any], buffers: dict[int, Any]) -> None:  # fmt: skip
        """One compute encoder: the pipeline, the arguments, the threadgroup memory, the dispatch."""
        groups = self.groups(scalars, dims)
        if 0 in groups:
            return
        encoder = command_buffer.computeCommandEncoder()
        encoder.setComputePipelineState_(self.pipeline)
        for index, (source, code, param) in enumerate(zip(self.sources, self.codes, self.info.params)):
            if source.kind == "buffer":
                encoder.setBuffer_offset_atIndex_(buffers[source.index], 0, index)
            else:
                value = args[source.index] if source.kind == "scalar" else dims[source.index]
                data = self._pack(code, value, param)
                encoder.setBytes_length_atIndex_(data, len(data), index)
        if self.threadgroup_memory:
            encoder.setThreadgroupMemoryLength_atIndex_(self.threadgroup_memory, 0)
        encoder.dispatchThreadgroups_threadsPerThreadgroup_(
            metal.MTLSizeMake(*groups), metal.MTLSizeMake(*self.block)
        )
        encoder.endEncoding()

    def _pack(self, code: str, value: Any, param: ParamInfo) -> bytes:
        value = plain_value(value)
        try:
            return struct.pack("<" + code, value)
        except abi.PACK_ERRORS:
            abi.bad_scalar((param,), (value,), (code,), self.info.symbol)
            raise


def plan_kernel(
    artifact: CompiledArtifact, info: KernelInfo, library: Any, runtime: MetalRuntime
) -> KernelPlan:
    """The KernelPlan of one kernel of a library; raises for metadata the device cannot honour."""
    function = library.newFunctionWithName_(info.symbol)
    if function is None:
        names = sorted(str(n) for n in (library.functionNames() or ()))
        raise TilecraftError(
            f"the Metal library defines no kernel {info.symbol!r}; it defines: {', '.join(names) or 'none'}"
        )
    pipeline, error = runtime.device.newComputePipelineStateWithFunction_error_(function, None)
    if pipeline is None:
        raise ToolchainError(f"Metal could not make a compute pipeline for {info.symbol}: {_describe(error)}")
    threads = math.prod(info.block)
    limit = int(pipeline.maxTotalThreadsPerThreadgroup())
    if threads > limit:
        raise TilecraftError(
            f"kernel {info.symbol}: a threadgroup of {info.block} ({threads} threads) exceeds what "
            f"{runtime.describe()} runs for this kernel: at most {limit}"
        )
    memory = -(-info.dynamic_smem // THREADGROUP_MEMORY_GRANULE) * THREADGROUP_MEMORY_GRANULE
    available = int(runtime.device.maxThreadgroupMemoryLength())
    static = int(pipeline.staticThreadgroupMemoryLength())
    if memory + static > available:
        raise TilecraftError(
            f"kernel {info.symbol} needs {memory} bytes of threadgroup memory (+{static} static); "
            f"{runtime.describe()} has {available}"
        )
    sources = tuple(arg_source(p, artifact, info.symbol) for p in info.params)
    codes = tuple(scalar_code(p, info.symbol) if p.kind == "scalar" else None for p in info.params)
    grid = grid_function(info.grid, scalar_names(artifact), artifact.symbolic_dims)
    return KernelPlan(info, pipeline, sources, codes, grid, _size3(info.block), memory)


def _describe(error: Any) -> str:
    if error is None:
        return "no error given"
    describe = getattr(error, "localizedDescription", None)
    return str(describe()) if callable(describe) else str(error)


# ---------------------------------------------------------------------- memory


class Staging:
    """The MTLBuffers of one call, one per distinct host region (host_memory.py: the same array passed
    twice shares one; partial overlaps are refused), filled from the host when made; `copy_back()` after
    the command buffer completes copies the written ones back."""

    def __init__(
        self, runtime: MetalRuntime, args: Sequence[Any], buffers: Sequence[tuple[int, str, bool]]
    ) -> None:
        self.regions, keys = host_regions(args, buffers, "metal")
        self.device: dict[tuple[int, int], Any] = {}
        for key, region in self.regions.items():
            # Metal has no empty buffers: an empty argument gets 16 bytes that nothing reads.
            data = region.view().tobytes() if region.nbytes else bytes(16)
            buffer = runtime.device.newBufferWithBytes_length_options_(data, len(data), STORAGE_MODE_SHARED)
            if buffer is None:
                raise ToolchainError(f"{runtime.describe()} could not allocate a buffer of {len(data)} bytes")
            self.device[key] = buffer
        self.by_param = {index: self.device[key] for index, key in keys.items()}

    def copy_back(self) -> None:
        for key, region in self.regions.items():
            if region.written and region.nbytes:
                contents = self.device[key].contents().as_buffer(region.nbytes)
                region.view()[:] = np.frombuffer(contents, dtype=np.uint8, count=region.nbytes)


def build_launcher(artifact: CompiledArtifact, plans: Sequence[KernelPlan], runtime: MetalRuntime
                   ) -> Callable[..., None]:  # fmt: skip
    """`launch(args, dims, stream=None)`: copies in, runs every kernel in order in one command buffer,
    waits for it, copies back; `stream` must be None (each call is synchronous on the device's queue)."""
    buffers = [(i, p.name, p.written) for i, p in enumerate(artifact.params) if p.kind == "buffer"]
    scalar_indices = [i for i, p in enumerate(artifact.params) if p.kind == "scalar"]

    def launch(args: Sequence[Any], dims: Sequence[int], stream: Any = None) -> None:
        refuse_stream(stream, "metal", "runs one command buffer on the device's queue")
        scalars = [args[i] for i in scalar_indices]
        with runtime.lock:
            staging = Staging(runtime, args, buffers)
            command_buffer = runtime.queue.commandBuffer()
            for plan in plans:
                plan.encode(runtime.metal, command_buffer, args, dims, scalars, staging.by_param)
            command_buffer.commit()
            command_buffer.waitUntilCompleted()
            if int(command_buffer.status()) != COMMAND_BUFFER_COMPLETED:
                raise TilecraftError(
                    f"the Metal command buffer of {artifact.function_name} failed on {runtime.describe()}: "
                    f"{_describe(command_buffer.error())}"
                )
            staging.copy_back()

    launch.plans = plans
    return launch
