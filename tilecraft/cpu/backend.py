"""The CPU backend's manifest: the one place that assembles and registers it."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.codegen import DeviceCode, DeviceCodegen, HostCodegen
from tilecraft.backend.module import BackendModule
from tilecraft.backend.registry import register_backend
from tilecraft.cpu.codegen import DEVICE_FORMAT, HOST_FORMAT, OBJECT_FORMAT, device_source, host_source
from tilecraft.cpu.pipeline import BOUNDS_CHECK, PIPELINE
from tilecraft.cpu.storage import MAX_BLOCK_SCRATCH
from tilecraft.cpu.target import KIND
from tilecraft.cpu.transform.work_items import DIVERGENT_BARRIER
from tilecraft.execution.cc.spec import CC


def compile_object(code: DeviceCode, ctx) -> DeviceCode:
    """The compiled entry: the device source as an object file (what `cc -c` makes of it)."""
    from tilecraft.execution.cc.toolchain import compile_object as cc_compile_object

    return code.with_binaries({OBJECT_FORMAT: cc_compile_object(code.sources[DEVICE_FORMAT])})


def processor_count(ctx) -> int:
    """The cores this process may run on: the blocks that run at once (one per OpenMP thread)."""
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


CPU_BACKEND = register_backend(
    BackendModule(
        name="cpu",
        target_kinds=(KIND,),
        pipelines={KIND: PIPELINE},
        device_codegens={
            KIND: DeviceCodegen(device_source, compile_object, (DEVICE_FORMAT,), (OBJECT_FORMAT,)),
        },
        host_codegens={HOST_FORMAT: HostCodegen(HOST_FORMAT, host_source)},
        execution_backends=(CC,),
        callbacks={"processor_count": processor_count},
        dialect="tilecraft.cpu.language",
        pass_configs={
            BOUNDS_CHECK: "check every buffer access; an out-of-bounds one raises naming the kernel line",
            MAX_BLOCK_SCRATCH: "bytes of per-block scratch a kernel may use (default 1 GiB)",
        },
        unsupported={
            DIVERGENT_BARRIER: "a block runs as one thread, its threads' per-thread code as loops between "
            "barriers, so a barrier (or tile-level code) only some threads reach has no order to run in",
        },
        doc="the host processor through C: a block runs as one thread, blocks spread over OpenMP threads",
        api_version=API_VERSION,
    )
)
