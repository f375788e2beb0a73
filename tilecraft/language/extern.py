"""TVM's builtins for code the kernel does not write in T.*: `T.import_source`, `T.call_extern`,
`T.access_ptr`, and two that need no foreign code: `T.dp4a` and `T.alloc_buffer`.

- `T.import_source(code)`: C source text (device functions, inline PTX) put before the kernels of the
  device translation unit. Recorded on the function (attribute `IMPORT_SOURCE_ATTR`: one
  `(code, file, line, col)` per distinct text); a target whose code generator cannot compile it refuses
  the kernel at lowering, at the call's line (`check-target-support`).
- `T.call_extern(dtype, name, *args)` (also TVMScript's `T.call_extern(name, *args, dtype=...)`): a call
  of a function the imported source or the toolchain provides, as an expression of `dtype` or, written
  alone, a statement.
- `T.access_ptr(buf_or_element, access_type="r", extent=None, offset=0)` and `buf.access_ptr(mask,
  ptr_type="handle", content_lanes=1, offset=0, extent=None)`: the address of a thread's own array (or
  one of its elements), for an extern call's pointer arguments.
"""

from __future__ import annotations

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.language import builder

IMPORT_SOURCE_ATTR = "tilecraft.import_source"
CALL_EXTERN = "call_extern"
ACCESS_PTR = "access_ptr"
# Scopes an access pointer may address: a thread's own storage, whose accesses need no barrier.
POINTER_SCOPES = ("local", "local.var")
_MASKS = {1: "r", 2: "w", 3: "rw", "r": "r", "w": "w", "rw": "rw"}


def import_source(code) -> None:
    """Put C source `code` before the kernels of the device translation unit (None: nothing)."""
    if code is None:
        return
    b = builder.current("T.import_source")
    if not isinstance(code, str):
        raise b.error(f"T.import_source takes the source text (a str), got {type(code).__name__}")
    attrs = b.parser.func_attrs
    known = attrs.get(IMPORT_SOURCE_ATTR, ())
    if any(entry[0] == code for entry in known):
        return
    span = b.span
    where = (span.file, span.line, span.col) if span is not None else ("", 0, 0)
    attrs[IMPORT_SOURCE_ATTR] = (*known, (code, *where))


def imported_sources(func) -> tuple[tuple[str, str, int, int], ...]:
    """The `(code, file, line, col)` entries `T.import_source` recorded on `func`."""
    return tuple(func.attr(IMPORT_SOURCE_ATTR, ()) or ())


def call_extern(*args, dtype=None) -> E.Expr:
    """A call of the extern function `name`: `T.call_extern(dtype, name, *args)` or, as TVMScript
    forwards a keyword dtype, `T.call_extern(name, *args, dtype=dtype)`. `"handle"` / `"void"` (a call
    made for its effect) is typed int32 here."""
    if dtype is None:
        if not args:
            raise builder.error("T.call_extern needs a dtype and a function name")
        dtype, *args = args
    if not args or not isinstance(args[0], str) or isinstance(args[0], dt.DataType):
        raise builder.error("T.call_extern needs the function's name (a str) after the dtype",
                            hint='T.call_extern("float16", "my_func", x) or T.call_extern("my_func", x, dtype="float16")')  # fmt: skip
    name, *rest = args
    if not name.replace("_", "a").isalnum() or name[0].isdigit():
        raise builder.error(f"T.call_extern: {name!r} is not a C identifier")
    ty = dt.int32 if str(dtype) in ("handle", "void") else dt.as_dtype(dtype)
    values = tuple(E.StringImm(dt.int8, a) if isinstance(a, str) and not isinstance(a, dt.DataType) else a
                   for a in rest)  # fmt: skip
    return E.call(CALL_EXTERN, E.StringImm(dt.int8, name), *values, dtype=ty)


def access_ptr(base, access_type="r", *extents, offset=0, extent=None, **_ignored) -> E.Expr:
    """The address of `base` (a buffer: its first element; an element `buf[i]`: that element), moved on
    by `offset` elements, as an extern call's pointer argument. `access_type` ("r", "w", "rw", or TVM's
    mask 1, 2, 3) says what the callee does through it; `extent` (elements) is recorded, not checked."""
    if isinstance(base, Buffer):
        load = E.BufferLoad(base.dtype, base, tuple(E.const(0) for _ in base.shape))
    elif isinstance(base, E.BufferLoad):
        load = base
    else:
        raise builder.error(f"T.access_ptr takes a buffer or one of its elements, got {base!r}")
    buf = load.buffer
    mask = _MASKS.get(access_type)
    if mask is None:
        raise builder.error(f"T.access_ptr: access type {access_type!r} is not 'r', 'w' or 'rw' (1, 2, 3)")
    if buf.scope not in POINTER_SCOPES:
        raise builder.error(
            f"T.access_ptr of {buf.name} ({buf.scope}): tilecraft gives access pointers to a thread's own "
            "arrays (T.alloc_local, T.alloc_var) only, since it cannot see what an extern function does "
            "through a pointer to memory other threads share (where barriers would be needed)",
            hint="copy the data into a T.alloc_local array first and pass that array",
        )
    if offset is not None and not (isinstance(offset, int) and offset == 0):
        if buf.ndim != 1:
            raise builder.error("T.access_ptr: offset= is supported for one-dimensional arrays; index the element")
        load = E.BufferLoad(buf.dtype, buf, (E.add(load.indices[0], offset),))
    if extent is None:
        extent = extents[0] if extents else 1
    return E.call(ACCESS_PTR, load, E.StringImm(dt.int8, mask), E.convert(extent), dtype=dt.uint64)


