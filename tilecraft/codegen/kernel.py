"""The frame of a device kernel's source, shared by the C-family backends: its parameter list, the block
and thread indices read once at its top, its body, and the module of kernels after the device header.

A backend composes these in its own order and supplies only its spelling: the pointer qualifiers of a
buffer parameter, the expressions that read a block's and a thread's index, the function head.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tilecraft.backend.codegen import DeviceCode
from tilecraft.codegen.c_family import CFamilyPrinter, storage_type, value_type
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Var
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import walk
from tilecraft.runtime.artifact import KernelInfo


def written_buffers(func: PrimFunc, *writers: type) -> set[int]:
    """The ids of the buffers the kernel stores into: BufferStore and AtomicUpdate targets, and the
    `dst` of the backend's own node types that write (`writers`)."""
    written = set()
    for n in walk(func.body):
        if isinstance(n, (S.BufferStore, AtomicUpdate)):
            written.add(id(n.buffer))
        elif isinstance(n, E.AtomicValue) and n.kind != "load":
            written.add(id(n.target.buffer))
        elif writers and isinstance(n, writers):
            written.add(id(n.dst))
    return written


def pointer_type(buf: Buffer, written: set[int]) -> str:
    """`T*` for a buffer the kernel writes, `const T*` for one it only reads (T: the storage type)."""
    return ("" if id(buf) in written else "const ") + storage_type(buf.dtype) + "*"


def param_decl(
    printer: CFamilyPrinter, p: Buffer | Var, written: set[int], buffer_decl: Callable[[Buffer, str], str]
) -> str:
    """A parameter's declaration: a buffer as `buffer_decl(buf, pointer type)`, a scalar by value."""
    if isinstance(p, Buffer):
        return buffer_decl(p, pointer_type(p, written))
    return f"{value_type(p.dtype)} {printer.name(p)}"


def bind_indices(
    printer: CFamilyPrinter,
    func: PrimFunc,
    block_index: Callable[[int], str],
    thread_index: Callable[[int], str] | None = None,
) -> None:
    """Read each block index (`block_index(axis)`) and thread index once into a const int32_t, and mark
    them and the symbolic dims non-negative (they index, so division by them needs no floor fix-up)."""
    launch: S.KernelLaunch = func.body
    threads = launch.thread_vars if thread_index is not None else ()
    printer.mark_nonneg(*launch.block_vars, *threads, *func.symbolic_dims)
    for k, var in enumerate(launch.block_vars):
        printer.line(f"const int32_t {printer.name(var)} = {block_index(k)};")
    for k, var in enumerate(threads):
        printer.line(f"const int32_t {printer.name(var)} = {thread_index(k)};")


def function_text(head: str, printer: CFamilyPrinter) -> str:
    """A function of `head` whose body is what `printer` wrote."""
    return f"{head} {{\n{printer.text()}\n}}\n"


def device_code(
    mod: IRModule, fmt: str, parts: Iterable[str], kernels: Iterable[KernelInfo], buffer_alignment: int = 1
) -> DeviceCode:
    """One translation unit of `parts` (the header, the kernels, ...) in format `fmt`, with an entry
    symbol per device function of `mod` and its launch record."""
    return DeviceCode(
        sources={fmt: "\n".join(parts)},
        entry_symbols=tuple(f.name for f in mod.functions),
        kernels=tuple(kernels),
        buffer_alignment=buffer_alignment,
    )
