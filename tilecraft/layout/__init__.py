"""Layouts of shared buffers and fragments (see docs/layouts.md).

`Layout` and `Fragment` are the expression-based layouts of `T.annotate_layout`; `LinearLayout` is the
GF(2) linear-layout algebra the SIMT backends reason with, and `fragment`/`shared` build the layouts
their instructions impose.
"""

from tilecraft.layout.layout import Fragment, Layout
from tilecraft.layout.linear import LinearLayout, identity, zeros

__all__ = ["Fragment", "Layout", "LinearLayout", "identity", "zeros"]
