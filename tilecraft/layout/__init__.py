"""Layouts of shared buffers and fragments (see docs/layouts.md).

`Layout` and `Fragment` are the expression-based layouts of `T.annotate_layout`; `LinearLayout` is the
GF(2) linear-layout algebra the SIMT backends reason with, `fragment` the generic fragment layouts built
on it (for any thread-group width), and `shared` row-major and swizzled shared-tile layouts. The layouts
an instruction imposes live in the backend that emits it.
"""

from tilecraft.layout.gemm import make_gemm_fragment_8x8, make_gemm_fragment_8x8_transposed
from tilecraft.layout.layout import Fragment, Layout
from tilecraft.layout.linear import LinearLayout, identity, zeros

__all__ = [
    "Fragment", "Layout", "LinearLayout", "identity", "make_gemm_fragment_8x8",
    "make_gemm_fragment_8x8_transposed", "zeros",
]  # fmt: skip

# TileLang's swizzled shared layouts (hints here; see swizzle.py).
from tilecraft.layout.swizzle import (  # noqa: E402
    SwizzledLayout,
    make_full_bank_swizzled_layout,
    make_half_bank_swizzled_layout,
    make_quarter_bank_swizzled_layout,
    make_swizzled_layout,
)

__all__ += [
    "SwizzledLayout", "make_full_bank_swizzled_layout", "make_half_bank_swizzled_layout",
    "make_quarter_bank_swizzled_layout", "make_swizzled_layout",
]  # fmt: skip