def buffer_access_ptr(buf: Buffer, access_mask, ptr_type="handle", content_lanes=1, offset=0, extent=None):
    """TVM's `Buffer.access_ptr`."""
    if ptr_type != "handle" or content_lanes != 1:
        raise builder.error("access_ptr: ptr_type and content_lanes are not supported (the pointer has the "
                            "buffer's element type)")  # fmt: skip
    return access_ptr(buf, access_mask, offset=offset, extent=extent)


def pointer_target(e: E.Call) -> tuple[E.BufferLoad, str]:
    """The element an `access_ptr` call addresses, and its access type."""
    return e.args[0], e.args[1].value


def dp4a(a, b, c) -> S.Stmt:
    """TileLang's `T.dp4a(A, B, C)`: `C += A[0]*B[0] + ... + A[3]*B[3]`, where A and B address four
    consecutive 8-bit integers (an element `A_local[k]` and the three after it) and C an int32 element."""
    loads = []
    for x, what in ((a, "A"), (b, "B"), (c, "C")):
        if isinstance(x, Buffer):
            x = E.BufferLoad(x.dtype, x, tuple(E.const(0) for _ in x.shape))
        if not isinstance(x, E.BufferLoad):
            raise builder.error(f"T.dp4a: {what} must be a buffer or one of its elements, got {x!r}")
        loads.append(x)
    la, lb, lc = loads
    for x, what in ((la, "A"), (lb, "B")):
        if not (x.dtype.is_integer and x.dtype.bits == 8 and x.dtype.lanes == 1):
            raise builder.error(f"T.dp4a: {what} is {x.dtype}; dp4a multiplies int8 or uint8 values")
    if lc.dtype not in (dt.int32, dt.uint32):
        raise builder.error(f"T.dp4a: C is {lc.dtype}; dp4a accumulates into int32 (or uint32)")
    total: E.Expr = lc
    for k in range(4):
        terms = []
        for x in (la, lb):
            idx = (*x.indices[:-1], E.add(x.indices[-1], k))
            terms.append(E.cast(E.BufferLoad(x.dtype, x.buffer, idx), lc.dtype))
        total = E.add(total, E.mul(*terms))
    return S.BufferStore(lc.buffer, total, lc.indices, span=builder.current_span())


_BUFFER_SCOPES = {"": "global", "global": "global", "shared": "shared", "shared.dyn": "shared.dyn",
                  "local": "local", "local.fragment": "local.fragment", "local.var": "local.var"}  # fmt: skip


def alloc_buffer(shape, dtype="float32", data=None, strides=None, elem_offset=None, scope="", align=-1,
                 offset_factor=0, buffer_type="default", axis_separators=None) -> Buffer:
    """TVM's `T.alloc_buffer`, by scope: global (the default) is `T.alloc_global` (a workspace made
    outside `T.Kernel`), shared `T.alloc_shared`, local `T.alloc_local`, local.fragment
    `T.alloc_fragment`, local.var `T.alloc_var` (shape (1,))."""
    from tilecraft.language import alloc

    if data is not None or strides or elem_offset is not None or axis_separators:
        raise builder.error("T.alloc_buffer: data=, strides=, elem_offset= and axis_separators= are not "
                            "supported (declare views with T.Tensor(shape, dtype, A.data))")  # fmt: skip
    kind = _BUFFER_SCOPES.get(scope)
    if kind is None:
        raise builder.error(f"T.alloc_buffer: scope {scope!r} is not one of {', '.join(repr(s) for s in _BUFFER_SCOPES)}")
    if kind == "global":
        return alloc.alloc_global(shape, dtype)
    if kind in ("shared", "shared.dyn"):
        return alloc.alloc_shared(shape, dtype, kind)
    if kind == "local":
        return alloc.alloc_local(shape, dtype)
    if kind == "local.fragment":
        return alloc.alloc_fragment(shape, dtype)
    return alloc.alloc_var(dtype)
