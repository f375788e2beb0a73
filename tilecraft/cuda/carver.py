"""`tilecraft.carver.arch.CUDA`: TileLang's device model of an NVIDIA GPU, from the target's attributes.

The arch, SM count and shared-memory limit come from the `cuda` target (read from the device, or named
in the target string). Peak rates come from `REFERENCE_DEVICES`, one published data-center part per
compute capability, scaled by the target's SM count when the target knows it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from tilecraft.backend.errors import TargetError
from tilecraft.backend.target import Target, unredirected
from tilecraft.carver.arch.arch_base import TileDevice
from tilecraft.cuda.target import KIND, arch_for_capability, capability
from tilecraft.runtime import imported_module as imported


@dataclass(frozen=True)
class ReferenceDevice:
    """A part's published figures; `fp16_flops_per_sm_cycle` is dense FP16 mma with FP32 accumulation."""

    name: str
    sm_count: int
    clock_ghz: float  # the boost clock NVIDIA's peak figures use
    fp16_flops_per_sm_cycle: int
    memory_bandwidth_GBps: float
    l2_cache_size_bytes: int

    def peak_tflops(self, sm_count: int) -> float:
        return sm_count * self.clock_ghz * self.fp16_flops_per_sm_cycle / 1e3


# Peaks these give: V100 125, A100 312, A6000 155, L40S 366, H100 990 dense FP16 TFLOPs (NVIDIA datasheets).
REFERENCE_DEVICES: dict[tuple[int, int], ReferenceDevice] = {
    (7, 0): ReferenceDevice("Tesla V100-SXM2", 80, 1.53, 1024, 900.0, 6 << 20),
    (8, 0): ReferenceDevice("A100-SXM4-80GB", 108, 1.41, 2048, 2039.0, 40 << 20),
    (8, 6): ReferenceDevice("RTX A6000", 84, 1.80, 1024, 768.0, 6 << 20),
    (8, 9): ReferenceDevice("L40S", 142, 2.52, 1024, 864.0, 96 << 20),
    (9, 0): ReferenceDevice("H100-SXM5-80GB", 132, 1.83, 4096, 3350.0, 50 << 20),
}


def resolve_target(target: Any) -> Target:
    """The `cuda` target `target` names. A target without an arch is read from device 0; on a machine
    without one, under `--cuda-on-cpu`, it is the emulated device's compute capability."""
    try:
        with unredirected():  # the device described, even where an emulation runs its kernels elsewhere
            resolved = Target.parse(target)
    except TargetError:
        arch = _emulated_arch()
        if arch is None or not _names_no_arch(target):
            raise
        with unredirected():
            resolved = Target.parse({"kind": KIND, "arch": arch})
    if resolved.kind != KIND:
        raise TargetError(f"carver.arch.CUDA describes a {KIND} target, got {resolved}")
    return resolved


def _names_no_arch(target: Any) -> bool:
    return isinstance(target, str) and target.split() in ([KIND], ["nvidia"])


def _emulated_arch() -> str | None:
    """The arch of the CUDA device torch reports, when the driver has none: under `--cuda-on-cpu` torch's
    CUDA is the host emulating a chosen compute capability. Asked of torch (when the program imported
    it), not of the compatibility layer that set it up, which sits above this backend."""
    torch = imported("torch")
    if torch is None:
        return None
    with contextlib.suppress(Exception):  # a torch without CUDA may raise instead of answering False
        if torch.cuda.is_available():
            return arch_for_capability(*torch.cuda.get_device_capability())
    return None


class CUDA(TileDevice):
    """An NVIDIA GPU: `CUDA("cuda")` (device 0), `CUDA("cuda -arch=sm_90a -sm_count=132")`, a Target."""

    def __init__(self, target: Any = KIND) -> None:
        super().__init__()
        self.target = resolve_target(target)
        arch = self.target.attr("arch")
        cap = capability(arch)
        reference = REFERENCE_DEVICES.get(cap)
        self.arch = arch
        self.sm_version = cap[0] * 10 + cap[1]
        self.name = reference.name if reference is not None else arch
        self.platform = "CUDA"
        self.compute_capability = f"{cap[0]}{cap[1]}"
        sm_count = self.target.attr("sm_count") or (reference.sm_count if reference else 0)
        self.compute_max_core = sm_count
        self.warp_size = 32
        self.sm_partition = 4
        self.reg_cap = 65536
        self.smem_cap = self.target.attr("max_shared_memory_per_block_optin", 0)
        self.max_smem_usage = 2 * self.smem_cap
        self.l2_cache_size_bytes = reference.l2_cache_size_bytes if reference else 0
        self.transaction_size = [32, 128]
        self.pipeline_stages = 2 if cap >= (8, 0) else 1  # cp.async (sm_80+) overlaps copies with mma
        if reference is not None:
            self.peak_tflops = round(reference.peak_tflops(sm_count), 1)
            self.memory_bandwidth_GBps = reference.memory_bandwidth_GBps

    def get_avaliable_tensorintrin_shapes(self) -> list[list[int]]:
        return [[16, 16]]  # mma.sync m16n8k16 pairs, as TileLang lists them

    def __repr__(self) -> str:
        return f"CUDA({self.target})"


__all__ = ["CUDA", "REFERENCE_DEVICES"]
