"""Source post-processors: user functions that rewrite a generated device source before it is compiled.

A post-processor is registered for one source format (a backend's device source format), not for a
target, so this module names no backend; a backend offers the registration under its own name. `DeviceCodegen.generate` applies the one registered for each source
format it produced, after the source step and before the compile step, as `func(code, target) -> code`
(the signature of TileLang's post-processing callbacks). The registered functions are part of the artifact's
cache key (`fingerprint()`), so registering one never reuses a kernel generated without it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from tilecraft.backend.formats import check_format
from tilecraft.errors import BackendError

SourcePostproc = Callable[[str, Any], str]

_REGISTERED: dict[str, SourcePostproc] = {}


def register_source_postproc(fmt: str, func: SourcePostproc, override: bool = True) -> None:
    """Rewrite every generated `fmt` source with `func(code, target)` from now on in this process.

    One function per format: `override=False` refuses to replace one already registered."""
    check_format("register_source_postproc", fmt)
    if not callable(func):
        raise BackendError(f"a {fmt} post-processor must be callable, got {type(func).__name__}")
    if not override and fmt in _REGISTERED and _REGISTERED[fmt] is not func:
        raise BackendError(
            f"a {fmt} post-processor is already registered ({_describe(_REGISTERED[fmt])}); "
            "pass override=True to replace it, or unregister_source_postproc first"
        )
    _REGISTERED[fmt] = func


def unregister_source_postproc(fmt: str) -> None:
    """Forget the post-processor of `fmt`, if any."""
    _REGISTERED.pop(fmt, None)


def apply_postprocs(sources: Mapping[str, str], target: Any) -> dict[str, str]:
    """`sources` with each format's post-processor applied; a result that is not a str is an error."""
    result = dict(sources)
    for fmt, code in sources.items():
        func = _REGISTERED.get(fmt)
        if func is None:
            continue
        rewritten = func(code, target)
        if not isinstance(rewritten, str):
            raise BackendError(
                f"{fmt} post-processor {_describe(func)} returned {type(rewritten).__name__}; "
                "it must return the rewritten source as a str"
            )
        result[fmt] = rewritten
    return result


def fingerprint() -> tuple[tuple[str, str], ...]:
    """What the registered post-processors are, for cache keys: format and a hash of each function."""
    return tuple((fmt, _function_hash(func)) for fmt, func in sorted(_REGISTERED.items()))


def _describe(func: Callable) -> str:
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"


def _function_hash(func: Callable) -> str:
    # The bytecode and constants say what the function does; the name alone would let an edited
    # function reuse kernels the old one produced.
    code = getattr(func, "__code__", None)
    body = repr(func) if code is None else repr((code.co_code, code.co_consts, code.co_names))
    return hashlib.sha256(f"{_describe(func)}:{body}".encode()).hexdigest()[:16]
