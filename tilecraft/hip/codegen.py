"""HIP C++ codegen: device kernels (source, and a code object compiled by clang) and their launch
metadata.

Formats:
- `hip-source`: one self-contained translation unit that includes nothing: include/tc_hip.h (with the
  shared C helpers), include/tc_mfma.h when a kernel uses MFMA and a struct per LDS layout its MFMA
  tiles are stored in (printer.layout_struct), then one `extern "C"` kernel per
  T.Kernel taking the kernel's params in KernelInfo order (buffers as device pointers, scalars by
  value), its shared memory as dynamic LDS (`extern __shared__`), its work-group size fixed by
  `amdgpu_flat_work_group_size`.
- `hsaco`: the code object (an AMDGPU ELF) clang made of it for the target's arch (toolchain.py).
The `hip` execution backend loads the code object and launches kernels from the KernelInfo records;
no host source is needed.
"""

from __future__ import annotations

import math
from pathlib import Path

from tilecraft.backend.codegen import DeviceCode
from tilecraft.codegen import headers
from tilecraft.codegen.kernel import bind_indices, device_code, function_text, param_decl, written_buffers
from tilecraft.hip.ir import MfmaGemm
from tilecraft.hip.lds_layout import LdsLayout
from tilecraft.hip.printer import SMEM, HipPrinter, layout_struct, layout_type
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Var
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.visitor import walk
from tilecraft.transform.storage import launch_info, planned_offsets

SOURCE_FORMAT = "hip-source"
BINARY_FORMAT = "hsaco"
SHARED_SCOPES = ("shared", "shared.dyn")
SHARED_ALIGN = 128
INCLUDE_DIR = Path(__file__).parent / "include"


def header_text(mfma: bool) -> str:
    text = headers.header_text(INCLUDE_DIR / "tc_hip.h")
    return text + "\n" + (INCLUDE_DIR / "tc_mfma.h").read_text() if mfma else text


def _param(printer: HipPrinter, p: Buffer | Var, written: set[int]) -> str:
    return param_decl(printer, p, written, lambda buf, ptr: f"{ptr} __restrict__ {printer.name(buf)}")


def kernel_source(func: PrimFunc) -> str:
    launch: S.KernelLaunch = func.body
    printer = HipPrinter(planned_offsets(func, SHARED_SCOPES))  # the plan of plan-lds
    printer.reserve(SMEM)
    written = written_buffers(func)
    params = ", ".join(_param(printer, p, written) for p in func.params)
    threads = math.prod(launch.threads)
    printer.line(f"extern __attribute__((shared)) __attribute__((aligned({SHARED_ALIGN}))) char {SMEM}[];")
    bind_indices(
        printer,
        func,
        lambda k: f"(int32_t)__builtin_amdgcn_workgroup_id_{'xyz'[k]}()",
        lambda k: f"(int32_t)__builtin_amdgcn_workitem_id_{'xyz'[k]}()",
    )
    printer.stmt(launch.body)
    head = (f'extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size({threads}, {threads}))) '
            f"void {func.name}({params})")  # fmt: skip
    return function_text(head, printer)


def uses_mfma(mod: IRModule) -> bool:
    return any(isinstance(n, MfmaGemm) for f in mod.functions for n in walk(f.body))


def lds_layouts(mod: IRModule) -> list[LdsLayout]:
    """The LDS layouts the module's MFMA calls read their tiles in, each once."""
    found: dict[str, LdsLayout] = {}
    for n in (n for f in mod.functions for n in walk(f.body) if isinstance(n, MfmaGemm)):
        for layout in (n.layout_a, n.layout_b):
            if layout is not None:
                found.setdefault(layout_type(layout), layout)
    return [found[name] for name in sorted(found)]


def device_source(mod: IRModule, ctx) -> DeviceCode:
    parts = [header_text(uses_mfma(mod)), *headers.used_texts(mod)]
    parts += [layout_struct(layout) for layout in lds_layouts(mod)]
    parts += [kernel_source(f) for f in mod.functions]
    return device_code(mod, SOURCE_FORMAT, parts, [launch_info(f) for f in mod.functions])


def compile_code_object(code: DeviceCode, ctx) -> DeviceCode:
    """The compiled entry: the source compiled by clang for the target's arch, with the fast math and
    flags the user asked for (`code.compile_options`)."""
    from tilecraft.hip import toolchain

    options = code.compile_options
    flags = toolchain.requested_flags(bool(options.get("fast_math", False)), tuple(options.get("flags", ())))
    binary = toolchain.compile_code_object(code.sources[SOURCE_FORMAT], ctx.target.attr("arch"), flags)
    return code.with_binaries({BINARY_FORMAT: binary})
