"""Layer 1, the dialect: `from tilecraft.cutedsl import language as T`. It starts as the cuda backend's (the
common language and that backend's extensions); add this backend's own `T.*` extensions here, and keep
the common names: `tilecraft backend check` checks that the dialect exports all of them."""

from tilecraft.cuda.language import *  # noqa: F403
from tilecraft.cuda.language import __all__  # noqa: F401
