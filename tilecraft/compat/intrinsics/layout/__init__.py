"""TileLang's `tilelang.cuda.intrinsics.layout`."""

from tilecraft.compat.intrinsics._refusing import refusing
from tilecraft.compat.intrinsics.layout.mma_layout import get_swizzle_layout, make_mma_swizzle_layout
from tilecraft.compat.intrinsics.layout.utils import (
    get_ldmatrix_offset,
    get_mma_micro_size,
    mma_store_index_map,
)

__all__ = [
    "get_ldmatrix_offset",
    "get_mma_micro_size",
    "get_swizzle_layout",
    "make_mma_swizzle_layout",
    "mma_store_index_map",
]
__getattr__ = refusing("tilelang.cuda.intrinsics.layout")
