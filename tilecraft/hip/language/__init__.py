"""The HIP dialect: `from tilecraft.hip import language as T`. Common language for now."""

from tilecraft.language import *  # noqa: F403
from tilecraft.language import __all__  # noqa: F401
