"""Launch: the kernels of an artifact, in order, as compute passes of one command buffer, between copying
the buffer arguments in and copying back those the kernels write (memory.py); a call returns when
everything has finished.

The ABI of one kernel (abi.py): its uniform block (the logical grid, then the scalars in `params` order,
taken by name from the function's parameters or its symbolic dims) and one storage buffer per buffer
parameter. The grid (workgroups per dim, from its expressions over the scalars and dims) is folded when
a dim passes the device's `max-compute-workgroups-per-dimension`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tilecraft.errors import ArgumentError, TilecraftError
from tilecraft.execution import abi
from tilecraft.execution.abi import PACK_ERRORS, ArgSource, arg_source, bad_scalar, plain_value, scalar_names
from tilecraft.execution.grid import grid_function
from tilecraft.execution.host_memory import refuse_stream
from tilecraft.execution.wgpu import memory
from tilecraft.execution.wgpu.abi import SCALAR_TYPES, binding_bases, fold_grid, uniform_layout
from tilecraft.execution.wgpu.device import DeviceRuntime, import_wgpu
from tilecraft.runtime.artifact import CompiledArtifact, KernelInfo, ParamInfo

PACK_CODES = {"u32": "I", "i32": "i", "f32": "f", "i64": "q", "u64": "Q", "f64": "d"}


def check_artifact(artifact: CompiledArtifact) -> None:
    """Launch metadata every kernel must satisfy, checked before anything is built or loaded."""
    abi.check_kernels(artifact, _check_kernel, _check_scalar)


def _check_kernel(info: KernelInfo) -> None:
    if info.dynamic_smem:
        raise TilecraftError(f"kernel {info.symbol} asks for {info.dynamic_smem} bytes of dynamic shared "
                             "memory; WebGPU declares workgroup memory in the shader")  # fmt: skip
    if not 1 <= len(info.grid) <= 3:
        raise TilecraftError(f"kernel {info.symbol}: grid {info.grid} must have 1 to 3 dims")


def _check_scalar(param: ParamInfo, symbol: str) -> str:
    return abi.scalar_code(param, symbol, SCALAR_TYPES, "a WGSL uniform block cannot hold")


@dataclass
class KernelPlan:
    """One kernel's dispatch, prepared at load: its pipeline, bindings, uniform layout and grid."""

    info: KernelInfo
    pipeline: Any
    layout: Any  # the bind group layout
    uniform_binding: int
    sources: tuple[ArgSource, ...]
    uniform_format: struct.Struct
    uniform_size: int
    grid: Callable[[Sequence[Any], Sequence[int]], tuple[int, ...]]

    def uniform_bytes(self, groups: tuple[int, ...], args: Sequence[Any], dims: Sequence[int]) -> bytes:
        values = [plain_value(args[s.index] if s.kind == "scalar" else dims[s.index]) for s in self.sources
                  if s.kind != "buffer"]  # fmt: skip
        try:
            packed = self.uniform_format.pack(*(groups + (1, 1, 1))[:3], *values)
        except PACK_ERRORS:
            params = [p for p in self.info.params if p.kind == "scalar"]
            bad_scalar(params, values, [PACK_CODES[SCALAR_TYPES[p.dtype.name]] for p in params], self.info.symbol)
            raise
        return packed + b"\0" * (self.uniform_size - len(packed))

    def groups(self, scalars: Sequence[Any], dims: Sequence[int]) -> tuple[int, ...]:
        return abi.work_groups(self.grid, scalars, dims, self.info.symbol)


def plan_kernels(artifact: CompiledArtifact, pipelines: Sequence[Any]) -> tuple[KernelPlan, ...]:
    bases = binding_bases([sum(p.kind == "buffer" for p in info.params) for info in artifact.kernels])
    plans = []
    for info, pipeline, base in zip(artifact.kernels, pipelines, bases):
        scalars = [p for p in info.params if p.kind == "scalar"]
        fields, size = uniform_layout([p.dtype.name for p in scalars])
        fmt, offset = "<", 0
        for f in fields:
            fmt += "x" * (f.offset - offset) + PACK_CODES[f.wgsl_type]
            offset = f.offset + struct.calcsize("<" + PACK_CODES[f.wgsl_type])
        plans.append(KernelPlan(
            info=info, pipeline=pipeline, layout=pipeline.get_bind_group_layout(0), uniform_binding=base,
            sources=tuple(arg_source(p, artifact, info.symbol) for p in info.params),
            uniform_format=struct.Struct(fmt), uniform_size=size,
            grid=grid_function(info.grid, scalar_names(artifact), artifact.symbolic_dims),
        ))  # fmt: skip
    return tuple(plans)


