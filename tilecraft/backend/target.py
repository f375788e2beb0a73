"""`Target`: a target kind plus canonical attributes, and its parsing.

Accepted spellings::

    Target.parse("k")                       # a kind (or an alias of one)
    Target.parse("k -arch=x1 -count=132")   # -key=value attributes; ints become int, true/false bool
    Target.parse("k -fast")                 # a flag: fast=True
    Target.parse({"kind": "k", "arch": "x1"})
    Target.parse(target)                    # re-normalized
    Target.parse("auto") / Target.parse(None)   # TILECRAFT_TARGET if set, else hardware detection
    Target.parse("k -backend=v")            # a backend variant v of kind k (registry.backend_for)
    Target.parse("v -arch=x1")              # the same, where v is a registered variant spelling

Every kind accepts `-backend=NAME`: it names the backend manifest that handles the target when a kind
has several (a variant, BackendModule.variant). The kind's normalizer never sees it.

`str(target)` is canonical (attributes sorted, flags bare) and parses back to an equal target.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from tilecraft.backend.errors import TargetError
from tilecraft.backend.target_kind import check_attributes, lookup_target_kind, variant_kind
from tilecraft.errors import TilecraftError

if TYPE_CHECKING:
    from tilecraft.backend.capabilities import Capabilities

AttrValue = str | int | bool
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"-?[0-9]+")
_BACKEND_NAME = re.compile(r"[a-z][a-z0-9_-]*")
AUTO = "auto"
# The attribute every kind accepts: the backend variant that handles the target (registry.backend_for).
BACKEND_ATTR = "backend"
# Kinds whose targets resolve to another target for this process (`redirect_kind`), and whether a
# redirect is being resolved now (its own resolution sees the kinds as they are).
_redirects: dict[str, Callable[[], Target]] = {}
_redirecting = threading.local()


def parse_value(text: str) -> AttrValue:
    """How an attribute value is read from a target string: true/false, a decimal int, else a string."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    return int(text) if _INT.fullmatch(text) else text


def format_value(value: AttrValue) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


