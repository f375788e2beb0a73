"""TileLang's `tilelang.cuda.intrinsics.sparse_layout`: the 2:4 metadata facts its compressor and
`T.gemm_sp` share (`GROUP_CONFIG`, `get_e_factor`, `get_e_replicate_factor`).

The format itself is tilecraft.language.gemm_sp's (its module docstring); this module states it with
TileLang's names, keyed by the element types TileLang lists.
"""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.ir.dtype import DataType
from tilecraft.language.gemm_sp import e_factor, sparsity

# (kept, group) per element type of A: 2 of every 4 for 8- and 16-bit types, 1 of every 2 for float32.
GROUP_CONFIG: dict[DataType, tuple[int, int]] = {
    d: sparsity(d)
    for d in (T.float32, T.float16, T.bfloat16, T.int8, T.uint8, T.float8_e4m3fn, T.float8_e5m2)
}


def get_e_factor(a_dtype, meta_dtype) -> int:
    """How many elements of A one element of metadata of `meta_dtype` indexes."""
    return e_factor(a_dtype, meta_dtype)


def get_e_replicate_factor(a_dtype) -> int:
    """How many consecutive threads share one metadata value in CUDA's mma.sp fragments (TileLang's
    figure: 1 for 8-bit types, 2 for wider ones); tilecraft's T.gemm_sp reads its metadata by element and
    does not use it."""
    return 1 if DataType(a_dtype).bits <= 8 else 2


__all__ = ["GROUP_CONFIG", "get_e_factor", "get_e_replicate_factor"]
