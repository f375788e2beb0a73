"""MSL codegen: one library source holding every device kernel, and their launch metadata.

Format `metal-source`: `#define TC_APPLE_FAMILY n` and the text of include/tc_metal.h (with the shared
C helpers), then one `kernel void` function per T.Kernel. Its arguments, in KernelInfo order, are
bound at consecutive buffer indices: buffers as `device` pointers (`const` when the kernel only reads
them), scalars as `constant T&` (set with setBytes). When the kernel uses shared memory, a
`threadgroup uint4* tc_smem [[threadgroup(0)]]` of `dynamic_smem` bytes follows (the length the launch
sets, rounded up to 16 as Metal requires). Grids count threadgroups; blocks are threadgroup sizes.
The compile step (format `metallib`) runs Apple's offline compiler where Xcode has it (toolchain.py);
elsewhere no Metal compiler exists and it raises ToolchainNotFound. The `metal` execution backend
compiles the source on the device itself, and the test suite type-checks it as C++17 against a shim of
metal_stdlib (tests/metal/shim).
"""

from __future__ import annotations

import math
from pathlib import Path

from tilecraft.backend.codegen import DeviceCode, DeviceCodegen
from tilecraft.codegen import headers
from tilecraft.codegen.c_family import storage_type, value_type
from tilecraft.codegen.kernel import bind_indices, device_code, function_text, written_buffers
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Var
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.metal.printer import SMEM, MetalPrinter
from tilecraft.metal.target import family_number
from tilecraft.transform.storage import STORAGE_ATTR, launch_info, planned_offsets
from tilecraft.transform.target_support import check_planned_memory

SOURCE_FORMAT = "metal-source"
BINARY_FORMAT = "metallib"
SHARED_SCOPES = ("shared", "shared.dyn")
SHARED_ALIGN = 16
INCLUDE_DIR = Path(__file__).parent / "include"
GROUP = "tc_group"
TID = "tc_tid"


def header_text() -> str:
    return headers.header_text(INCLUDE_DIR / "tc_metal.h")


def _param(printer: MetalPrinter, p: Buffer | Var, index: int, written: set[int]) -> str:
    if isinstance(p, Buffer):
        const = "" if id(p) in written else "const "
        return f"{const}device {storage_type(p.dtype)}* {printer.name(p)} [[buffer({index})]]"
    return f"constant {value_type(p.dtype)}& {printer.name(p)} [[buffer({index})]]"


def kernel_source(func: PrimFunc) -> str:
    launch: S.KernelLaunch = func.body
    printer = MetalPrinter(planned_offsets(func, SHARED_SCOPES))  # the plan of plan-threadgroup-memory
    printer.reserve(SMEM, GROUP, TID)
    written = written_buffers(func)
    params = [_param(printer, p, i, written) for i, p in enumerate(func.params)]
    if func.attr(STORAGE_ATTR, 0):
        params.append(f"threadgroup uint4* {SMEM} [[threadgroup(0)]]")
    params.append(f"uint3 {GROUP} [[threadgroup_position_in_grid]]")
    params.append(f"uint3 {TID} [[thread_position_in_threadgroup]]")
    bind_indices(printer, func, lambda k: f"(int32_t){GROUP}.{'xyz'[k]}", lambda k: f"(int32_t){TID}.{'xyz'[k]}")
    printer.stmt(launch.body)
    args = ",\n    ".join(params)
    head = f"[[max_total_threads_per_threadgroup({math.prod(launch.threads)})]] kernel void {func.name}(\n    {args})"
    return function_text(head, printer)


def device_source(mod: IRModule, ctx) -> DeviceCode:
    for f in mod.functions:
        check_planned_memory(f.name, f.attr(STORAGE_ATTR, 0), f.body.span, ctx.target)
    parts = [f"#define TC_APPLE_FAMILY {family_number(ctx.target)}\n" + header_text(), *headers.used_texts(mod)]
    parts += [kernel_source(f) for f in mod.functions]
    return device_code(mod, SOURCE_FORMAT, parts, [launch_info(f) for f in mod.functions])


def compile_metallib(code: DeviceCode, ctx) -> DeviceCode:
    """The source compiled by Apple's Metal compiler, with the fast math and flags the user asked for."""
    from tilecraft.metal.toolchain import compile_metallib as xcrun_compile

    options = code.compile_options
    binary = xcrun_compile(code.sources[SOURCE_FORMAT], bool(options.get("fast_math", False)),
                           tuple(options.get("flags", ())))  # fmt: skip
    return code.with_binaries({BINARY_FORMAT: binary})


DEVICE_CODEGEN = DeviceCodegen(device_source, compile_metallib, (SOURCE_FORMAT,), (BINARY_FORMAT,))