@dataclass(frozen=True)
class Target:
    """A target kind and its attributes, kept as a tuple of (key, value) pairs sorted by key.

    Constructing a Target directly does not normalize it; `Target.parse` does (aliases resolved, the
    kind's normalizer applied). Values are str, int or bool and must survive `str()` -> `parse()`.
    """

    kind: str
    attrs: tuple[tuple[str, AttrValue], ...] = field(default=())

    def __post_init__(self) -> None:
        pairs = tuple(self.attrs.items()) if isinstance(self.attrs, Mapping) else tuple(self.attrs)
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise TargetError(f"target {self.kind!r}: duplicate attributes in {keys}")
        for key, value in pairs:
            _check_attr(self.kind, key, value)
        object.__setattr__(self, "attrs", tuple(sorted(pairs)))

    @staticmethod
    def parse(value: Target | str | Mapping[str, Any] | None) -> Target:
        """Parse and normalize a target spelling; see the module docstring for what is accepted."""
        if value is None or value == AUTO:
            return _default_target()
        if isinstance(value, Target):
            return normalize(value.kind, dict(value.attrs))
        if isinstance(value, str):
            return _parse_string(value)
        if isinstance(value, Mapping):
            return _parse_mapping(value)
        raise TargetError(
            f"cannot make a target from {type(value).__name__} {value!r}; give a string such as "
            "'kind -key=value', a dict with a 'kind' key, a Target, or 'auto'"
        )

    def attr(self, key: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    @property
    def capabilities(self) -> Capabilities:
        """What this target has: the record its kind builds from the attributes (backend/capabilities.py)."""
        from tilecraft.backend.capabilities import capabilities_of

        return capabilities_of(self)

    @property
    def attrs_dict(self) -> Mapping[str, AttrValue]:
        return MappingProxyType(dict(self.attrs))

    def with_attrs(self, **values: AttrValue) -> Target:
        """A copy with attributes added or replaced (not normalized)."""
        return replace(self, attrs={**dict(self.attrs), **values})

    def __str__(self) -> str:
        parts = [self.kind]
        for key, value in self.attrs:
            parts.append(f"-{key}" if value is True else f"-{key}={format_value(value)}")
        return " ".join(parts)


def _check_attr(kind: str, key: Any, value: Any) -> None:
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise TargetError(f"target {kind!r}: attribute name {key!r} must match {_KEY.pattern}")
    if not isinstance(value, (str, int)):
        raise TargetError(
            f"target {kind!r}: attribute {key}={value!r} has type {type(value).__name__}; "
            "allowed: str, int, bool"
        )
    if not _reads_back(value):
        raise TargetError(
            f"target {kind!r}: attribute {key}={value!r} would not read back from a target string; "
            "use an int or bool for numbers and flags, and strings without spaces"
        )


def _reads_back(value: AttrValue) -> bool:
    text = format_value(value)
    if not text or any(c.isspace() for c in text):
        return False
    parsed = parse_value(text)
    return type(parsed) is type(value) and parsed == value


def _parse_string(text: str) -> Target:
    words = text.split()
    if not words:
        raise TargetError("empty target string; give a kind such as 'kind -key=value', or 'auto'")
    attrs: dict[str, AttrValue] = {}
    for word in words[1:]:
        key, value = _parse_option(text, word)
        if key in attrs:
            raise TargetError(f"target {text!r}: attribute -{key} is given twice")
        attrs[key] = value
    return normalize(words[0], attrs)


def _parse_option(text: str, word: str) -> tuple[str, AttrValue]:
    if not word.startswith("-") or word.startswith("--") or word in ("-", "-="):
        raise TargetError(
            f"target {text!r}: cannot read {word!r}; attributes are written -key=value or -flag"
        )
    key, sep, value = word[1:].partition("=")
    if sep and not value:
        raise TargetError(f"target {text!r}: attribute -{key}= has no value; write -{key}=value or -{key}")
    return key, parse_value(value) if sep else True


def _parse_mapping(value: Mapping[str, Any]) -> Target:
    attrs = dict(value)
    kind = attrs.pop("kind", None)
    if not isinstance(kind, str):
        raise TargetError(
            f"target dict {value!r} needs a 'kind' string, e.g. {{'kind': 'k', 'key': 'value'}}"
        )
    if kind == AUTO and not attrs:
        return _default_target()
    return normalize(kind, attrs)


def normalize(kind_name: str, attrs: Mapping[str, Any]) -> Target:
    """Resolve `kind_name` (an alias, or a variant spelling) and apply its normalizer to `attrs`; the
    `backend` attribute is kept as written, beside the canonical ones."""
    attrs = dict(attrs)
    variant = variant_kind(kind_name)
    if variant is not None:
        if attrs.get(BACKEND_ATTR, kind_name) != kind_name:
            raise TargetError(
                f"target {kind_name!r} is kind {variant!r} with -backend={kind_name}; it cannot also name "
                f"-backend={attrs[BACKEND_ATTR]}"
            )
        kind_name, attrs[BACKEND_ATTR] = variant, kind_name
    kind = lookup_target_kind(kind_name)
    if kind.name in _redirects and not getattr(_redirecting, "on", False):
        return _redirected(kind.name)
    raw = Target(kind.name, tuple(attrs.items()))  # validates what was written before the normalizer sees it
    backend = _backend_name(kind.name, attrs.pop(BACKEND_ATTR, None))
    check_attributes(kind, attrs)
    if kind.normalize is None:
        return raw
    try:
        canonical = dict(kind.normalize(dict(attrs)))
    except TilecraftError:
        raise
    except Exception as err:
        raise TargetError(f"target kind {kind.name!r} rejects attributes {dict(attrs)}: {err}") from err
    check_attributes(kind, canonical, written=False)
    if backend is not None:
        canonical[BACKEND_ATTR] = backend
    return Target(kind.name, tuple(canonical.items()))


def redirect_kind(kind_name: str, to: Callable[[], Target] | None) -> None:
    """Make every target of kind `kind_name`, however written, resolve to `to()` in this process (None
    ends it).

    For an emulation that stands in for one kind's device on another target: a program that names the
    emulated kind runs where the emulation runs (the compatibility layer's emulated device sends a kernel
    that names its kind to the host target that `"auto"` resolves to). While `to()` runs, targets
    resolve unredirected, so a `to` that resolves the same kind gets it as written.
    """
    name = lookup_target_kind(kind_name).name
    if to is None:
        _redirects.pop(name, None)
    else:
        _redirects[name] = to


@contextlib.contextmanager
def unredirected() -> Iterator[None]:
    """Targets parsed inside resolve as written, without `redirect_kind`'s redirects: for code that
    describes a kind's device (its compute capability, its limits) rather than choosing where to run."""
    saved = getattr(_redirecting, "on", False)
    _redirecting.on = True
    try:
        yield
    finally:
        _redirecting.on = saved


def _redirected(kind_name: str) -> Target:
    with unredirected():
        return _redirects[kind_name]()


def _backend_name(kind: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _BACKEND_NAME.fullmatch(value):
        raise TargetError(
            f"target {kind}: -{BACKEND_ATTR}= names a backend manifest ({_BACKEND_NAME.pattern}), got {value!r}"
        )
    return value


def _default_target() -> Target:
    from tilecraft import settings
    from tilecraft.backend.detection import detect_target

    configured = settings.get("TILECRAFT_TARGET")
    if configured and configured.strip() != AUTO:
        try:
            return Target.parse(configured)
        except TargetError as err:
            # The user did not write this target in the call; say where it came from.
            raise TargetError(f"TILECRAFT_TARGET={configured!r} is not a valid target: {err}") from None
    return detect_target()


def check_idempotent(kind_name: str, samples: Iterable[str | Mapping[str, Any]] = ()) -> tuple[Target, ...]:
    """Check that normalizing twice changes nothing and that `str()` round-trips, on the kind's
    `examples` plus `samples`; returns the checked targets, raises TargetError naming the first failure."""
    kind = lookup_target_kind(kind_name)
    checked = []
    for sample in (*kind.examples, *samples) or (kind.name,):
        once = Target.parse(sample)
        twice = Target.parse(once)
        if twice != once:
            raise TargetError(f"normalizer of kind {kind.name!r} is not idempotent: {once} -> {twice}")
        if Target.parse(str(once)) != once:
            raise TargetError(f"target {once} does not parse back from its string {str(once)!r}")
        checked.append(once)
    return tuple(checked)
