"""TileLang's raw pointers: a `T.ptr` parameter (an address the caller passes: an int, or an array whose
data address is taken) and `T.make_tensor(ptr, shape, dtype)`, a tensor of `shape` at an address: a `T.ptr`
parameter (anywhere), or inside a kernel any integer value, such as an element of a table of addresses
(`T.Tensor([n], T.ptr)`, int64). The tensor is global memory the kernel reads and writes as it does a
tensor parameter's; its address is taken once, where T.make_tensor is bound to a name, as TileLang binds it.
"""

from __future__ import annotations

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import POINTER_PARAMS_ATTR
from tilecraft.language import builder

__all__ = ["POINTER_PARAMS_ATTR", "make_tensor", "make_tensor_from_addr", "ptr"]

ptr = dt.ptr


def make_tensor(pointer, shape, dtype="float32", strides=None) -> Buffer:
    """A global tensor of `shape` and `dtype` whose element 0 is at address `pointer` (row-major, or
    `strides` in elements)."""
    b = builder.current("T.make_tensor")
    address = E.convert(pointer)
    if not (address.dtype.is_integer and address.dtype.bits == 64 and address.dtype.lanes == 1):
        raise b.error(f"T.make_tensor takes an address (a T.ptr parameter or a 64-bit integer), got {address.dtype}",
                      hint="pass the pointer parameter, or an element of a T.Tensor([n], T.ptr) table")  # fmt: skip
    if not b.kernels and not _is_pointer_param(b, address):
        raise b.error("T.make_tensor outside T.Kernel takes a T.ptr parameter as its address",
                      hint="make tensors from addresses read in the kernel inside its T.Kernel block")  # fmt: skip
    dims = tuple(E.convert(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if any(not d.dtype.is_integer for d in dims):
        raise b.error(f"T.make_tensor: the shape {shape} must be integers")
    step = tuple(E.convert(s) for s in strides) if strides is not None else ()
    if step and len(step) != len(dims):
        raise b.error(f"T.make_tensor: {len(step)} strides for {len(dims)} dims")
    return Buffer("tensor", dims, dt.as_dtype(dtype), "global", step, address=address, span=b.span)


def make_tensor_from_addr(
    addr, shape, dtype="float32", strides=None, storage_scope: str = "global"
) -> Buffer:
    """TileLang's spelling of T.make_tensor for an address held as an integer."""
    if storage_scope != "global":
        raise builder.error(
            f"T.make_tensor_from_addr: tensors at an address are global memory, not {storage_scope!r}"
        )
    return make_tensor(addr, shape, dtype, strides)


def _is_pointer_param(b: builder.Builder, address: E.Expr) -> bool:
    return isinstance(address, E.Var) and any(v is address for v in b.pointer_params)
