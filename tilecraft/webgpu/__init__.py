"""The WebGPU target backend: kernel -> WGSL -> compute pipelines made by wgpu-py on a WebGPU adapter
(Vulkan, Metal or D3D12 underneath; Mesa's lavapipe runs it on the CPU).

Import order follows the architecture: target, language, ops, then the manifest.
"""

import tilecraft.backend.shared_compiler  # noqa: F401 - first: the shared compiler loads in one thread at a time

# isort: off
from tilecraft.webgpu import target  # noqa: F401  (registers the target kind)
from tilecraft.webgpu import language  # noqa: F401
from tilecraft.webgpu import op  # noqa: F401
from tilecraft.webgpu import backend  # noqa: F401  (registers the manifest)
# isort: on
