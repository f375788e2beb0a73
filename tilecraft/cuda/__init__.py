"""The CUDA target backend: kernel -> CUDA C++ -> NVRTC or nvcc -> the CUDA driver.

Import order follows the architecture: target, transforms, language, ops, then the manifest.
"""

import tilecraft.backend.shared_compiler  # noqa: F401 - first: the shared compiler loads in one thread at a time

# isort: off
from tilecraft.cuda import target  # noqa: F401  (registers the target kind)
from tilecraft.cuda import transform  # noqa: F401
from tilecraft.cuda import language  # noqa: F401
from tilecraft.cuda import op  # noqa: F401
from tilecraft.cuda import backend  # noqa: F401  (registers the manifest)
# isort: on
