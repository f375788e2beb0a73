"""`BaseTemplate`: a computation whose tilings the carver recommends for a device (TileLang's
`carver.template` interface: `with_arch`, `recommend_hints`, `equivalent_function`)."""

from __future__ import annotations

from typing import Any

from tilecraft.carver.arch.arch_base import TileDevice
from tilecraft.carver.roller.hint import Hint


class BaseTemplate:
    """Subclasses define `get_hardware_aware_configs(arch, topk)` and `initialize_function()`."""

    _arch: TileDevice | None = None
    _func: Any = None

    def with_arch(self, arch: TileDevice) -> BaseTemplate:
        """Recommend tilings for `arch` (a device model of tilecraft.carver.arch); returns the template."""
        if not isinstance(arch, TileDevice):
            raise TypeError(
                f"with_arch takes a device model from tilecraft.carver.arch (a TileDevice built from a target), "
                f"got {type(arch).__name__}"
            )
        self._arch = arch
        return self

    def has_arch(self) -> bool:
        return self._arch is not None

    @property
    def arch(self) -> TileDevice | None:
        return self._arch

    def recommend_hints(self, topk: int = 10) -> list[Hint]:
        """The `topk` best tilings for the template's device, best first."""
        if self._arch is None:
            raise ValueError(
                f"{type(self).__name__} has no device: call .with_arch(model) with a device model of "
                "tilecraft.carver.arch, built from the target, before recommend_hints"
            )
        if isinstance(topk, bool) or not isinstance(topk, int) or topk < 1:
            raise ValueError(f"topk must be a positive int, got {topk!r}")
        return self.get_hardware_aware_configs(self._arch, topk)

    def get_hardware_aware_configs(self, arch: TileDevice, topk: int = 10) -> list[Hint]:
        raise NotImplementedError

    def equivalent_function(self):
        """A tilecraft kernel (`@T.prim_func`) that computes what the template describes."""
        if self._func is None:
            self._func = self.initialize_function()
        return self._func

    def initialize_function(self):
        raise NotImplementedError


__all__ = ["BaseTemplate"]
