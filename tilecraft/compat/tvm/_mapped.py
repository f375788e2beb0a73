"""Helpers of tilecraft's `tvm` namespace: refusing what it does not map, and TVM node classes that
stand for tilecraft IR classes."""

from __future__ import annotations

from typing import Any

from tilecraft.compat.hook import UnmappedTvmError, unmapped_tvm_message
from tilecraft.compat.tvm.refused import REFUSED, refusal_reason


def refusing(public: str):
    """A module `__getattr__` for the TVM module `public` (TVM's spelling, `tvm.tirx`): a name it does not
    define raises UnmappedTvmError (an ImportError, so `from tvm.tirx import X` keeps the message) naming
    `public.X`; private and dunder names stay AttributeErrors for the tools that probe them."""

    def __getattr__(name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"module {public!r} has no attribute {name!r}")
        full = f"{public}.{name}"
        raise UnmappedTvmError(unmapped_tvm_message(full, refusal_reason(full)), name=full)

    return __getattr__


class _StandsFor(type):
    """`isinstance(x, tvm.tirx.IntImm)` asks whether x is the tilecraft IR class the TVM class maps to."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, cls.ir_class)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls.ir_class)

    def __repr__(cls) -> str:
        return f"<tvm class {cls.__name__}: tilecraft's {cls.ir_class.__module__}.{cls.ir_class.__name__}>"


def stands_for(module: str, name: str, ir_class: type, make=None) -> type:
    """The TVM class `module.name` (TVM's spelling) whose instances are tilecraft's `ir_class`: calling it
    calls `make` with TVM's arguments; without `make` the class serves isinstance checks and annotations,
    and constructing it is refused."""
    full = f"{module}.{name}"

    def __new__(cls, *args, **kwargs):
        if make is None:
            reason = REFUSED.get(full, f"{full} stands for tilecraft's {ir_class.__name__} in isinstance checks "
                                 "and annotations; build one with tilecraft.language (T.*)")  # fmt: skip
            raise UnmappedTvmError(unmapped_tvm_message(f"{full}(...)", reason), name=full)
        return make(*args, **kwargs)

    doc = f"TVM's `{full}`: tilecraft's {ir_class.__module__}.{ir_class.__name__}"
    namespace = {"ir_class": ir_class, "__new__": __new__, "__doc__": doc, "__module__": module}
    return _StandsFor(name, (), namespace)
