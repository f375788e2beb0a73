"""`Hint`: one recommended tiling of a carver template, with TileLang's attribute names."""

from __future__ import annotations

from typing import Any

from tilecraft.carver.roller.rasterization import NoRasterization, Rasterization


class Hint:
    """A tiling: `block` (the output tile a block computes), `warp` (the part one thread group computes,
    tensor-core tilings) or `thread`, `rstep` (the reduction step per iteration: block_K of a GEMM),
    `pipeline_stage` (shared-memory stages of the copy pipeline; 1 is no pipeline), `rasterization_plan`;
    `threads` is the block's thread count the tiling implies. The analysis fields (`estimated_ms`,
    `smem_bytes`, `waves`) say why it was ranked where it is."""

    def __init__(self) -> None:
        self.arch: Any = None
        self.use_tc: bool = False
        self.block: list[int] = []
        self.thread: list[int] = []
        self.warp: list[int] = []
        self.rstep: list[int] = []
        self.reduce_thread: list[int] = []
        self.rasterization_plan: Rasterization = NoRasterization()
        self.pipeline_stage: int = 1
        self.use_async: bool = False
        self.split_k_factor: int = 1
        self.threads: int = 0
        self.smem_bytes: int = 0
        self.waves: int = 0
        self.estimated_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """TileLang's dict form: the tiling without the analysis."""
        out: dict[str, Any] = {"block": self.block}
        out["warp" if self.use_tc else "thread"] = self.warp if self.use_tc else self.thread
        out["rstep"] = self.rstep
        if self.use_tc:
            out["use_tc"] = True
        if self.pipeline_stage != 1:
            out["pipeline_stage"] = self.pipeline_stage
        return out

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Hint:
        hint = cls()
        for key, value in values.items():
            setattr(hint, key, value)
        return hint

    def __repr__(self) -> str:
        return str(self.to_dict())


__all__ = ["Hint"]
