"""Atomics for targets whose pointers carry an address space (a global and a local or threadgroup one): their headers define each
helper once per space, so a call names the space and takes the buffer and an element index rather than
a pointer (a generic pointer would lose the space)."""

from __future__ import annotations

from collections.abc import Mapping

from tilecraft.codegen.c_family import ATOMIC_OP, CFamilyPrinter
from tilecraft.ir.lowered import AtomicUpdate


def print_space_atomic(
    printer: CFamilyPrinter, s: AtomicUpdate, suffixes: Mapping[str, str], space: str | None, index_type: str
) -> None:
    """`tc_atomic_rmw_<type>_<space>(buf, index, value, op)` for floats (op as ATOMIC_OP numbers it),
    `tc_atomic_<kind>_<type>_<space>(buf, index, value)` for integers. `space` is "g" (global) or "l"
    (shared), None for a buffer in neither; `suffixes` the element types the header has helpers for."""
    buf = s.buffer
    suffix = suffixes.get(buf.dtype.name)
    if suffix is None or space is None:
        printer.fail(f"atomic {s.kind} on a {buf.scope} buffer of {buf.dtype} is not supported on "
                     f"{printer.target_name}", "use a float32 or int32 buffer in global or shared memory")  # fmt: skip
    where = f"{printer.name(buf)}, ({index_type})({printer.offset(buf, s.indices)})"
    value = printer.expr(s.value)
    if buf.dtype.is_float:
        printer.line(f"tc_atomic_rmw_{suffix}_{space}({where}, {value}, {ATOMIC_OP[s.kind]});")
    else:
        printer.line(f"tc_atomic_{s.kind}_{suffix}_{space}({where}, {value});")
