"""C codegen for the CPU target: device kernels (one function per block) and the host entry.

Formats:
- `c-source`: the kernels, each `static void <symbol>(params..., int32_t tc_bx, tc_by, tc_bz,
  char* tc_scratch, tc_oob_report* tc_report)` running one block, preceded by the text of
  include/tc_cpu.h, so the source is self-contained (and its hash covers the header).
- `c-host-source`: `int32_t <function>_entry(params..., symbolic dims...)`, which runs each kernel's
  grid (an OpenMP loop over blocks when compiled with OpenMP) and returns 0, or the 1-based index of
  the first out-of-bounds site when bounds checks are on (`<function>_oob_message`, called next on the
  same thread, describes it). The report is the call's own (on its stack, handed to every block), so
  concurrent calls from several threads never see each other's. `<function>_after_fork()` makes the
  library's calls run their blocks on the calling thread (a forked child: docs/cpu.md, "Threads").
  The two sources form one translation unit: device source first.
- `c-object`: the compiled entry's output, the device source compiled to an object file.
"""

from __future__ import annotations

from pathlib import Path

from tilecraft.backend.codegen import DeviceCode, HostCode
from tilecraft.codegen import headers
from tilecraft.codegen.c_family import storage_type, value_type
from tilecraft.codegen.kernel import bind_indices, function_text
from tilecraft.cpu.c_printer import BoundsSite, CPrinter
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Var
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.host import KernelCall
from tilecraft.transform.storage import launch_info, planned_offsets

DEVICE_FORMAT = "c-source"
HOST_FORMAT = "c-host-source"
OBJECT_FORMAT = "c-object"
BOUNDS_CHECK_ATTR = "tilecraft.bounds_check"
INCLUDE_DIR = Path(__file__).parent / "include"


def header_text() -> str:
    return headers.header_text(INCLUDE_DIR / "tc_cpu.h")


def param_decl(printer: CPrinter, p: Buffer | Var) -> str:
    if isinstance(p, Buffer):
        return f"{storage_type(p.dtype)}* {printer.name(p)}"
    return f"{value_type(p.dtype)} {printer.name(p)}"


def kernel_source(func: PrimFunc, sites: list[BoundsSite]) -> str:
    """One block of the kernel as a C function."""
    launch: S.KernelLaunch = func.body
    printer = CPrinter(
        func.attr(BOUNDS_CHECK_ATTR, False), sites, planned_offsets(func, CPrinter.arena_scopes)
    )
    for name in ("tc_bx", "tc_by", "tc_bz", "tc_scratch", "tc_report"):
        printer.used.add(name)
    params = [param_decl(printer, p) for p in func.params]
    params += [
        "int32_t tc_bx",
        "int32_t tc_by",
        "int32_t tc_bz",
        "char* tc_scratch",
        "tc_oob_report* tc_report",
    ]
    bind_indices(printer, func, lambda k: f"tc_b{'xyz'[k]}")
    printer.line("(void)tc_scratch; (void)tc_bx; (void)tc_by; (void)tc_bz; (void)tc_report;")
    printer.stmt(launch.body)
    return function_text(f"static void {func.name}({', '.join(params)})", printer)


def device_source(mod: IRModule, ctx) -> DeviceCode:
    """The `c-source` translation-unit head: the header include, the kernels and their metadata."""
    sites: list[BoundsSite] = []
    parts = [header_text(), *headers.used_texts(mod)]
    kernels = []
    for func in mod.functions:
        parts.append(kernel_source(func, sites))
        kernels.append(launch_info(func))
    parts.append(_site_table(sites))
    symbols = tuple(f.name for f in mod.functions)
    return DeviceCode(
        sources={DEVICE_FORMAT: "\n".join(parts)}, entry_symbols=symbols, kernels=tuple(kernels)
    )


