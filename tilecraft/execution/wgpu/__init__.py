"""The `wgpu` execution backend: WGSL compute pipelines on a WebGPU adapter through wgpu-py."""

from tilecraft.execution.wgpu.spec import WGPU

__all__ = ["WGPU"]
