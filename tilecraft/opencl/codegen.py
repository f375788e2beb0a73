"""OpenCL C codegen: one program holding every device kernel, and their launch metadata.

Format `opencl-source`: the text of include/tc_opencl.h (with the shared C helpers), then one
`__kernel` per T.Kernel taking the kernel's params in KernelInfo order (buffers as `__global`
pointers, scalars by value) and, when it uses shared memory, a last `__local uint4* tc_smem` argument
of `dynamic_smem` bytes (16-byte elements: NVIDIA's OpenCL aligns a `__local` argument only to its
element type, and a `char*` one lands on an odd address there). Grids count work-groups; blocks are work-group sizes. The program is built
for its device by the `opencl` execution backend, so there is no compile step here.
"""

from __future__ import annotations

from pathlib import Path

from tilecraft.backend.codegen import DeviceCode
from tilecraft.codegen import headers
from tilecraft.codegen.c_family import storage_type, value_type
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Var
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import walk
from tilecraft.opencl.printer import SMEM, OpenCLPrinter
from tilecraft.opencl.transform.check import LOCAL_MEMORY
from tilecraft.transform.storage import STORAGE_ATTR, launch_info, plan_storage

SOURCE_FORMAT = "opencl-source"
SHARED_SCOPES = ("shared", "shared.dyn")
SHARED_ALIGN = 128
INCLUDE_DIR = Path(__file__).parent / "include"


def header_text() -> str:
    return headers.header_text(INCLUDE_DIR / "tc_opencl.h")


def _written(func: PrimFunc) -> set[int]:
    return {id(n.buffer) for n in walk(func.body) if isinstance(n, (S.BufferStore, AtomicUpdate))}


def _param(printer: OpenCLPrinter, p: Buffer | Var, written: set[int]) -> str:
    if isinstance(p, Buffer):
        const = "" if id(p) in written else "const "
        return f"__global {const}{storage_type(p.dtype)}* restrict {printer.name(p)}"
    return f"{value_type(p.dtype)} {printer.name(p)}"


def kernel_source(func: PrimFunc) -> str:
    launch: S.KernelLaunch = func.body
    plan = plan_storage(launch.body, SHARED_SCOPES, SHARED_ALIGN)
    printer = OpenCLPrinter(plan.offsets)
    printer.reserve(SMEM)
    written = _written(func)
    params = [_param(printer, p, written) for p in func.params]
    if func.attr(STORAGE_ATTR, 0):
        params.append(f"__local uint4* {SMEM}")
    threads = 1
    for t in launch.threads:
        threads *= t
    printer.mark_nonneg(*launch.block_vars, *launch.thread_vars, *func.symbolic_dims)
    for k, var in enumerate(launch.block_vars):
        printer.line(f"const int32_t {printer.name(var)} = (int32_t)get_group_id({k});")
    for k, var in enumerate(launch.thread_vars):
        printer.line(f"const int32_t {printer.name(var)} = (int32_t)get_local_id({k});")
    printer.stmt(launch.body)
    size = ", ".join(str(t) for t in (*launch.threads, 1, 1)[:3])
    head = f"__kernel __attribute__((reqd_work_group_size({size}))) void {func.name}({', '.join(params)})"
    return f"{head} {{\n{printer.text()}\n}}\n"


def _check_local_memory(func: PrimFunc, target) -> None:
    limit = target.attr("local_mem") if target is not None else None
    used = func.attr(STORAGE_ATTR, 0)
    if limit is not None and used > limit:
        launch: S.KernelLaunch = func.body
        raise LoweringError(
            f"kernel {func.name} needs {used} bytes of shared (local) memory; the device has {limit}",
            launch.span,
            "use smaller shared tiles (block sizes) or fewer shared buffers",
            target=target,
            unsupported=LOCAL_MEMORY,
        )


def device_source(mod: IRModule, ctx) -> DeviceCode:
    for f in mod.functions:
        _check_local_memory(f, ctx.target)
    parts = [header_text()]
    parts += [kernel_source(f) for f in mod.functions]
    return DeviceCode(
        sources={SOURCE_FORMAT: "\n".join(parts)},
        entry_symbols=tuple(f.name for f in mod.functions),
        kernels=tuple(launch_info(f) for f in mod.functions),
    )
