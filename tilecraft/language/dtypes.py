"""TileLang's `tilelang.language.dtypes` module: the dtype class and its torch name tables.

`dtype` is tilecraft's `DataType`. The torch tables (`_TORCH_DTYPE_TO_STR`, `_STR_TO_TORCH_DTYPE`) map
every torch dtype that has a tilecraft counterpart to its name; they are built on first use, so that
importing this module does not import torch (a program that reads them has torch already).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from tilecraft.ir.dtype import ALL_DTYPES, DataType, as_dtype

dtype = DataType

__all__ = ["as_dtype", "dtype"]  # and, read lazily, _all_dtypes, _TORCH_DTYPE_TO_STR and _STR_TO_TORCH_DTYPE


@cache
def _torch_to_str() -> dict[Any, str]:
    import torch

    table = {}  # torch's aliases (torch.half is torch.float16) are the same objects: one entry each
    for dt in ALL_DTYPES:
        found = getattr(torch, dt.name, None)
        if isinstance(found, torch.dtype):
            table[found] = dt.name
    packed_pairs = getattr(torch, "float4_e2m1fn_x2", None)  # torch 2.8 and newer
    if packed_pairs is not None:
        table[packed_pairs] = "float4_e2m1fnx2"
    return table


@cache
def _dtype_names() -> tuple[str, ...]:
    """Every name under which `T` holds a dtype (aliases such as `half` and `long` included)."""
    import tilecraft.language as T

    return tuple(sorted(n for n in dir(T) if not n.startswith("_") and isinstance(getattr(T, n), DataType)))


def __getattr__(name: str) -> Any:
    if name == "_all_dtypes":  # TileLang's list of the dtype names `T` exports
        return list(_dtype_names())
    if name == "_TORCH_DTYPE_TO_STR":
        return dict(_torch_to_str())
    if name == "_STR_TO_TORCH_DTYPE":
        return {v: k for k, v in _torch_to_str().items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
