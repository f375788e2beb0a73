"""The CPU target backend: kernel -> C -> the system C compiler -> a shared library.

Import order follows the architecture: target, transforms, language, ops, then the manifest.
"""

import tilecraft.backend.shared_compiler  # noqa: F401 - first: the shared compiler loads in one thread at a time

# isort: off
from tilecraft.cpu import target  # noqa: F401  (registers the target kind)
from tilecraft.cpu import transform  # noqa: F401
from tilecraft.cpu import language  # noqa: F401
from tilecraft.cpu import op  # noqa: F401
from tilecraft.cpu import backend  # noqa: F401  (registers the manifest)
# isort: on
