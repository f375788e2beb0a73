"""TileLang's `carver.roller` names its examples use: `Hint` and the rasterization plans."""

from tilecraft.carver.roller.hint import Hint
from tilecraft.carver.roller.rasterization import (
    NoRasterization,
    Rasterization,
    Rasterization2DColumn,
    Rasterization2DRow,
)

__all__ = ["Hint", "NoRasterization", "Rasterization", "Rasterization2DColumn", "Rasterization2DRow"]
