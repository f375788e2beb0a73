"""`from tilecraft.carver.arch import driver`: facts about the device a target runs on."""

from tilecraft.carver.arch import driver

__all__ = ["driver"]
