"""The WebGPU target backend: kernel -> WGSL -> compute pipelines made by wgpu-py on a WebGPU adapter
(Vulkan, Metal or D3D12 underneath; Mesa's lavapipe runs it on the CPU).

Import order follows the architecture: target, language, ops, then the manifest.
"""

# isort: off
from tilecraft.webgpu import target  # noqa: F401  (registers the target kind)
from tilecraft.webgpu import language  # noqa: F401
from tilecraft.webgpu import op  # noqa: F401
from tilecraft.webgpu import backend  # noqa: F401  (registers the manifest)
# isort: on
