"""Target kinds: the per-kind rules (aliases, normalizer, detector) that backends register.

Shared code knows no kind by name. A backend package registers its `TargetKind` from its own
`target.py`; the table below is filled only by those registrations.

Detection convention: `"auto"` runs detectors in ascending `detect_priority`. Accelerators take low
numbers (tried first, 0-49), host processors the highest ones (tried last, 90-99), so a machine with a
GPU picks the GPU and every machine still finds a target. A kind registered with `auto=False` is never
chosen by `"auto"`: it is used only when named, though its detector still answers whether it is present
(for `tilecraft doctor` and tests that run on every kind present).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from typing import TYPE_CHECKING, Any

from tilecraft.backend.errors import TargetError

if TYPE_CHECKING:
    from tilecraft.backend.capabilities import CapabilityFacts
    from tilecraft.backend.target import Target

Attrs = dict[str, Any]
Normalizer = Callable[[Attrs], Mapping[str, Any]]
# A detector returns the Target it found, None (nothing found) or a string saying why not; it may raise.
Detector = Callable[[], "Target | str | None"]

_KIND_NAME = re.compile(r"[a-z][a-z0-9_]*")
_ATTRIBUTE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RESERVED_NAMES = ("auto",)


@dataclass(frozen=True)
class TargetKind:
    """How one target kind is spelled, normalized and detected.

    `attributes` declares every attribute the kind knows, in the order messages list them: target parsing
    rejects any other (naming the close match and the allowed ones) before the normalizer runs, and a
    normalizer that returns an undeclared one is a backend bug reported as such. None leaves the
    attribute names to the normalizer.

    `normalize` receives a mutable copy of the parsed attributes and returns the canonical ones; it must
    reject impossible values with the choices, and be idempotent (`check_idempotent` in
    tilecraft.backend.target verifies it on `examples`). `detect` runs only when asked (a target of
    `"auto"`, a detection report), never at import. `auto=False` keeps the kind out of `"auto"`: for a
    kind that can run here but should be chosen only by name.

    `capabilities` builds the record of what a target of the kind has (`Capabilities`, from its
    canonical attributes: tilecraft/backend/capabilities.py), which the shared check and the backend's
    passes read; None declares none (a record that knows nothing and refuses nothing).
    """

    name: str
    aliases: tuple[str, ...] = ()
    normalize: Normalizer | None = None
    detect: Detector | None = None
    detect_priority: int = 50
    doc: str = ""
    examples: tuple[str | Mapping[str, Any], ...] = ()
    auto: bool = True
    # Last, so that kinds written with positional fields before it was added keep their meaning.
    attributes: tuple[str, ...] | None = None
    capabilities: CapabilityFacts | None = None

    def __post_init__(self) -> None:
        for name in (self.name, *self.aliases):
            _check_kind_name(name)
        if not isinstance(self.auto, bool):
            raise TargetError(f"target kind {self.name!r}: auto must be True or False, got {self.auto!r}")
        if len(set(self.aliases)) != len(self.aliases) or self.name in self.aliases:
            raise TargetError(f"target kind {self.name!r}: aliases must be unique and differ from the name")
        if self.attributes is not None:
            object.__setattr__(self, "attributes", _check_attribute_names(self.name, self.attributes))
        for label, fn in (("normalize", self.normalize), ("detect", self.detect), ("capabilities", self.capabilities)):
            if fn is not None and not callable(fn):
                raise TargetError(f"target kind {self.name!r}: {label} must be callable or None")


def _check_attribute_names(kind: str, attributes: Any) -> tuple[str, ...]:
    if not isinstance(attributes, (tuple, list)) or not all(
        isinstance(a, str) and _ATTRIBUTE.fullmatch(a) for a in attributes
    ):
        raise TargetError(
            f"target kind {kind!r}: attributes must be a tuple of names matching {_ATTRIBUTE.pattern}, "
            f"got {attributes!r}"
        )
    names = tuple(attributes)
    if len(set(names)) != len(names):
        raise TargetError(f"target kind {kind!r}: attributes {names} name one attribute twice")
    return names


def check_attributes(kind: TargetKind, attrs: Mapping[str, Any], written: bool = True) -> None:
    """Reject attributes `kind` does not declare: as written by the user (with the close match and the
    allowed list), or, with `written=False`, as returned by its normalizer (a backend bug)."""
    if kind.attributes is None:
        return
    unknown = sorted(key for key in attrs if key not in kind.attributes)
    if not unknown:
        return
    allowed = ", ".join(kind.attributes) or "(none)"
    if not written:
        raise TargetError(
            f"the normalizer of target kind {kind.name!r} returned undeclared attribute(s) "
            f"{', '.join(unknown)}; declared: {allowed} (a bug in the backend: declare them or drop them)"
        )
    hints = [
        f"-{close[0]} for -{key}" for key in unknown if (close := get_close_matches(key, kind.attributes, 1))
    ]
    raise TargetError(
        f"target {kind.name}: unknown attribute(s) {', '.join(unknown)}; allowed: {allowed}"
        + (f" (did you mean {', '.join(hints)}?)" if hints else "")
    )


def _check_kind_name(name: str) -> None:
    if not isinstance(name, str) or not _KIND_NAME.fullmatch(name):
        raise TargetError(f"target kind name {name!r} must match {_KIND_NAME.pattern}")
    if name in RESERVED_NAMES:
        raise TargetError(f"target kind name {name!r} is reserved; reserved: {', '.join(RESERVED_NAMES)}")


class KindTable:
    """Registered kinds by name, and alias -> kind name."""

    def __init__(self) -> None:
        self.kinds: dict[str, TargetKind] = {}
        self.aliases: dict[str, str] = {}
        # variant spelling -> kind: `Target.parse("v -arch=x")` is `kind -arch=x -backend=v`
        self.variants: dict[str, str] = {}
        self.lock = threading.RLock()

    def snapshot(self) -> tuple[dict[str, TargetKind], dict[str, str], dict[str, str]]:
        return dict(self.kinds), dict(self.aliases), dict(self.variants)

    def restore(self, state: tuple) -> None:
        self.kinds, self.aliases = dict(state[0]), dict(state[1])
        self.variants = dict(state[2]) if len(state) > 2 else {}


KINDS = KindTable()


def register_target_kind(kind: TargetKind) -> TargetKind:
    """Register a kind and its aliases; the same kind again is harmless, a conflicting one an error."""
    with KINDS.lock:
        existing = KINDS.kinds.get(kind.name)
        if existing is not None:
            if existing == kind:
                return existing
            raise TargetError(f"target kind {kind.name!r} is already registered with different rules")
        _check_names_free(kind)
        KINDS.kinds[kind.name] = kind
        KINDS.aliases.update(dict.fromkeys(kind.aliases, kind.name))
        return kind


def _check_names_free(kind: TargetKind) -> None:
    for name in (kind.name, *kind.aliases):
        owner = KINDS.aliases.get(name) or (name if name in KINDS.kinds else None) or KINDS.variants.get(name)
        if owner is not None:
            raise TargetError(f"target kind {kind.name!r}: name {name!r} is already used by kind {owner!r}")


def register_target_variant(name: str, kind: str) -> str:
    """Let `name` stand for `kind -backend=name` in target strings and dicts (TileLang's spelling of a
    backend variant of a kind another backend owns): the variant backend's target.py calls it.
    The same spelling again is harmless; a name some kind, alias or other variant uses is an error."""
    _check_kind_name(name)
    with KINDS.lock:
        if KINDS.variants.get(name) == kind:
            return name
        owner = KINDS.aliases.get(name) or (name if name in KINDS.kinds else None) or KINDS.variants.get(name)
        if owner is not None:
            raise TargetError(
                f"target variant {name!r} of kind {kind!r}: the name is already used by kind {owner!r}"
            )
        if kind not in KINDS.kinds:
            raise TargetError(f"target variant {name!r}: kind {kind!r} is not registered; {describe_kinds()}")
        KINDS.variants[name] = kind
        return name


def variant_kind(name: str) -> str | None:
    """The kind a variant spelling stands for (register_target_variant), or None."""
    from tilecraft.backend._loader import ensure_backends

    if name in KINDS.kinds or name in KINDS.aliases:
        return None
    ensure_backends()
    return KINDS.variants.get(name)


def unregister_target_kind(name: str) -> None:
    """Remove a kind and its aliases (for tests)."""
    with KINDS.lock:
        kind = KINDS.kinds.pop(name, None)
        for alias in kind.aliases if kind else ():
            KINDS.aliases.pop(alias, None)


def lookup_target_kind(name: str) -> TargetKind:
    """The kind named `name` or one of its aliases; the error lists every kind and alias."""
    from tilecraft.backend._loader import ensure_backends

    ensure_backends()
    kind = KINDS.kinds.get(KINDS.aliases.get(name, name))
    if kind is None:
        close = get_close_matches(name, [*KINDS.kinds, *KINDS.aliases], n=1)
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        raise TargetError(f"unknown target kind {name!r}{guess}; {describe_kinds()}")
    return kind


def registered_target_kinds() -> tuple[TargetKind, ...]:
    """Every registered kind, sorted by name."""
    from tilecraft.backend._loader import ensure_backends

    ensure_backends()
    return tuple(KINDS.kinds[name] for name in sorted(KINDS.kinds))


def describe_kinds() -> str:
    """'registered kinds: a, b; aliases: x -> a', for error messages."""
    if not KINDS.kinds:
        return "no target kinds are registered (is a backend package importable?)"
    text = f"registered kinds: {', '.join(sorted(KINDS.kinds))}"
    if KINDS.aliases:
        text += "; aliases: " + ", ".join(f"{a} -> {k}" for a, k in sorted(KINDS.aliases.items()))
    if KINDS.variants:
        text += "; variants: " + ", ".join(
            f"{v} -> {k} -backend={v}" for v, k in sorted(KINDS.variants.items())
        )
    return text
