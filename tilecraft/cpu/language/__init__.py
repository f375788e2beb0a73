"""The CPU dialect: `from tilecraft.cpu import language as T`. Common-only for now."""

from tilecraft.language import *  # noqa: F403
from tilecraft.language import __all__  # noqa: F401
