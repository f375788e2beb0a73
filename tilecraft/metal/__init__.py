"""The Metal target backend: kernel -> MSL -> built for the default Metal device through PyObjC (macOS).

Import order follows the architecture: target, transforms, language, ops, then the manifest.
"""

import tilecraft.backend.shared_compiler  # noqa: F401 - first: the shared compiler loads in one thread at a time

# isort: off
from tilecraft.metal import target  # noqa: F401  (registers the target kind)
from tilecraft.metal import transform  # noqa: F401
from tilecraft.metal import language  # noqa: F401
from tilecraft.metal import op  # noqa: F401
from tilecraft.metal import backend  # noqa: F401  (registers the manifest)
# isort: on
