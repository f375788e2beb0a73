"""Launch: the kernels of an artifact, in order, on the device's in-order queue, between copying the
buffer arguments in and copying back those the kernels write (memory.py); a call returns when
everything has finished.

The ABI of one kernel (its `KernelInfo`): the arguments in `params` order, each taken by name from the
function's parameters or its symbolic dims. A buffer is its device buffer (`__global T*`); a scalar is
passed by value as the OpenCL C type of its dtype (`int8`..`int64` and `uint8`..`uint64` as `char`..`long`
and `uchar`..`ulong`, `float32` as `float`, `float64` as `double`, `bool` as `int`, `float16` and
`bfloat16` as `float`). When `dynamic_smem` is n > 0 the kernel takes one more, last argument,
`__local uint4* tc_smem`, of n bytes. The NDRange has `len(block)` or `len(grid)` dims (the larger):
local size `block`, global size `grid * block` per dim, where `grid` (the number of work-groups) is
evaluated from its expressions over the scalar parameters and symbolic dims.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecraft.errors import TilecraftError
from tilecraft.execution import abi
from tilecraft.execution.abi import (
    PACK_ERRORS,
    SCALAR_CODES,
    ArgSource,
    arg_source,
    bad_scalar,
    plain_value,
    scalar_names,
)
from tilecraft.execution.grid import grid_function
from tilecraft.execution.host_memory import refuse_stream
from tilecraft.execution.opencl.device import DeviceInfo, DeviceRuntime, import_pyopencl
from tilecraft.execution.opencl.memory import Staging
from tilecraft.runtime.artifact import CompiledArtifact, KernelInfo, ParamInfo


def scalar_code(param: ParamInfo, symbol: str) -> str:
    return abi.scalar_code(param, symbol, SCALAR_CODES, "an OpenCL kernel cannot take by value")


def check_artifact(artifact: CompiledArtifact) -> None:
    """Launch metadata every kernel must satisfy, checked before anything is built or loaded."""
    abi.check_kernels(artifact, _check_dims, scalar_code)


def _check_dims(info: KernelInfo) -> None:
    if not 1 <= len(info.grid) <= 3:
        raise TilecraftError(f"kernel {info.symbol}: grid {info.grid} must have 1 to 3 dims")


def check_limits(info: KernelInfo, kernel: Any, device: DeviceInfo) -> None:
    """The work-group size and local memory fit the device and the compiled kernel."""
    cl = import_pyopencl()
    threads = math.prod(info.block)
    kernel_max = int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device.handle))
    limit = min(device.max_work_group_size, kernel_max)
    if threads > limit or any(b > m for b, m in zip(info.block, device.max_work_item_sizes)):
        raise TilecraftError(
            f"kernel {info.symbol}: work-group {info.block} ({threads} work-items) exceeds what "
            f"{device.describe()} runs: at most {limit} work-items for this kernel (device maximum "
            f"{device.max_work_group_size}), at most {device.max_work_item_sizes} per dim"
        )
    static = int(kernel.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, device.handle))
    if info.dynamic_smem and info.dynamic_smem + static > device.local_mem:
        raise TilecraftError(
            f"kernel {info.symbol} needs {info.dynamic_smem} bytes of local memory (+{static} static); "
            f"{device.describe()} has {device.local_mem} bytes per work-group"
        )


def make_kernel(program: Any, info: KernelInfo, names: Sequence[str]) -> Any:
    """The program's kernel `info.symbol`, checked to take the arguments `info` describes."""
    cl = import_pyopencl()
    try:
        kernel = cl.Kernel(program, info.symbol)
    except cl.Error:
        raise TilecraftError(
            f"the OpenCL program defines no __kernel {info.symbol!r}; it defines: {', '.join(names) or 'none'}"
        ) from None
    expected = len(info.params) + (1 if info.dynamic_smem else 0)
    if kernel.num_args != expected:
        local = " plus the __local uint4* tc_smem argument" if info.dynamic_smem else ""
        raise TilecraftError(
            f"__kernel {info.symbol} takes {kernel.num_args} arguments, but its KernelInfo describes "
            f"{expected}: {len(info.params)} parameters{local}"
        )
    return kernel


