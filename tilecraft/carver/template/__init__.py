"""TileLang's `carver.template`: computations whose tilings the carver recommends for a device.

`MatmulTemplate` (TileLang's GEMM autotune examples generate their configs from it) is provided;
TileLang's other templates are not (an AttributeError says so)."""

from __future__ import annotations

from tilecraft.carver.template.base import BaseTemplate
from tilecraft.carver.template.matmul import MatmulTemplate

NOT_PROVIDED = (
    "GEMVTemplate",
    "ElementwiseTemplate",
    "GeneralReductionTemplate",
    "FlashAttentionTemplate",
    "ConvTemplate",
)


def __getattr__(name: str):
    if name in NOT_PROVIDED:
        raise AttributeError(
            f"tilecraft.carver.template has no {name}: only MatmulTemplate is provided (docs/compat.md); "
            "write the candidate configurations as a list of dicts for the autotuner"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BaseTemplate", "MatmulTemplate"]
