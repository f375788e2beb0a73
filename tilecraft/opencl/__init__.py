"""The OpenCL target backend: kernel -> OpenCL C -> built by the device's driver through pyopencl.

Import order follows the architecture: target, language, ops, then the manifest.
"""

import tilecraft.backend.shared_compiler  # noqa: F401 - first: the shared compiler loads in one thread at a time

# isort: off
from tilecraft.opencl import target  # noqa: F401  (registers the target kind)
from tilecraft.opencl import language  # noqa: F401
from tilecraft.opencl import op  # noqa: F401
from tilecraft.opencl import backend  # noqa: F401  (registers the manifest)
# isort: on
