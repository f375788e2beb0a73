"""WGSL codegen: one module holding a `@compute` entry point per device kernel, and their launch metadata.

Format `wgsl-source`, with the bindings and uniform block of `tilecraft.execution.wgpu.abi`: kernel k's
uniform block `tc_args<k>` (the logical grid, then its scalars) and one storage buffer per buffer
parameter, `var<storage, read>` unless the kernel writes it, `array<atomic<..>>` when it updates it
atomically. Blocks are rebuilt from the linear workgroup index, so the launcher may fold a grid past
the device's per-dim limit; the extra workgroups return at once. Workgroup buffers share one array of
u32 words at the byte offsets the shared storage planner gives (a buffer's bytes are reused once its
scope ends; 8- and 16-bit elements packed), and its size is checked against the adapter's
`workgroup_memory`, which drivers do not enforce. Pipelines
are created by the `wgpu` execution backend, so there is no compile step here.
"""

from __future__ import annotations

import re

from tilecraft.backend.codegen import DeviceCode
from tilecraft.execution.wgpu.abi import SCALAR_TYPES, WGSL_SOURCE, binding_bases, uniform_layout
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import walk
from tilecraft.transform.storage import StoragePlan, buffer_offsets, launch_info, plan_storage
from tilecraft.transform.target_support import check_planned_memory
from tilecraft.webgpu.printer import SHARED, WgslPrinter
from tilecraft.webgpu.types import storage_type, value_type

SOURCE_FORMAT = WGSL_SOURCE
BLOCK_AXES = ("x", "y", "z")


def _atomic_kinds(func: PrimFunc) -> dict[int, set[str]]:
    kinds: dict[int, set[str]] = {}
    for n in walk(func.body):
        if isinstance(n, AtomicUpdate):
            kinds.setdefault(id(n.buffer), set()).add(n.kind)
    return kinds


def _atomic_type(buf: Buffer, kinds: set[str], target) -> str:
    """The atomic element type of a buffer updated atomically: float32 additions use atomic<f32> where
    the adapter has shader-float32-atomic, every other float32 update a compare-exchange on u32."""
    if buf.dtype.name == "float32":
        return "f32" if kinds == {"add"} and target.attr("float32_atomics") else "u32"
    return value_type(buf.dtype)


def _written(func: PrimFunc) -> set[int]:
    return {id(n.buffer) for n in walk(func.body) if isinstance(n, (S.BufferStore, AtomicUpdate))}


