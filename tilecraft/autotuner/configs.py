"""Tuning configurations: a list of dicts (or a function of the kernel's arguments returning one), each
naming parameters of the kernel factory, plus the reserved key `pass_configs` (merged over the compile
options' pass configs for that candidate)."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tilecraft.autotuner.result import ConfigError

PASS_CONFIGS = "pass_configs"
RESERVED_KEYS = frozenset({PASS_CONFIGS})


def resolve_configs(
    configs: Any, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None
) -> list[dict]:
    """The configurations as a non-empty list of dicts (a callable is called with the kernel's arguments)."""
    if callable(configs) and not isinstance(configs, Mapping):
        configs = configs(*args, **dict(kwargs or {}))
    if configs is None:
        raise ConfigError(
            "no configs to tune: pass configs=[{...}, ...] (a list of dicts of parameter values)"
        )
    if isinstance(configs, Mapping):
        raise ConfigError(
            "configs must be a list of dicts, one per candidate, e.g. [dict(block_M=64), dict(block_M=128)]; "
            "got one dict (for every combination of value lists, build the list with itertools.product)"
        )
    resolved = []
    for i, config in enumerate(configs):
        if not isinstance(config, Mapping):
            raise ConfigError(
                f"config {i} must be a dict of parameter values, got {type(config).__name__}: {config!r}"
            )
        resolved.append(dict(config))
    if not resolved:
        raise ConfigError("configs is empty: give at least one candidate configuration")
    return resolved


def kernel_arguments(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config without its reserved keys: what the kernel factory receives."""
    return {k: v for k, v in config.items() if k not in RESERVED_KEYS}


def check_config_keys(configs: Sequence[Mapping[str, Any]], factory: Callable[..., Any], owner: str) -> None:
    """Raise ConfigError naming the first key that `factory` cannot take as a keyword argument."""
    parameters = inspect.signature(factory).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    accepted = [
        name
        for name, p in parameters.items()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    for i, config in enumerate(configs):
        for key, value in config.items():
            if key in RESERVED_KEYS:
                _check_pass_configs(i, value)
            elif key not in accepted and not takes_any:
                raise ConfigError(_unknown_key_message(i, config, key, accepted, owner))


def _unknown_key_message(i: int, config: Mapping[str, Any], key: str, accepted: list[str], owner: str) -> str:
    by_case = [name for name in accepted if name.lower() == str(key).lower()]
    close = by_case or difflib.get_close_matches(str(key), accepted, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return (
        f"config {i} {dict(config)}: {key!r} is not a parameter of {owner} (its parameters: "
        f"{', '.join(accepted) or 'none'}, plus the reserved key {PASS_CONFIGS!r}){hint}"
    )


def _check_pass_configs(i: int, value: Any) -> None:
    if value is not None and not isinstance(value, Mapping):
        raise ConfigError(f"config {i}: {PASS_CONFIGS!r} must be a dict of pass configs, got {value!r}")


def merged_pass_configs(base: Mapping[str, Any] | None, config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The compile options' pass configs with the config's own laid over them (None when neither has any)."""
    extra = config.get(PASS_CONFIGS)
    if not base and not extra:
        return None
    return {**(base or {}), **(extra or {})}


def tuned_names(configs: Sequence[Mapping[str, Any]]) -> set[str]:
    """Every parameter some config sets."""
    return {k for config in configs for k in config if k not in RESERVED_KEYS}
