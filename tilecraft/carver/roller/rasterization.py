"""Block rasterization plans of TileLang's carver (`carver.roller.rasterization`): the order in which a
GEMM's blocks visit output tiles so that neighbouring blocks share operand tiles in L2.

A plan is advice for the kernel writer: `T.use_swizzle(panel_width)` is how a tilecraft kernel applies
a panel order; these objects carry the panel width and generate no code themselves.
"""

from __future__ import annotations


class Rasterization:
    """A visiting order of a 2D grid of blocks; `panel_width` is the panel's width in blocks."""

    panel_width_: int | None = None

    @property
    def panel_width(self) -> int:
        if self.panel_width_ is None:
            raise AttributeError(f"{type(self).__name__} has no panel width")
        return self.panel_width_


class NoRasterization(Rasterization):
    """Blocks visit tiles in launch order."""

    def __repr__(self) -> str:
        return "<NoRasterization>"


class Rasterization2DRow(Rasterization):
    """Panels of `panel_width` rows of tiles, visited row panel by row panel."""

    def __init__(self, panel_width: int = 4) -> None:
        self.panel_width_ = _positive(panel_width)

    def __repr__(self) -> str:
        return f"<Rasterization2DRow({self.panel_width_})>"


class Rasterization2DColumn(Rasterization):
    """Panels of `panel_width` columns of tiles (what `T.use_swizzle(panel_width)` does)."""

    def __init__(self, panel_width: int = 4) -> None:
        self.panel_width_ = _positive(panel_width)

    def __repr__(self) -> str:
        return f"<Rasterization2DColumn({self.panel_width_})>"


def _positive(width: int) -> int:
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ValueError(f"a rasterization panel width must be a positive int, got {width!r}")
    return width


__all__ = ["NoRasterization", "Rasterization", "Rasterization2DColumn", "Rasterization2DRow"]
