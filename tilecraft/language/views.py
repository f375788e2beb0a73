"""Views: `T.Tensor(shape, dtype, A.data)` in a kernel body, another shape over a global tensor's memory.

The view is a global Buffer whose `base` is `A`: every access through it addresses `A`'s element at
the same row-major offset (the `lower-buffer-views` pass rewrites them so), and tile operations on it
keep its own shape's edges. TileLang's convolution examples flatten the weights and the output so.
"""

from __future__ import annotations

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.buffer import Buffer, BufferData, element_count, holds_more
from tilecraft.ir.visitor import free_vars, walk
from tilecraft.language import builder

ON_CHIP_HINT = (
    "a view aliases global memory only; for an on-chip tile, allocate it in the shape you need "
    "(T.alloc_shared / T.alloc_fragment) and T.copy into it, or index the tile directly"
)


def view(dims: tuple[E.Expr, ...], dtype, data) -> Buffer:
    """The view of `data` (`A.data`, A a compact global tensor) as a row-major tensor of shape `dims`."""
    b = builder.current("T.Tensor(shape, dtype, A.data)")
    if not isinstance(data, BufferData):
        raise b.error(
            f"the third argument of T.Tensor is the memory of a tensor, `A.data`; got {type(data).__name__}",
            hint="write T.Tensor(shape, dtype, A.data) with A a kernel parameter or a T.empty output",
        )
    base, tf32, dtype = data.buffer, dt.is_tfloat32(dtype), dt.as_dtype(dtype)
    _check_base(b, base)
    if dtype != base.dtype:
        raise b.error(
            f"the view has dtype {dtype} but {base.name} holds {base.dtype}; tilecraft does not reinterpret "
            "memory as another dtype (TileLang does)",
            hint=f"declare the view with {base.name}'s dtype, {base.dtype}, and convert values with T.cast",
        )
    _check_dims(b, dims)
    dims = b.parser.without_lets(dims)
    _check_size(b, dims, base)
    root = base.base if base.base is not None else base
    buf = Buffer(f"{base.name}_view", dims, dtype, base=root, tf32=tf32, span=b.span)
    b.unnamed_views.append(buf)
    return buf


def _check_base(b: builder.Builder, base: Buffer) -> None:
    if base.scope != "global":
        raise b.error(
            f"{base.name} is a {base.scope} buffer; views of shared, fragment and local buffers are not "
            "supported (only of global tensors: kernel parameters, T.empty outputs, T.alloc_global)",
            hint=ON_CHIP_HINT,
        )
    if base.strides:
        raise b.error(
            f"{base.name} has explicit strides, so its memory is not one row-major block that a view "
            "could reshape",
            hint=f"view a compact tensor: declare {base.name} with T.Tensor(shape, dtype)",
        )


def _check_dims(b: builder.Builder, dims: tuple[E.Expr, ...]) -> None:
    """A view's shape holds for the whole function: it may not use a value bound inside the kernel."""
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


def _check_size(b: builder.Builder, dims: tuple[E.Expr, ...], base: Buffer) -> None:
    """The view must fit in its base: refused when the sizes are known, or provably larger when not."""
    if not holds_more(dims, base.shape):
        return
    raise b.error(
        f"the view {_shape_text(dims)} holds {element_count(dims)} elements but {base.name} "
        f"{_shape_text(base.shape)} holds {element_count(base.shape)}",
        hint=f"a view covers at most the elements of {base.name}; make its shape smaller",
    )


def _shape_text(dims) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
