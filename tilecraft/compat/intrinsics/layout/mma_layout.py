"""TileLang's `tilelang.cuda.intrinsics.layout.mma_layout`: where each thread's registers of an
`mma.sync` / `ldmatrix` fragment sit in the 16-row tile, and the shared-memory swizzle.

The functions are index arithmetic and take Python ints or tilecraft expressions alike, with TileLang's
names and values (PTX ISA, "Matrix Fragments for mma.m16n8k16 / m16n8k32"). `thread_id` is the lane in
the warp, `local_id` the register index; `..._layout_sr_a` / `_sr_b` map a (spatial, reduction) element
of the A or B tile to (lane, register). tilecraft's emitter lifts the macros to tile operations, so it
does not need them itself; they serve programs that compute with them (`make_swizzle_layout`).
"""

from __future__ import annotations

from tilecraft.compat.intrinsics._refusing import refusing
from tilecraft.ir.dtype import DataType, as_dtype, int32
from tilecraft.ir.expr import Var
from tilecraft.layout.layout import Layout

# ldmatrix: (lane, register) -> (row, col) of the 16-row tile the lanes' addresses point into


def ldmatrix_32x4_to_shared_16x8_layout_a(thread_id, local_id):
    return thread_id % 16, (thread_id // 16) * 4 + local_id % 4


def ldmatrix_32x4_to_shared_16x8_layout_b(thread_id, local_id):
    return (thread_id // 16) * 8 + (thread_id % 8), ((thread_id % 16) // 8) * 4 + local_id % 4


def ldmatrix_32x8_to_shared_16x16_layout(thread_id, local_id):
    return thread_id % 16, 8 * (thread_id // 16) + local_id % 8


def ldmatrix_trans_32x8_to_shared_16x16_layout(thread_id, local_id):
    return 8 * (thread_id // 16) + (thread_id % 8), 8 * ((thread_id % 16) // 8) + local_id % 8


def ldmatrix_32x16_to_shared_16x32_layout_a(thread_id, local_id):
    return thread_id % 16, local_id + (thread_id // 16) * 16


def ldmatrix_32x16_to_shared_16x32_layout_b(thread_id, local_id):
    return (thread_id // 16) * 8 + (thread_id % 8), local_id + 16 * ((thread_id % 16) // 8)


# the mma accumulator: (lane, register) -> (row, col)


def mma_store_32x8_to_shared_16x16_layout(thread_id, local_id):
    return 8 * (local_id % 4 // 2) + (thread_id // 4), 8 * (local_id // 4) + (thread_id % 4) * 2 + (
        local_id % 2
    )


mma_32x8_to_shared_16x16_layout = mma_store_32x8_to_shared_16x16_layout


def mma_store_32x2_to_shared_8x8_layout_fp64(thread_id, local_id):
    return thread_id // 4, (thread_id % 4) * 2 + local_id


# the mma operands without ldmatrix: (lane, register) -> (row, col)


def mma_load_a_32x4_to_shared_16x8_layout(thread_id, local_id):
    return 8 * (local_id % 2) + (thread_id // 4), 4 * (local_id // 2) + (thread_id % 4)


def mma_load_b_32x4_to_shared_16x8_layout(thread_id, local_id):
    return 8 * (local_id // 2) + (thread_id // 4), 4 * (local_id % 2) + (thread_id % 4)


def mma_load_a_32x8_to_shared_16x16_layout(thread_id, local_id):
    """a0..a7 of m16n8k16: rows groupID (+8 for a2, a3, a6, a7), cols 2 * threadID_in_group (+1, +8)."""
    return (thread_id // 4) + 8 * (local_id % 4 // 2), (thread_id % 4) * 2 + (local_id % 2) + 8 * (
        local_id // 4
    )


def mma_load_b_32x8_to_shared_16x16_layout(thread_id, local_id):
    row = (thread_id // 4) + 8 * (local_id // 4)
    col = (thread_id % 4) * 2 + ((local_id % 4) % 2) + ((local_id % 4) // 2) * 8
    return row, col


def mma_load_a_32x16_to_shared_16x32_layout(thread_id, local_id):
    return 8 * (local_id % 8 // 4) + (thread_id // 4), 16 * (local_id // 8) + (thread_id % 4) * 4 + (
        local_id % 4
    )


def mma_load_b_32x16_to_shared_16x32_layout(thread_id, local_id):
    return 8 * (local_id // 8) + (thread_id // 4), 16 * (local_id % 8 // 4) + (thread_id % 4) * 4 + (
        local_id % 4
    )


# the mma operands: (spatial, reduction) element of the tile -> (lane, register)


def shared_16x8_to_mma_a_32x4_layout(i, j):
    return 4 * (i % 8) + (j % 4), 2 * (j // 4) + (i // 8)


def shared_16x8_to_mma_b_32x4_layout(i, j):
    return 4 * (i % 8) + (j % 4), 2 * (i // 8) + (j // 4)


def shared_16x16_to_mma_a_32x8_layout(i, j):
    return 4 * (i % 8) + (j % 8) // 2, 4 * (j // 8) + (i // 8) * 2 + (j % 2)


def shared_16x16_to_mma_b_32x8_layout(i, j):
    return 4 * (i % 8) + (j % 8) // 2, 4 * (i // 8) + (j // 8) * 2 + (j % 2)


def shared_16x32_to_mma_a_32x16_layout(i, j):
    return 4 * (i % 8) + (j % 16) // 4, 8 * (j // 16) + (i // 8) * 4 + j % 4


def shared_16x32_to_mma_b_32x16_layout(i, j):
    return 4 * (i % 8) + (j % 16) // 4, 8 * (i // 8) + (j // 16) * 4 + j % 4


def shared_16x8_to_mma_a_32x4_layout_trans(i, j):
    return shared_16x8_to_mma_a_32x4_layout(j, i)


def shared_16x8_to_mma_b_32x4_layout_trans(i, j):
    return shared_16x8_to_mma_b_32x4_layout(j, i)


def shared_16x16_to_mma_a_32x8_layout_trans(i, j):
    return shared_16x16_to_mma_a_32x8_layout(j, i)


def shared_16x16_to_mma_b_32x8_layout_trans(i, j):
    return shared_16x16_to_mma_b_32x8_layout(j, i)


def shared_32x16_to_mma_a_32x16_layout_trans(i, j):
    return shared_16x32_to_mma_a_32x16_layout(j, i)


def shared_32x16_to_mma_b_32x16_layout_trans(i, j):
    return shared_16x32_to_mma_b_32x16_layout(j, i)


shared_16x8_to_mma_32x4_layout_sr_a = shared_16x8_to_mma_a_32x4_layout
shared_16x8_to_mma_32x4_layout_sr_b = shared_16x8_to_mma_b_32x4_layout
shared_16x8_to_mma_32x4_layout_rs_a = shared_16x8_to_mma_a_32x4_layout_trans
shared_16x8_to_mma_32x4_layout_rs_b = shared_16x8_to_mma_b_32x4_layout_trans
shared_16x16_to_mma_32x8_layout_sr_a = shared_16x16_to_mma_a_32x8_layout
shared_16x16_to_mma_32x8_layout_sr_b = shared_16x16_to_mma_b_32x8_layout
shared_16x16_to_mma_32x8_layout_rs_a = shared_16x16_to_mma_a_32x8_layout_trans
shared_16x16_to_mma_32x8_layout_rs_b = shared_16x16_to_mma_b_32x8_layout_trans
shared_16x32_to_mma_32x16_layout_sr_a = shared_16x32_to_mma_a_32x16_layout
shared_16x32_to_mma_32x16_layout_sr_b = shared_16x32_to_mma_b_32x16_layout
shared_16x32_to_mma_32x16_layout_rs_a = shared_32x16_to_mma_a_32x16_layout_trans
shared_16x32_to_mma_32x16_layout_rs_b = shared_32x16_to_mma_b_32x16_layout_trans


def get_swizzle_layout(row_idx, col_idx, row_size, dtype: DataType | str, swizzle_bytes=None):
    """TileLang's shared-memory swizzle of element (row_idx, col_idx) of a tile with `row_size` elements a
    row: `(col_tile, row, swizzled_col)`. Rows of 128 bytes or more take the 128-byte swizzle (16-byte
    chunk c of row r moves to c ^ (r % 8)); 64- and 32-byte rows the 64- and 32-byte ones."""
    bits = as_dtype(dtype).bits
    row_bytes = bits * row_size // 8
    if row_bytes % 32:
        raise ValueError(
            f"get_swizzle_layout: a row of {row_size} x {bits}-bit elements is not a multiple of 32 bytes"
        )
    if swizzle_bytes is None:
        swizzle_bytes = min(128, row_bytes)
    elements_per_16_bytes = 128 // bits
    vectors = int(swizzle_bytes) // 16
    chunk = col_idx // elements_per_16_bytes
    within = col_idx % elements_per_16_bytes
    col_tile = chunk // vectors
    swizzled = (chunk % vectors) ^ ((row_idx % 8) // (8 // vectors))
    return col_tile, row_idx, swizzled * elements_per_16_bytes + within


def make_mma_swizzle_layout(shared_buf, is_smooth: bool = False):
    """The `T.Layout` TileLang gives an mma operand tile in shared memory: `get_swizzle_layout` on the
    last two dims when a row is a multiple of 64 bytes, the identity otherwise (or with `is_smooth`). In
    tilecraft a layout on a shared buffer is a hint: each target picks its operand tiles' layouts."""
    shape = tuple(int(d) for d in shared_buf.shape)
    variables = tuple(Var(int32, f"i{k}") for k in range(len(shape)))
    *lead, i, j = variables
    if is_smooth or shape[-1] * as_dtype(shared_buf.dtype).bits % 512:
        return Layout(shape, variables, variables)
    return Layout(shape, (*lead, *get_swizzle_layout(i, j, shape[-1], shared_buf.dtype)), variables)


__getattr__ = refusing("tilelang.cuda.intrinsics.layout.mma_layout")
