"""apply-lds-layouts: LDS tiles with an `LdsLayout` (MFMA operand tiles) are addressed through it.

After it runs, every access to such a tile uses a 1-D buffer and the element's physical offset
(`LdsLayout.physical` of its row-major offset; tilecraft/transform/physical_layouts.py), so the copies
that fill a tile write where the MFMA call, which reads through the same layout (its `layout_a` /
`layout_b`), looks; the layout annotations are gone. It runs after lower-buffer-views, so accesses
through views already address their base.
"""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.hip.lds_layout import LdsLayout
from tilecraft.ir.function import IRModule
from tilecraft.transform.physical_layouts import apply_physical_layouts


@module_pass("apply-lds-layouts")
def apply_lds_layouts(mod: IRModule, ctx) -> IRModule:
    """MFMA operand tiles are 1-D LDS buffers addressed at their elements' swizzled offsets."""
    return apply_physical_layouts(mod, LdsLayout)