def _site_table(sites: list[BoundsSite]) -> str:
    entries = ['""']
    for site in sites:
        text = site.describe()
        entries.append('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return f"static const char* const tc_sites[] = {{{', '.join(entries)}}};\n"


def host_source(mod: IRModule, ctx) -> HostCode:
    """The `c-host-source` entry of each host function."""
    return HostCode("\n".join(_entry(f) for f in mod.functions), HOST_FORMAT)


def _entry(func: PrimFunc) -> str:
    printer = HostPrinter()
    params = [param_decl(printer, p) for p in (*func.params, *func.symbolic_dims)]
    printer.mark_nonneg(*func.symbolic_dims)
    printer.line("tc_oob_report tc_report = {0, 0};")
    printer.stmt(func.body)
    printer.line("tc_oob_last_index = tc_report.index;")
    printer.line("return tc_report.site;")
    body = "\n".join(printer.lines)
    sig = ", ".join(params) if params else "void"
    message = (
        f"const char* {func.name}_oob_message(int32_t site, int64_t* index) {{\n"
        "    *index = tc_oob_last_index;\n"
        "    const int32_t n = (int32_t)(sizeof(tc_sites) / sizeof(tc_sites[0]));\n"
        '    return site > 0 && site < n ? tc_sites[site] : "";\n'
        "}\n"
    )
    after_fork = f"void {func.name}_after_fork(void) {{ tc_single_threaded = 1; }}\n"
    return f"int32_t {func.name}_entry({sig}) {{\n{body}\n}}\n\n{message}\n{after_fork}"


# Blocks run in strips of this many rows of the grid (values of by): down a strip's column (by fastest),
# then the next column. Blocks of a GEMM that share a column share their B panel and those of a strip
# its A rows, so consecutive blocks on a thread (and the two threads' blocks at a time) reuse operands
# while they are in cache; bx fastest re-read all of B from memory for every row of blocks (2048^3 on one
# thread: 4-6% slower, benchmarks/NOTES-cpu.md). The order of independent blocks changes no result.
BLOCK_STRIP = 4


class HostPrinter(CPrinter):
    """Prints a host body: each launch is a loop over the grid, spread over OpenMP threads."""

    def _s_KernelCall(self, call: KernelCall) -> None:
        grid = [self.expr(g) for g in call.grid] + ["1"] * (3 - len(call.grid))
        args = [self.name(a) if isinstance(a, Buffer) else self.expr(a) for a in call.args]
        block = "(int32_t)(tc_i / tc_h), (int32_t)(tc_s * tc_strip + tc_i % tc_h), (int32_t)tc_z"
        call_args = ", ".join([*args, block, "tc_scratch", "&tc_report"])
        self.line("{")
        self.indent += 1
        self.line(f"const int64_t tc_g0 = {grid[0]}, tc_g1 = {grid[1]}, tc_g2 = {grid[2]};")
        self.line(f"const int64_t tc_strip = {BLOCK_STRIP};")
        self.line("const int64_t tc_blocks = tc_g0 * tc_g1 * tc_g2;")
        self.line("#pragma omp parallel if (tc_blocks > 1 && !tc_single_threaded)")
        self.line("{")
        self.indent += 1
        self.line(f"char* tc_scratch = tc_scratch_alloc({call.dynamic_smem});")
        self.line(f"const int tc_ready = tc_scratch != NULL || {call.dynamic_smem} == 0;")
        self.line("if (!tc_ready) __atomic_store_n(&tc_report.site, -1, __ATOMIC_RELAXED);")
        self.line("#pragma omp for schedule(static, 1)")
        self.line("for (int64_t tc_b = 0; tc_b < tc_blocks; ++tc_b) {")
        self.line("    const int64_t tc_z = tc_b / (tc_g0 * tc_g1), tc_r = tc_b % (tc_g0 * tc_g1);")
        self.line("    const int64_t tc_s = tc_r / (tc_strip * tc_g0), tc_i = tc_r % (tc_strip * tc_g0);")
        self.line("    const int64_t tc_left = tc_g1 - tc_s * tc_strip;")
        self.line("    const int64_t tc_h = tc_left < tc_strip ? tc_left : tc_strip;")
        self.line(f"    if (tc_ready) {call.symbol}({call_args});")
        self.line("}")
        self.line("free(tc_scratch);")
        self.indent -= 1
        self.line("}")
        self.indent -= 1
        self.line("}")
