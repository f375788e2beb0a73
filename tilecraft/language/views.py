"""Views: another shape, or dtype, over a buffer's memory.

`T.Tensor(shape, dtype, A.data)`, `T.reshape(A, shape)` and `T.view(A, shape, dtype=...)` in a kernel
body make a view: a Buffer whose `base` is `A`, in `A`'s scope (a global tensor, a shared tile, a
fragment or a T.alloc_local array). Every access through it addresses `A`'s element at the same
row-major offset (the `lower-buffer-views` pass rewrites them so; fragments' views share their base's
registers, see tilecraft/layout/reshape.py), and tile operations on it keep its own shape's edges.
TileLang's convolution examples flatten the weights and the output so; its reductions reshape a
fragment to reduce groups of a row.

A view of another dtype reads the base's bytes as its own elements (little-endian, as every target
is): a bfloat16 view of a float32 tile has twice its elements per row. Fragments keep their dtype
(each thread's registers hold elements of one dtype), and packed 4-bit data has no view.
"""

from __future__ import annotations

from tilecraft.errors import ParseAssertionError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.buffer import VIEW_SCOPES, Buffer, BufferData, element_count, holds_more, same_size
from tilecraft.ir.visitor import free_vars, walk
from tilecraft.language import builder

ON_CHIP = ("shared", "shared.dyn", "local", "local.fragment")


def tensor_view(dims: tuple[E.Expr, ...], dtype, data) -> Buffer:
    """`T.Tensor(shape, dtype, A.data)`: `A`'s memory as a row-major tensor of shape `dims` (at most
    `A`'s bytes)."""
    b = builder.current("T.Tensor(shape, dtype, A.data)")
    if not isinstance(data, BufferData):
        raise b.error(
            f"the third argument of T.Tensor is the memory of a tensor, `A.data`; got {type(data).__name__}",
            hint="write T.Tensor(shape, dtype, A.data) with A a kernel parameter, a T.empty output or a tile",
        )
    return _make_view(b, data.buffer, dims, dtype, exact=False, what="T.Tensor(shape, dtype, A.data)")


def reshape(src: Buffer, shape) -> Buffer:
    """`T.reshape(A, shape)`: the elements of `A` (a tensor, shared tile, fragment or local array) in
    another shape with as many elements, row-major; no data moves."""
    from tilecraft.language.types import _dims

    b = builder.current("T.reshape")
    _require_buffer(b, src, "T.reshape")
    return _make_view(b, src, _dims(shape), src.declared_dtype, exact=True, what="T.reshape")


def view(src: Buffer, shape=None, dtype=None) -> Buffer:
    """`T.view(A, shape=None, dtype=None)`: `A`'s memory as `shape` (default: A's) elements of `dtype`
    (default: A's), exactly as many bytes as `A`; no data moves."""
    from tilecraft.language.types import _dims

    b = builder.current("T.view")
    _require_buffer(b, src, "T.view")
    dims = src.shape if shape is None else _dims(shape)
    return _make_view(b, src, dims, src.declared_dtype if dtype is None else dtype, exact=True, what="T.view")


def _require_buffer(b: builder.Builder, src, what: str) -> None:
    if not isinstance(src, Buffer):
        raise b.error(f"{what} takes a buffer (a tensor, a tile or a local array), got {type(src).__name__}",
                      hint=f"write {what}(A, shape) with A a kernel parameter or an allocation")  # fmt: skip


def _make_view(b: builder.Builder, base: Buffer, dims, dtype, exact: bool, what: str) -> Buffer:
    tf32, dtype = dt.is_tfloat32(dtype), dt.as_dtype(dtype)
    _check_base(b, base, what)
    root = base.base if base.base is not None else base
    if dtype != root.dtype:
        _check_dtype(b, root, dtype)
    if root.scope in ON_CHIP:
        from tilecraft.language.alloc import _static_shape

        dims = _static_shape(dims, what)
    else:
        _check_dims(b, dims)
        dims = b.parser.without_lets(dims)
    _check_size(b, dims, dtype, root, exact, what)
    buf = Buffer(f"{base.name}_view", dims, dtype, root.scope, base=root, tf32=tf32, span=b.span)
    b.unnamed_views.append(buf)
    return buf


