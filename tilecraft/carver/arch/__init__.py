"""`from tilecraft.carver.arch import driver, CDNA, <device model>`: facts about the devices targets run on.

Device models of a target kind (TileLang's `carver.arch` class named after the platform) belong to that
target's backend, which exposes the class as its callback `carver.arch.<Name>`; looking the name up here
finds it through the backend registry.
"""

from __future__ import annotations

from typing import Any

from tilecraft.carver.arch import driver
from tilecraft.carver.arch.arch_base import TileDevice

CALLBACK_PREFIX = "carver.arch."


def __getattr__(name: str) -> Any:
    if name.startswith("_"):
        raise AttributeError(name)
    from tilecraft.backend.registry import registered_backends

    for backend in registered_backends():
        model = backend.callbacks.get(CALLBACK_PREFIX + name)
        if model is not None:
            return model
    raise AttributeError(
        f"module {__name__!r} has no attribute {name!r}: no backend provides a device model {name}"
    )


__all__ = ["TileDevice", "driver"]
