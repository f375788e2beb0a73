"""TileLang's `tilelang.cuda.intrinsics.layout.utils`: ldmatrix address offsets, the mma store map and
the mma tile sizes per dtype (TileLang's functions, index arithmetic on ints or tilecraft expressions)."""

from __future__ import annotations

from tilecraft.compat.intrinsics._refusing import refusing
from tilecraft.compat.intrinsics.layout.mma_layout import (
    get_swizzle_layout,
    ldmatrix_32x4_to_shared_16x8_layout_a,
    ldmatrix_32x4_to_shared_16x8_layout_b,
    ldmatrix_32x8_to_shared_16x16_layout,
    ldmatrix_32x16_to_shared_16x32_layout_a,
    ldmatrix_32x16_to_shared_16x32_layout_b,
    ldmatrix_trans_32x8_to_shared_16x16_layout,
    make_mma_swizzle_layout,
    mma_store_32x2_to_shared_8x8_layout_fp64,
    mma_store_32x8_to_shared_16x16_layout,
)
from tilecraft.ir.dtype import as_dtype

__all__ = [
    "get_ldmatrix_offset",
    "get_mma_micro_size",
    "get_swizzle_layout",
    "make_mma_swizzle_layout",
    "mma_store_index_map",
    "mma_store_index_map_fp64",
]


def get_ldmatrix_offset(matrix: str, row_idx, col_idx, stride, dtype="float16", transposed: bool = False):
    """The (row, col) in the 16-row tile that lane `row_idx` gives ldmatrix as its row address."""
    if matrix not in ("A", "B"):
        raise ValueError(f"get_ldmatrix_offset: matrix must be 'A' or 'B', got {matrix!r}")
    bits = as_dtype(dtype).bits
    if bits == 16:
        layout = (
            ldmatrix_trans_32x8_to_shared_16x16_layout if transposed else ldmatrix_32x8_to_shared_16x16_layout
        )
        return layout(row_idx, col_idx)
    if bits in (32, 8, 4, 2, 1) and (matrix == "B") == transposed:
        if bits == 32:
            layout = (
                ldmatrix_32x4_to_shared_16x8_layout_b if transposed else ldmatrix_32x4_to_shared_16x8_layout_a
            )
            return layout(row_idx, col_idx)
        layout = (
            ldmatrix_32x16_to_shared_16x32_layout_b if transposed else ldmatrix_32x16_to_shared_16x32_layout_a
        )
        row, col = layout(row_idx, col_idx)
        return row, col * (8 // bits)
    if bits in (32, 8, 4, 2, 1):
        raise ValueError(
            "ldmatrix only supports B transposed and A non-transposed for dtypes other than 16 bits"
        )
    raise ValueError(f"Unsupported dtype {dtype}")


def mma_store_index_map(thread_id, local_id):
    return mma_store_32x8_to_shared_16x16_layout(thread_id, local_id)


def mma_store_index_map_fp64(thread_id, local_id):
    return mma_store_32x2_to_shared_8x8_layout_fp64(thread_id, local_id)


def get_mma_micro_size(dtype) -> tuple[int, int, int]:
    """The (x, y, k) of one mma tile: 16 x 16 x 16, k 32 for int8 and float8."""
    k = 32 if str(dtype) in ("float8_e4m3", "float8_e5m2", "int8") else 16
    return 16, 16, k


__getattr__ = refusing("tilelang.cuda.intrinsics.layout.utils")
