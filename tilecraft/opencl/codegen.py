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
from tilecraft.codegen.kernel import bind_indices, device_code, function_text, param_decl, written_buffers
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Var
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.opencl.printer import SMEM, OpenCLPrinter
from tilecraft.transform.storage import STORAGE_ATTR, launch_info, planned_offsets
from tilecraft.transform.target_support import check_planned_memory

SOURCE_FORMAT = "opencl-source"
INCLUDE_DIR = Path(__file__).parent / "include"


def header_text() -> str:
    return headers.header_text(INCLUDE_DIR / "tc_opencl.h")


def _param(printer: OpenCLPrinter, p: Buffer | Var, written: set[int]) -> str:
    return param_decl(printer, p, written, lambda buf, ptr: f"__global {ptr} restrict {printer.name(buf)}")


def kernel_source(func: PrimFunc) -> str:
    launch: S.KernelLaunch = func.body
    printer = OpenCLPrinter(planned_offsets(func, OpenCLPrinter.arena_scopes))
    printer.reserve(SMEM)
    written = written_buffers(func)
    params = [_param(printer, p, written) for p in func.params]
    if func.attr(STORAGE_ATTR, 0):
        params.append(f"__local uint4* {SMEM}")
    bind_indices(
        printer, func, lambda k: f"(int32_t)get_group_id({k})", lambda k: f"(int32_t)get_local_id({k})"
    )
    printer.stmt(launch.body)
    size = ", ".join(str(t) for t in (*launch.threads, 1, 1)[:3])
    head = f"__kernel __attribute__((reqd_work_group_size({size}))) void {func.name}({', '.join(params)})"
    return function_text(head, printer)


def device_source(mod: IRModule, ctx) -> DeviceCode:
    for f in mod.functions:
        check_planned_memory(f.name, f.attr(STORAGE_ATTR, 0), f.body.span, ctx.target)
    parts = [header_text(), *headers.used_texts(mod), *(kernel_source(f) for f in mod.functions)]
    return device_code(mod, SOURCE_FORMAT, parts, [launch_info(f) for f in mod.functions])