class Call:
    """The storage buffers of one call, the dispatches, and the copies back."""

    def __init__(self, runtime: DeviceRuntime, args: Sequence[Any], buffers: Sequence[tuple[int, str, bool]],
                 f16: bool) -> None:  # fmt: skip
        self.wgpu = import_wgpu()
        self.runtime = runtime
        self.regions, self.keys = memory.regions(args, buffers, f16)
        limit = runtime.limits.get("max-storage-buffer-binding-size")
        usage = self.wgpu.BufferUsage
        self.device_buffers = {}
        for key, region in self.regions.items():
            data = region.device_bytes()
            if limit is not None and len(data) > limit:
                raise ArgumentError(f"a buffer argument of {region.nbytes} bytes ({len(data)} on the device) is "
                                    f"larger than one storage binding of {runtime.description} holds ({limit})")  # fmt: skip
            flags = usage.STORAGE | usage.COPY_DST | (usage.COPY_SRC if region.written else 0)
            self.device_buffers[key] = runtime.device.create_buffer_with_data(data=data, usage=flags)

    def encode(self, encoder: Any, plan: KernelPlan, args: Sequence[Any], dims: Sequence[int]) -> None:
        scalars = [args[s.index] for s in plan.sources if s.kind == "scalar"]
        groups = plan.groups(scalars, dims)
        if 0 in groups:
            return
        limit = int(self.runtime.limits.get("max-compute-workgroups-per-dimension", 65535))
        try:
            dispatch = fold_grid(groups, limit)
        except ValueError as err:
            raise ArgumentError(f"kernel {plan.info.symbol}: {err}") from None
        device = self.runtime.device
        uniform = device.create_buffer_with_data(data=plan.uniform_bytes(groups, args, dims),
                                                 usage=self.wgpu.BufferUsage.UNIFORM)  # fmt: skip
        entries = [{"binding": plan.uniform_binding, "resource": {"buffer": uniform}}]
        buffer_sources = [s for s in plan.sources if s.kind == "buffer"]
        for j, source in enumerate(buffer_sources):
            buffer = self.device_buffers[self.keys[source.index]]
            entries.append({"binding": plan.uniform_binding + 1 + j, "resource": {"buffer": buffer}})
        group = device.create_bind_group(layout=plan.layout, entries=entries)
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(plan.pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(*dispatch)
        compute.end()

    def finish(self) -> None:
        """Wait for the dispatches and copy every written region back (reading a buffer maps it, which
        waits for the work submitted before; `queue.on_submitted_work_done_sync` is broken in wgpu 0.32)."""
        queue = self.runtime.device.queue
        written = [(k, r) for k, r in self.regions.items() if r.written and r.count]
        for key, region in written:
            region.copy_back(queue.read_buffer(self.device_buffers[key]))
        if not written:
            wait_idle(self.runtime)

    def release(self) -> None:
        for buffer in self.device_buffers.values():
            buffer.destroy()
        self.device_buffers.clear()


def wait_idle(runtime: DeviceRuntime) -> None:
    """Block until the work submitted so far has finished: map a small buffer copied after it."""
    wgpu = import_wgpu()
    device = runtime.device
    usage = wgpu.BufferUsage
    marker = device.create_buffer(size=4, usage=usage.COPY_SRC | usage.COPY_DST)
    device.queue.read_buffer(marker)
    marker.destroy()


def build_launcher(artifact: CompiledArtifact, plans: Sequence[KernelPlan], runtime: DeviceRuntime
                   ) -> Callable[..., None]:  # fmt: skip
    """`launch(args, dims, stream=None)`: copies in, dispatches every kernel in order, copies back and
    waits; `stream` must be None (each call is synchronous on the device's own queue)."""
    buffers = [(i, p.name, p.written) for i, p in enumerate(artifact.params) if p.kind == "buffer"]
    f16 = artifact.target.attr("f16") is True

    def launch(args: Sequence[Any], dims: Sequence[int], stream: Any = None) -> None:
        refuse_stream(stream, "wgpu", "runs on the device's own queue")
        with runtime.lock:
            call = Call(runtime, args, buffers, f16)
            try:
                encoder = runtime.device.create_command_encoder()
                for plan in plans:
                    call.encode(encoder, plan, args, dims)
                runtime.device.queue.submit([encoder.finish()])
                call.finish()
            finally:
                call.release()

    launch.plans = plans
    return launch
