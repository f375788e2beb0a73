"""The HIP target backend: kernel -> HIP C++ (clang builtins, no ROCm headers) -> clang -> code object ->
the HIP runtime.

Import order follows the architecture: target, transforms, language, intrinsics, ops, then the manifest.
"""

import tilecraft.backend.shared_compiler  # noqa: F401 - first: the shared compiler loads in one thread at a time

# isort: off
from tilecraft.hip import target  # noqa: F401  (registers the target kind)
from tilecraft.hip import toolchain  # noqa: F401  (declares TILECRAFT_HIP_CLANG)
from tilecraft.hip import transform  # noqa: F401
from tilecraft.hip import language  # noqa: F401
from tilecraft.hip import intrinsics  # noqa: F401
from tilecraft.hip import op  # noqa: F401
from tilecraft.hip import backend  # noqa: F401  (registers the manifest)
# isort: on
