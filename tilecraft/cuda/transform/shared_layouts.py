"""apply-shared-layouts: swizzled shared tiles (a `SharedLayout`: tensor-core operand tiles) are 1-D
buffers addressed at their elements' physical offsets (tilecraft/transform/physical_layouts.py); leading
dims (pipeline stages, batch) count whole tiles, and copies and gemm calls that already carry physical
offsets keep them."""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.shared_layout import SharedLayout
from tilecraft.ir.function import IRModule
from tilecraft.transform.physical_layouts import apply_physical_layouts


@module_pass("apply-shared-layouts")
def apply_shared_layouts(mod: IRModule, ctx) -> IRModule:
    """Swizzled shared tiles are 1-D buffers addressed by physical offsets."""
    return apply_physical_layouts(mod, SharedLayout)