def _check_base(b: builder.Builder, base: Buffer, what: str) -> None:
    if base.scope not in VIEW_SCOPES:
        raise b.error(
            f"{base.name} is a {base.scope} buffer, which has no views ({what} views global tensors, "
            "shared tiles, fragments and T.alloc_local arrays)",
            hint=f"read {base.name} into a T.alloc_local array and view that",
        )
    if base.strides:
        raise b.error(
            f"{base.name} has explicit strides, so its memory is not one row-major block that a view "
            "could reshape",
            hint=f"view a compact tensor: declare {base.name} with T.Tensor(shape, dtype)",
        )


def _check_dtype(b: builder.Builder, base: Buffer, dtype: dt.DataType) -> None:
    """A view of another dtype reads whole bytes of a scalar buffer that is not a fragment."""
    if base.scope == "local.fragment":
        raise b.error(
            f"a view of fragment {base.name} keeps its dtype {base.dtype} (got {dtype}): a fragment's "
            "elements are spread over the threads' registers, one dtype at a time",
            hint=f"T.copy {base.name} into a shared tile and view that, or convert values with T.cast or "
            "T.reinterpret element by element",
        )
    for d in (dtype, base.dtype):
        if d.lanes != 1 or d.is_packed or d.bits % 8:
            raise b.error(
                f"a view of {base.name} ({base.dtype}) as {dtype}: views change the dtype between scalar "
                f"dtypes of whole bytes only, and {d} is not one",
                hint="view the data with a dtype of 1, 2, 4 or 8 bytes",
            )


def _check_dims(b: builder.Builder, dims: tuple[E.Expr, ...]) -> None:
    """A global view's shape holds for the whole function: it may not use a value bound inside the kernel."""
    inner = b.parser.inner_vars()
    for dim in dims:
        if any(isinstance(n, E.BufferLoad) for n in walk(dim)):
            raise b.error(
                f"the view's shape {dim} reads a buffer; a view's shape is known before the kernel runs",
                hint="size the view with Python ints, parameters, symbolic dims or T.const symbols",
            )
        for v in free_vars(dim):
            if id(v) in inner:
                raise b.error(
                    f"the view's shape uses {v.name}, which is bound inside the kernel (a block or thread "
                    "index, a loop variable or a name assigned in the kernel)",
                    hint="a view's shape may use Python ints, the kernel's parameters, symbolic dims and "
                    "T.const symbols, and names assigned to them before T.Kernel",
                )


def _check_size(b: builder.Builder, dims, dtype: dt.DataType, base: Buffer, exact: bool, what: str) -> None:
    """T.reshape and T.view cover their base's bytes exactly (TileLang asserts it); a T.Tensor view at
    most: refused when the sizes are known, or provably larger when not."""
    shape, base_shape = _in_bytes(dims, dtype), _in_bytes(base.shape, base.dtype)
    if exact and not same_size(shape, base_shape):
        raise ParseAssertionError(
            f"{what} of {base.name} {_shape_text(base.shape)} as {_shape_text(dims)}: the view holds "
            f"{_count_text(dims, dtype, base.dtype)} but {base.name} holds {_count_text(base.shape, base.dtype, dtype)}",
            b.span,
            "a reshape or view keeps the number of elements (of bytes, when the dtype changes); "
            "T.Tensor(shape, dtype, A.data) views a leading part of A",
        )
    if not exact and holds_more(shape, base_shape):
        raise b.error(
            f"the view {_shape_text(dims)} holds {_count_text(dims, dtype, base.dtype)} but {base.name} "
            f"{_shape_text(base.shape)} holds {_count_text(base.shape, base.dtype, dtype)}",
            hint=f"a view covers at most the elements of {base.name}; make its shape smaller",
        )


def _in_bytes(dims: tuple[E.Expr, ...], dtype: dt.DataType) -> tuple[E.Expr, ...]:
    """`dims` with one more of the dtype's size: its element count is the size in bytes."""
    index = dims[0].dtype if dims else E.dt.int32
    return (*dims, E.const(max(1, dtype.bits // 8), index))


def _count_text(dims, dtype: dt.DataType, other: dt.DataType) -> str:
    """`N elements`, and their dtype where the view changes it."""
    count = f"{element_count(tuple(dims))} elements"
    return count if dtype == other else f"{count} of {dtype}"


def _shape_text(dims) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
