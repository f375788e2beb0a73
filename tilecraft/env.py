"""TileLang's `tilelang.env`: the few environment facts TileLang programs read, from tilecraft's settings.

TileLang's names read through tilecraft's one settings registry (`tilecraft.settings`), so a program that
asks for `tilelang.env.TILELANG_CACHE_DIR` gets the directory tilecraft caches in (TILECRAFT_CACHE_DIR).
Values are read on every access, as the settings are. TileLang's other environment names (toolkit homes,
CUTLASS_INCLUDE_DIR, ...) describe TileLang's own installation and are not provided: reading one is an
AttributeError listing the names that are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilecraft import settings


def _cache_dir() -> str:
    return str(settings.get("TILECRAFT_CACHE_DIR"))


def _tmp_dir() -> str:
    return str(settings.get("TILECRAFT_CACHE_DIR") / "tmp")


def is_cache_enabled() -> bool:
    """Whether compiled kernels are cached (TILECRAFT_DISABLE_CACHE unset or false)."""
    return not settings.get("TILECRAFT_DISABLE_CACHE")


_NAMES: dict[str, Callable[[], Any]] = {
    "TILELANG_CACHE_DIR": _cache_dir,
    "TILELANG_TMP_DIR": _tmp_dir,
}


def __getattr__(name: str) -> Any:
    reader = _NAMES.get(name)
    if reader is None:
        provided = ", ".join([*_NAMES, "is_cache_enabled"])
        raise AttributeError(
            f"tilecraft.env (TileLang's tilelang.env) has no {name!r}; provided: {provided}. "
            "tilecraft's own settings are TILECRAFT_* variables: `tilecraft doctor` lists them"
        )
    return reader()


def __dir__() -> list[str]:
    return sorted([*_NAMES, "is_cache_enabled"])
