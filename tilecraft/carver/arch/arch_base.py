"""`TileDevice`: what TileLang's carver knows about a device, and the peak rates the Analyzer needs."""

from __future__ import annotations


class TileDevice:
    """The architecture of a device: TileLang's attribute names, plus the two peak rates that turn an
    Analyzer's counts into a time.

    `peak_tflops` is the dense 16-bit tensor/matrix-unit rate with 32-bit accumulation (what T.gemm of
    float16 tiles runs at) and `memory_bandwidth_GBps` the device memory's bandwidth; either is None when
    the device's model is not in its backend's documented table and was not given.
    """

    def __init__(self) -> None:
        self.name: str = "unknown"
        self.platform: str = "unknown"
        self.compute_capability: str = "unknown"  # digits only, as TileLang's: "80", "90"
        self.compute_max_core: int = 0  # processors (SMs, CUs) running blocks
        self.warp_size: int = 0
        self.sm_partition: int = 0
        self.reg_cap: int = 0
        self.smem_cap: int = 0  # shared memory per block, bytes
        self.max_smem_usage: int = 0
        self.l2_cache_size_bytes: int = 0
        self.transaction_size: list[int] = [0, 0]  # bytes
        self.peak_tflops: float | None = None
        self.memory_bandwidth_GBps: float | None = None
        # Shared-memory stages a pipeline of global -> shared copies uses to hide their latency: 2 where
        # copies run asynchronously beside compute, 1 where a stage would only cost memory.
        self.pipeline_stages: int = 1

    def get_avaliable_tensorintrin_shapes(self) -> list[list[int]]:  # TileLang's spelling
        raise NotImplementedError(f"{type(self).__name__} lists no tensor instruction shapes")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, compute capability {self.compute_capability})"


__all__ = ["TileDevice"]
