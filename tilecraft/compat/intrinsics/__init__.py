"""TileLang's warp-level intrinsic emitters (`tilelang.cuda.intrinsics`, formerly `tilelang.intrinsics`)
for tilecraft: `TensorCoreIntrinEmitter` and the layout helpers TileLang's examples import.

Under `tilecraft run-tilelang` the import hook maps `tilelang.cuda.intrinsics...` here. The emitter
writes tile operations instead of TileLang's per-thread ldmatrix / mma.sync code
(`macro.mma_macro_generator`, `lifting`); the layout helpers are TileLang's index functions
(`layout.mma_layout`, `layout.utils`). Names that are not provided raise one error naming them and the
reason (`_refusing`); docs/compat.md, section "TVM", lists them.
"""

import importlib
import importlib.util

from tilecraft.compat.intrinsics._refusing import refusing
from tilecraft.compat.intrinsics.layout.mma_layout import get_swizzle_layout, make_mma_swizzle_layout
from tilecraft.compat.intrinsics.layout.utils import (
    get_ldmatrix_offset,
    get_mma_micro_size,
    mma_store_index_map,
)
from tilecraft.compat.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter

_OWN = "tilecraft.cuda.intrinsics"  # tilecraft's instruction facts, another API under the same name

__all__ = [
    "TensorCoreIntrinEmitter",
    "get_ldmatrix_offset",
    "get_mma_micro_size",
    "get_swizzle_layout",
    "make_mma_swizzle_layout",
    "mma_store_index_map",
]
_refuse = refusing("tilelang.cuda.intrinsics")


def __getattr__(name: str):
    # Imported as `tilelang.cuda.intrinsics`, this package becomes the attribute `intrinsics` of its
    # parent, which is tilecraft.cuda: tilecraft's own submodules stay reachable through it.
    if importlib.util.find_spec(f"{_OWN}.{name}") is not None:
        return importlib.import_module(f"{_OWN}.{name}")
    return _refuse(name)
