"""The classes that printed IR names in its generic form, `T.ir.<name>(field=value, ...)`.

Every IR node class (made with `@node`) registers itself here, and so does every value class decorated
`@ir_value` (layouts and the other values that statements and annotations hold), wherever it is defined:
a backend's own nodes print and parse back without any shared file naming them.

A class's printed name is its class name, qualified by the package that defines it when that is not
tilecraft's core: `KernelCall` for `tilecraft.ir.host.KernelCall`, `mybackend.Barrier` for a class of
`tilecraft.mybackend.ir` or of an out-of-tree package `mybackend`. Its fields are its dataclass fields
(`span` aside); a value class that is not a dataclass lists them itself, by an `ir_fields()` method
returning the keyword arguments its constructor takes back.
"""

from __future__ import annotations

import dataclasses
import threading
import typing
from functools import cache
from typing import Any

# Packages of tilecraft whose classes print unqualified: the IR itself and the layout algebra.
_CORE = ("tilecraft.ir", "tilecraft.layout")

_lock = threading.Lock()
_classes: dict[str, type] = {}


def qualified_name(cls: type) -> str:
    """The name `T.ir.<name>` that printed IR spells `cls` with."""
    module = cls.__module__
    if any(module == core or module.startswith(core + ".") for core in _CORE):
        return cls.__qualname__
    parts = module.split(".")
    package = parts[1] if parts[0] == "tilecraft" and len(parts) > 1 else parts[0]
    return f"{package}.{cls.__qualname__}"


def register(cls: type) -> type:
    """Record `cls` under its qualified name; a class of the same module and name replaces an earlier one
    (a reloaded module), another class of that name is an error."""
    name = qualified_name(cls)
    with _lock:
        known = _classes.get(name)
        if known is not None and known is not cls and known.__module__ != cls.__module__:
            raise TypeError(
                f"IR class name {name!r} is taken by {known.__module__}.{known.__qualname__}; "
                f"{cls.__module__}.{cls.__qualname__} needs another name"
            )
        _classes[name] = cls
    return cls


def ir_value(cls: type) -> type:
    """Class decorator: instances of `cls` (a layout, say) may appear in IR and print as
    `T.ir.<name>(...)`; a dataclass needs nothing more, another class defines `ir_fields()`."""
    if not dataclasses.is_dataclass(cls) and not callable(getattr(cls, "ir_fields", None)):
        raise TypeError(f"{cls.__qualname__}: an IR value class is a dataclass or defines ir_fields()")
    return register(cls)


def lookup(name: str) -> type | None:
    """The class registered as `name`, or None."""
    with _lock:
        return _classes.get(name)


def registered_names() -> tuple[str, ...]:
    with _lock:
        return tuple(sorted(_classes))


def is_registered(obj: Any) -> bool:
    cls = type(obj)
    return lookup(qualified_name(cls)) is cls


def fields_of(obj: Any) -> dict[str, Any]:
    """The keyword arguments that construct `obj` again."""
    if dataclasses.is_dataclass(obj):
        return {f.name: getattr(obj, f.name) for f in _init_fields(type(obj))}
    return dict(obj.ir_fields())


def defaults_of(cls: type) -> dict[str, Any]:
    """The default of each field of a dataclass that has one."""
    if not dataclasses.is_dataclass(cls):
        return {}
    out = {}
    for f in _init_fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def required_fields(cls: type) -> tuple[str, ...]:
    """The fields a dataclass's constructor cannot do without."""
    if not dataclasses.is_dataclass(cls):
        return ()
    return tuple(f.name for f in _init_fields(cls) if f.name not in defaults_of(cls))


@cache
def _init_fields(cls: type) -> tuple[dataclasses.Field, ...]:
    return tuple(f for f in dataclasses.fields(cls) if f.init and f.name != "span")


@cache
def field_types(cls: type) -> dict[str, Any]:
    """Each field's annotation, resolved (empty for a class whose annotations do not resolve)."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):
        return {}


def _members(hint: Any) -> tuple[Any, ...]:
    """The alternatives of a union annotation (the annotation itself otherwise)."""
    if typing.get_origin(hint) in (typing.Union, _UnionType):
        return typing.get_args(hint)
    return (hint,)


_UnionType = type(int | str)


def numbers_are_exprs(hint: Any) -> bool:
    """Whether a field annotated `hint` holds a Python number only as an IR constant (it takes IR
    expressions and no Python numbers), so a number in printed IR means a constant of the default dtype."""
    from tilecraft.ir.expr import Expr

    members = [m for m in _members(hint) if m is not type(None)]
    exprs = [m for m in members if isinstance(m, type) and issubclass(m, Expr)]
    return bool(exprs) and len(exprs) == len(members)


def item_hint(hint: Any, index: int) -> Any:
    """The annotation of item `index` of a tuple annotated `hint` (None when unknown)."""
    for member in _members(hint):
        if typing.get_origin(member) is tuple:
            args = typing.get_args(member)
            if len(args) == 2 and args[1] is Ellipsis:
                return args[0]
            if index < len(args):
                return args[index]
    return None


def coerce(value: Any, hint: Any) -> Any:
    """A parsed field value as the field annotated `hint` holds it: numbers become IR constants where
    only expressions belong, dtype names become DataTypes, a buffer where only a region belongs is its
    whole region (the printer writes a whole region as the buffer's name), and tuples are coerced item
    by item."""
    from tilecraft.ir.buffer import Buffer, BufferRegion
    from tilecraft.ir.dtype import DataType, as_dtype
    from tilecraft.ir.expr import convert

    if hint is None:
        return value
    if isinstance(value, Buffer) and _members(hint) == (BufferRegion,):
        return value.full_region()
    if isinstance(value, (bool, int, float)) and numbers_are_exprs(hint):
        return convert(value)
    if isinstance(value, str) and DataType in _members(hint):
        return as_dtype(value)
    if isinstance(value, (tuple, list)) and any(typing.get_origin(m) is tuple for m in _members(hint)):
        return tuple(coerce(v, item_hint(hint, k)) for k, v in enumerate(value))
    return value