@dataclass
class KernelPlan:
    """One kernel's launch, prepared at load: the kernel object, where each argument comes from, the
    grid function, the work-group size and the local-memory argument."""

    info: KernelInfo
    kernel: Any
    sources: tuple[ArgSource, ...]
    grid: Callable[[Sequence[Any], Sequence[int]], tuple[int, ...]]
    block: tuple[int, ...]
    local_memory: Any
    scalars: struct.Struct
    enqueue_range: Callable[..., Any]  # pyopencl.enqueue_nd_range_kernel

    def enqueue(self, queue: Any, args: Sequence[Any], dims: Sequence[int], scalars: Sequence[Any],
                buffers: dict[int, Any]) -> None:  # fmt: skip
        """Set the arguments and enqueue the NDRange; an empty grid enqueues nothing."""
        groups = self.work_groups(scalars, dims)
        if 0 in groups:
            return
        values = [self._value(s, args, dims, buffers) for s in self.sources]
        self._check_scalars(values)
        if self.local_memory is not None:
            values.append(self.local_memory)
        global_size = tuple(g * b for g, b in zip(groups, self.block))
        self.kernel.set_args(*values)
        self.enqueue_range(queue, self.kernel, global_size, self.block)

    def work_groups(self, scalars: Sequence[Any], dims: Sequence[int]) -> tuple[int, ...]:
        """The number of work-groups per dim, padded to the NDRange's dims; ArgumentError if negative."""
        groups = abi.work_groups(self.grid, scalars, dims, self.info.symbol)
        return groups + (1,) * (len(self.block) - len(groups))

    @staticmethod
    def _value(source: ArgSource, args: Sequence[Any], dims: Sequence[int], buffers: dict[int, Any]) -> Any:
        if source.kind == "buffer":
            return buffers[source.index]
        return plain_value(args[source.index] if source.kind == "scalar" else dims[source.index])

    def _check_scalars(self, values: Sequence[Any]) -> None:
        scalars = [v for s, v in zip(self.sources, values) if s.kind != "buffer"]
        try:
            self.scalars.pack(*scalars)
        except PACK_ERRORS:
            params = [p for p, s in zip(self.info.params, self.sources) if s.kind != "buffer"]
            bad_scalar(params, scalars, [scalar_code(p, self.info.symbol) for p in params], self.info.symbol)


def plan_kernel(artifact: CompiledArtifact, info: KernelInfo, program: Any, names: Sequence[str],
                device: DeviceInfo) -> KernelPlan:  # fmt: skip
    """The KernelPlan of one kernel of a loaded program; raises for metadata the device cannot honour."""
    cl = import_pyopencl()
    kernel = make_kernel(program, info, names)
    check_limits(info, kernel, device)
    sources = tuple(arg_source(p, artifact, info.symbol) for p in info.params)
    codes = [scalar_code(p, info.symbol) if p.kind == "scalar" else None for p in info.params]
    local = [None] if info.dynamic_smem else []
    kernel.set_scalar_arg_dtypes([np.dtype("<" + c) if c else None for c in codes] + local)
    work_dims = max(len(info.grid), len(info.block))
    return KernelPlan(
        info=info,
        kernel=kernel,
        sources=sources,
        grid=grid_function(info.grid, scalar_names(artifact), artifact.symbolic_dims),
        block=tuple(info.block) + (1,) * (work_dims - len(info.block)),
        local_memory=cl.LocalMemory(info.dynamic_smem) if info.dynamic_smem else None,
        scalars=struct.Struct("<" + "".join(c for c in codes if c)),
        enqueue_range=cl.enqueue_nd_range_kernel,
    )


def build_launcher(artifact: CompiledArtifact, plans: Sequence[KernelPlan], runtime: DeviceRuntime
                   ) -> Callable[..., None]:  # fmt: skip
    """`launch(args, dims, stream=None)`: `args` follow `artifact.params` (an ArrayArg per buffer, a
    number per scalar), `dims` the symbolic dims. Copies in, runs every kernel in order, copies back and
    waits; `stream` must be None (each call runs on the device's own queue and is synchronous)."""
    buffers = [(i, p.name, p.written) for i, p in enumerate(artifact.params) if p.kind == "buffer"]
    scalar_indices = [i for i, p in enumerate(artifact.params) if p.kind == "scalar"]
    queue = runtime.queue

    def launch(args: Sequence[Any], dims: Sequence[int], stream: Any = None) -> None:
        refuse_stream(stream, "opencl", "runs on the device's own queue")
        scalars = [args[i] for i in scalar_indices]
        with runtime.lock:
            staging = Staging(runtime.pool, queue, args, buffers)
            try:
                for plan in plans:
                    plan.enqueue(queue, args, dims, scalars, staging.by_param)
                staging.copy_back()
            finally:
                queue.finish()  # also after an error: pending copies still read and write the caller's arrays
                staging.release()

    launch.plans = plans
    return launch