class KernelSource:
    """The module-scope declarations and the entry point of kernel `index` of a module."""

    def __init__(self, func: PrimFunc, index: int, binding: int, target) -> None:
        self.func = func
        self.index = index
        self.binding = binding
        self.target = target
        self.f16 = bool(target.attr("f16")) if target is not None else False
        self.buffers = [p for p in func.params if isinstance(p, Buffer)]
        self.scalars = [p for p in func.params if not isinstance(p, Buffer)]

    def text(self) -> tuple[str, set[str]]:
        """(the kernel's WGSL, the helper functions it calls)."""
        launch: S.KernelLaunch = self.func.body
        plan = plan_storage(launch.body, SHARED, align=4)
        check_planned_memory(self.func.name, plan.peak, launch.span, self.target, " after lowering (its shared "
                             "buffers and the scratch of cross-thread reductions)")  # fmt: skip
        k = self.index
        atomic_kinds = _atomic_kinds(self.func)
        atomics = {id(b): _atomic_type(b, atomic_kinds[id(b)], self.target) for b in self.buffers
                   if id(b) in atomic_kinds}  # fmt: skip
        names = self._global_names()
        packed = any(isinstance(n, S.Allocate) and n.buffer.scope in SHARED and n.buffer.dtype.bytes < 4
                     for n in walk(launch.body))  # fmt: skip
        printer = WgslPrinter(self.f16, names, atomics, f"tc_wg{k}", _arena_offsets(launch.body, plan), packed)
        decls = self._uniform_block() + self._storage_buffers(names, atomics)
        if plan.peak:
            word = "atomic<u32>" if packed else "u32"
            decls.append(f"var<workgroup> tc_wg{k}: array<{word}, {(plan.peak + 3) // 4}>;")
        self._prologue(printer, launch)
        printer.stmt(launch.body)
        size = ", ".join(str(t) for t in launch.threads)
        head = (f"@compute @workgroup_size({size})\nfn {self.func.name}(@builtin(workgroup_id) tc_wid: vec3<u32>, "
                "@builtin(num_workgroups) tc_nwg: vec3<u32>, @builtin(local_invocation_id) tc_lid: vec3<u32>, "
                "@builtin(local_invocation_index) tc_lix: u32)")  # fmt: skip
        return "\n".join(decls) + f"\n{head} {{\n{printer.text()}\n}}\n", printer.helpers

    def _global_names(self) -> dict[int, str]:
        names: dict[int, str] = {}
        for j, buf in enumerate(self.buffers):
            base = re.sub(r"\W", "_", buf.name)
            names[id(buf)] = f"tc_{self.index}_{j}_{base}"
        return names

    def _uniform_block(self) -> list[str]:
        fields, _ = uniform_layout([p.dtype.name for p in self.scalars])
        members = ", ".join(f"{f.name}: {f.wgsl_type}" for f in fields)
        k = self.index
        return [f"struct tc_args{k}_t {{ {members} }}",
                f"@group(0) @binding({self.binding}) var<uniform> tc_args{k}: tc_args{k}_t;"]  # fmt: skip

    def _storage_buffers(self, names: dict[int, str], atomics: dict[int, str]) -> list[str]:
        written = _written(self.func)
        out = []
        for j, buf in enumerate(self.buffers):
            access = "read_write" if id(buf) in written else "read"
            element = storage_type(buf.dtype, "global", self.f16)
            if id(buf) in atomics:
                element = f"atomic<{atomics[id(buf)]}>"
            out.append(f"@group(0) @binding({self.binding + 1 + j}) var<storage, {access}> {names[id(buf)]}: "
                       f"array<{element}>;")  # fmt: skip
        return out

    def _prologue(self, printer: WgslPrinter, launch: S.KernelLaunch) -> None:
        k = self.index
        printer.mark_nonneg(*launch.block_vars, *launch.thread_vars, *self.func.symbolic_dims)
        printer.line("let tc_linear: u32 = tc_wid.x + tc_nwg.x * (tc_wid.y + tc_nwg.y * tc_wid.z);")
        printer.line(f"if (tc_linear >= tc_args{k}.gx * tc_args{k}.gy * tc_args{k}.gz) {{ return; }}")
        index = {0: f"tc_linear % tc_args{k}.gx", 1: f"(tc_linear / tc_args{k}.gx) % tc_args{k}.gy",
                 2: f"tc_linear / (tc_args{k}.gx * tc_args{k}.gy)"}  # fmt: skip
        for axis, var in enumerate(launch.block_vars):
            printer.line(f"let {printer.name(var)}: {value_type(var.dtype)} = {value_type(var.dtype)}({index[axis]});")
        for axis, var in enumerate(launch.thread_vars):
            printer.line(f"let {printer.name(var)}: {value_type(var.dtype)} = "
                         f"{value_type(var.dtype)}(tc_lid.{BLOCK_AXES[axis]});")  # fmt: skip
        for j, var in enumerate(self.scalars):
            field = f"tc_args{k}.p{j}"
            wgsl = value_type(var.dtype)
            value = f"({field} != 0u)" if var.dtype.is_bool else field
            if not var.dtype.is_bool and SCALAR_TYPES[var.dtype.name] != wgsl:
                value = f"{wgsl}({field})"
            printer.line(f"let {printer.name(var)}: {wgsl} = {value};")


def device_source(mod: IRModule, ctx) -> DeviceCode:
    target = ctx.target
    funcs = list(mod.functions)
    bases = binding_bases([sum(isinstance(p, Buffer) for p in f.params) for f in funcs])
    parts, used = [], set()
    for k, (f, base) in enumerate(zip(funcs, bases)):
        text, helpers = KernelSource(f, k, base, target).text()
        parts.append(text)
        used |= helpers
    from tilecraft.webgpu.helpers import SOURCES

    head = ["enable f16;"] if target is not None and target.attr("f16") else []
    head += [SOURCES[name] for name in sorted(used)]
    return DeviceCode(
        sources={SOURCE_FORMAT: "\n".join(head + parts)},
        entry_symbols=tuple(f.name for f in funcs),
        kernels=tuple(launch_info(f) for f in funcs),
    )


def _arena_offsets(body: S.Stmt, plan: StoragePlan) -> dict[int, int]:
    """Each workgroup buffer's byte offset, keyed by the buffer's id (the plan lists them in allocation
    order). The webgpu pipeline has no storage pass: this plan, made here once, is the only one."""
    buffers = [n.buffer for n in walk(body) if isinstance(n, S.Allocate) and n.buffer.scope in plan.scopes]
    return buffer_offsets(buffers, plan.placements)
