"""Names of TileLang's `tilelang.cuda.intrinsics` that tilecraft does not provide raise one clear error."""

from __future__ import annotations

import sys
from typing import Any

from tilecraft.compat.hook import COMPAT_DOC, UnmappedModuleError

_SPARSE = (
    "there is no sparse tensor-core (mma.sp) emitter: T.gemm_sp computes on the dense tile it expands "
    "(docs/language.md)"
)
_TCGEN05 = "tcgen05 (sm_100) tensor memory and mma are not a tilecraft code path"
_BEFORE_SM80 = (
    "tilecraft's CUDA backend needs sm_80 or newer (mma.sync m16n8k16); T.gemm picks the instruction"
)

# TileLang names with a known reason.
REASONS = {
    "TensorCoreIntrinEmitterWithLadderTransform": "the ladder-transformed (BitBLAS) operand layouts need "
    "per-thread code that tilecraft's tile-level emitter does not write",
    "TensorCoreIntrinEmitterSM120": "sm_120 block-scaled mma is not a tilecraft code path",
    "INT4TensorCoreIntrinEmitter": "T.gemm of int4 operands is not supported (docs/language.md)",
    "SparseTensorCoreIntrinEmitter": _SPARSE,
    "get_store_index_map": "it returns TVM's IndexMap, which tilecraft does not have",
    "make_mma_load_layout": "it describes TileLang's per-thread fragment registers; tilecraft's emitter keeps "
    "the block's whole tile in the buffer and T.gemm chooses its layout",
    "make_mma_store_layout": "it describes TileLang's per-thread fragment registers; tilecraft's emitter keeps "
    "the block's whole tile in the buffer and T.gemm chooses its layout",
    "mma_atom": "one mma atom per warp touches rows of every warp's tile at once, which is no tile of the "
    "block; call mma(), which covers all the atoms",
    # modules of TileLang's intrinsics package
    "mma_sp_layout": _SPARSE,
    "mma_sp_macro_generator": _SPARSE,
    "wgmma_sp_macro_generator": _SPARSE,
    "mma_sm100_layout": _TCGEN05,
    "tcgen05_macro_generator": _TCGEN05,
    "wgmma_macro_generator": "tilecraft's T.gemm issues wgmma itself on sm_90a (docs/cuda.md); there is no "
    "wgmma macro emitter",
    "mma_sm70_layout": _BEFORE_SM80,
    "mma_sm70_macro_generator": _BEFORE_SM80,
    "mma_sm75_macro_generator": _BEFORE_SM80,
    "TensorCoreIntrinEmitterSM75": _BEFORE_SM80,
    "mma_sm120_macro_generator": "sm_120 block-scaled mma is not a tilecraft code path",
}


def unprovided(name: str, reason: str | None = None) -> UnmappedModuleError:
    why = reason or REASONS.get(name.rsplit(".", 1)[-1], "it is not among the parts TileLang's examples use")
    return UnmappedModuleError(
        f"`{name}` is not provided by tilecraft's TileLang intrinsic emitters (tilecraft.compat.intrinsics): "
        f'{why} ({COMPAT_DOC}, section "TVM", lists what is provided)',
        name=name,
    )


def refusing(module: str):
    """A module `__getattr__` for TileLang's module `module` (`tilelang.cuda.intrinsics...`)."""

    def __getattr__(name: str) -> Any:
        # Tools that scan sys.modules (torch.compile's inductor) probe attributes named after other
        # top-level modules (`mod.torch`) with getattr(..., None), which catches AttributeError only.
        if name.startswith("_") or name in sys.modules:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        raise unprovided(f"{module}.{name}")

    return __getattr__
