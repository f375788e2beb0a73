"""TileLang's `tilelang.cuda.intrinsics.macro`: the MMA macro emitter (`mma_macro_generator`)."""

from tilecraft.compat.intrinsics._refusing import refusing
from tilecraft.compat.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter

__all__ = ["TensorCoreIntrinEmitter"]
__getattr__ = refusing("tilelang.cuda.intrinsics.macro")
