"""TileLang's `tilelang.engine`: `lower` (tilecraft's, which returns a `CompiledArtifact`).

TileLang's `tilelang.engine.callback` (source post-processing callbacks) lives in the backend whose
source it rewrites (`callback` in that backend's package); the TileLang import hook maps the one onto
the other (docs/compat.md).
"""

from tilecraft.jit.lower import lower

__all__ = ["lower"]
