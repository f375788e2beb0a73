"""Memory: `T.alloc_shared`, `T.alloc_fragment`, `T.alloc_local`, `T.alloc_var`, `T.alloc_global`."""

from __future__ import annotations

from tilecraft.ir import dtype as dt
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Expr, IRError, const_value, convert
from tilecraft.ir.visitor import free_vars
from tilecraft.language import builder


def _static_shape(shape, what: str) -> tuple:
    """The dims of an on-chip buffer: positive ints, or expressions of T.const symbols alone (names
    bound to such expressions, `block_Q = 128 // heads`, stand for their values), which are static once
    the call specializes the symbols."""
    shape = (shape,) if not isinstance(shape, (tuple, list)) else tuple(shape)
    b = builder.current(what)
    consts = {id(v) for v in b.consts}
    dims = []
    for s in shape:
        value = const_value(s)
        if isinstance(value, int) and value > 0:
            dims.append(convert(value))
            continue
        if isinstance(s, Expr) and value is None:
            (resolved,) = b.parser.without_lets((s,))
            runtime = [v for v in free_vars(resolved) if id(v) not in consts]
            if not runtime:
                dims.append(resolved)  # static once the call specializes its T.const symbols
                continue
            raise b.error(
                f"{what} needs a static positive shape, got {s}: {_runtime_names(runtime)} known only "
                "at run time",
                hint="on-chip buffers are sized at compile time; use T.const or a Python int, or a static "
                "upper bound of the size (and guard the accesses past the actual size)",
            )
        raise b.error(
            f"{what} needs a static positive shape, got {s}",
            hint="on-chip buffers are sized at compile time; use T.const or a Python int",
        )
    return tuple(dims)


def _runtime_names(variables) -> str:
    """`n is` / `m, n are`: the symbols that make a shape dynamic."""
    names = sorted({v.name for v in variables})
    return f"{', '.join(names)} {'is' if len(names) == 1 else 'are'}"


def _alloc(shape, dtype, scope: str, what: str) -> Buffer:
    # Outside `T.Kernel` too, as TileLang parses it (a function that only declares buffers prints); the
    # semantic check refuses such an allocation at lowering: on-chip memory belongs to a kernel's blocks.
    b = builder.current(what)
    buf = Buffer(f"buf{len(b.pending_allocations)}", _static_shape(shape, what), dt.as_dtype(dtype), scope,
                 tf32=dt.is_tfloat32(dtype))  # fmt: skip
    b.pending_allocations.append(buf)
    return buf


def alloc_shared(shape, dtype, scope: str = "shared.dyn") -> Buffer:
    """A tile in the block's shared memory."""
    if scope not in ("shared", "shared.dyn"):
        raise IRError(f"alloc_shared scope must be 'shared' or 'shared.dyn', got {scope!r}")
    return _alloc(shape, dtype, scope, "T.alloc_shared")


def alloc_fragment(shape, dtype, scope: str = "local.fragment") -> Buffer:
    """A tile distributed over the block's threads' registers (its layout is inferred)."""
    return _alloc(shape, dtype, "local.fragment", "T.alloc_fragment")


def alloc_local(shape, dtype, scope: str = "local") -> Buffer:
    """A small per-thread array."""
    return _alloc(shape, dtype, "local", "T.alloc_local")


def alloc_var(dtype, init=None, scope: str = "local.var"):
    """A mutable scalar: read it by name, update it with `x = ...` or `x += ...`."""
    buf = _alloc((1,), dtype, "local.var", "T.alloc_var")
    if init is not None:
        builder.current().inits[buf] = convert(init, buf.dtype)
    return buf


def alloc_global(shape, dtype, scope: str = "global") -> Buffer:
    """A global-memory scratch buffer, allocated afresh by every call of the kernel (TileLang's workspace).

    Called in the function body outside `T.Kernel`; the buffer becomes a hidden last parameter that the
    call allocates (uninitialized) on the device of its arrays, so kernels of one function can pass data
    through it. Its shape may use the function's symbolic dims.
    """
    from tilecraft.language.types import _dims

    b = builder.current("T.alloc_global")
    if scope != "global":
        raise b.error(f"T.alloc_global scope must be 'global', got {scope!r}")
    if b.kernels:
        raise b.error(
            "T.alloc_global is only valid outside `with T.Kernel(...)`",
            hint="allocate the workspace at the top of the function body, before the kernels that use it",
        )
    buf = Buffer(f"workspace{len(b.workspaces)}", b.parser.without_lets(_dims(shape)), dt.as_dtype(dtype),
                 tf32=dt.is_tfloat32(dtype))  # fmt: skip
    b.workspaces.append(buf)
    return buf
