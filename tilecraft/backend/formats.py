"""Small shared checks for names used in manifests: artifact formats and component names."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from tilecraft.errors import BackendError

FORMAT_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
KEBAB_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
# Limit keys (a manifest's `unsupported`, `LoweringError.unsupported`, a target's capabilities): what kind of
# thing is missing, then its name (a tile-op class, a dtype, a feature or a resource in kebab case).
UNSUPPORTED_KINDS = ("op", "dtype", "feature", "resource")
LIMIT_KEY = re.compile(rf"({'|'.join(UNSUPPORTED_KINDS)}):[A-Za-z0-9][A-Za-z0-9_.-]*")


def check_format(owner: str, fmt: Any) -> str:
    """An artifact format name such as 'x-source' or 'x-binary' (lower case, no spaces)."""
    if not isinstance(fmt, str) or not FORMAT_NAME.fullmatch(fmt):
        raise BackendError(f"{owner}: format name {fmt!r} must match {FORMAT_NAME.pattern}")
    return fmt


def check_formats(owner: str, formats: Any) -> tuple[str, ...]:
    formats = tuple(formats)
    for fmt in formats:
        check_format(owner, fmt)
    if len(set(formats)) != len(formats):
        raise BackendError(f"{owner}: formats {formats} contain duplicates")
    return formats


def frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only copy, so a frozen record cannot be changed through a mapping it was given."""
    return MappingProxyType(dict(value or {}))


def first_doc_line(obj: Any) -> str:
    """The first line of an object's docstring, or '' (used to describe predicates and passes)."""
    doc = getattr(obj, "__doc__", None) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""
