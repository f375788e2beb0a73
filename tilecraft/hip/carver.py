"""`tilecraft.carver.arch.CDNA`: TileLang's device model of an AMD Instinct GPU, from a documented table.

The processor comes from a `hip` target (`CDNA("hip -arch=gfx942")`, a Target, or TileLang's spelling
`CDNA("hip -mcpu=gfx942")`); `CDNA("hip")` reads it from the device. The figures are the table's. It
describes the device for analysis (`tilecraft.tools.Analyzer`) only; the backend exposes it as its
callback `carver.arch.CDNA`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tilecraft.backend.target import Target
from tilecraft.carver.arch.arch_base import TileDevice
from tilecraft.errors import TilecraftError
from tilecraft.hip.target import KIND


@dataclass(frozen=True)
class CdnaModel:
    """One processor's published figures: one device as ROCm numbers them (a GCD of an MI250X)."""

    name: str
    compute_units: int
    clock_ghz: float  # peak engine clock
    fp16_flops_per_cu_cycle: int  # dense matrix-core FP16 with FP32 accumulation
    memory_bandwidth_GBps: float
    l2_cache_size_bytes: int
    lds_bytes: int

    @property
    def peak_tflops(self) -> float:
        return self.compute_units * self.clock_ghz * self.fp16_flops_per_cu_cycle / 1e3


# MI250X: 383 dense FP16 TFLOPs and 3.2 TB/s over its two GCDs; MI300X: 1307 TFLOPs, 5.3 TB/s (AMD specs).
CDNA_MODELS = {
    "gfx90a": CdnaModel("AMD Instinct MI250X (one GCD)", 110, 1.70, 1024, 1638.4, 8 << 20, 64 << 10),
    "gfx942": CdnaModel("AMD Instinct MI300X", 304, 2.10, 2048, 5300.0, 4 << 20, 64 << 10),
}


def _mcpu(target: Any) -> str:
    if isinstance(target, str):
        # TileLang names the processor with -mcpu; tilecraft's hip target calls it arch
        target = " ".join(w.replace("-mcpu=", "-arch=", 1) for w in target.split())
    try:
        resolved = Target.parse(target)
    except TilecraftError as err:
        raise TilecraftError(
            f"CDNA({target!r}): {err}; name the processor, e.g. CDNA('hip -arch=gfx942') (known: "
            f"{', '.join(CDNA_MODELS)})"
        ) from None
    if resolved.kind != KIND or resolved.attr("arch") not in CDNA_MODELS:
        raise TilecraftError(
            f"CDNA({target!r}) describes a CDNA {KIND} target; name the processor, e.g. CDNA('hip -arch=gfx942') "
            f"(known: {', '.join(CDNA_MODELS)})"
        )
    return resolved.attr("arch")


class CDNA(TileDevice):
    """An AMD CDNA GPU named by its processor (`gfx90a`, `gfx942`)."""

    def __init__(self, target: Any) -> None:
        super().__init__()
        self.mcpu = _mcpu(target)
        model = CDNA_MODELS[self.mcpu]
        self.target = target
        self.name = model.name
        self.platform = "CDNA"
        self.compute_capability = self.mcpu
        self.compute_max_core = model.compute_units
        self.warp_size = 64
        self.sm_partition = 4
        self.reg_cap = 32768
        self.smem_cap = model.lds_bytes
        self.max_smem_usage = 2 * model.lds_bytes
        self.l2_cache_size_bytes = model.l2_cache_size_bytes
        self.transaction_size = [32, 128]
        self.peak_tflops = round(model.peak_tflops, 1)
        self.memory_bandwidth_GBps = model.memory_bandwidth_GBps


__all__ = ["CDNA", "CDNA_MODELS"]
