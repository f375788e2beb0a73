"""TVM's `tvm.target`: `Target(spec)` is a tilecraft `Target`, parsed from TVM's spelling.

TVM's kinds and options are translated first: `llvm` (the host CPU) is tilecraft's `c`, `rocm` its
`hip`, and `-mcpu=` of an AMD target is tilecraft's `-arch=`. The result is tilecraft's object (`.kind`
is the kind's name, `.attr("arch")` an attribute), which `tilelang.jit(target=...)` and
`tilelang.compile(target=...)` take.
"""

from __future__ import annotations

from tilecraft.backend.errors import TargetError
from tilecraft.compat.tvm._mapped import _StandsFor, refusing

_KINDS = {"llvm": "c", "rocm": "hip"}
_HOST_KINDS = ("llvm", "c", "cpu")


def _translate(spec: str) -> str:
    words = str(spec).split()
    if not words:
        raise TargetError("tvm.target.Target needs a target, e.g. 'cuda -arch=sm_90a' or 'llvm'")
    kind = _KINDS.get(words[0], words[0])
    rest = [w.replace("-mcpu=", "-arch=", 1) if kind == "hip" else w for w in words[1:]]
    if kind == "c":  # TVM's llvm options (-mtriple, -mcpu, -mattr, -keys) describe LLVM's code generation
        rest = []
    return " ".join([kind, *rest])


def _make(target, host=None):
    from tilecraft.backend.target import Target as TilecraftTarget

    if isinstance(target, TilecraftTarget):
        return target
    if isinstance(target, dict):
        return TilecraftTarget.parse(target)
    if host is not None and str(host).split()[0] not in _HOST_KINDS:
        raise TargetError(
            f"tvm.target.Target(..., host={host!r}): tilecraft's host code runs on the host CPU; give no "
            "host, or 'llvm' / 'c'"
        )
    return TilecraftTarget.parse(_translate(target))


def _target_class():
    from tilecraft.backend.target import Target as TilecraftTarget

    def current(allow_none: bool = True):
        """TVM's innermost `with target:` scope; tilecraft has no target scopes, so there is none."""
        if allow_none:
            return None
        raise TargetError(
            "tvm.target.Target.current(): tilecraft has no `with target:` scopes; pass the target to "
            "tilelang.jit(target=...) or tilelang.compile(target=...)"
        )

    def new(cls, target, host=None):
        return _make(target, host)

    namespace = {
        "ir_class": TilecraftTarget,
        "__new__": new,
        "__module__": "tvm.target",
        "__doc__": "TVM's `tvm.target.Target`: tilecraft's Target, parsed from TVM's spelling",
        "current": staticmethod(current),
    }
    return _StandsFor("Target", (), namespace)


Target = _target_class()

__all__ = ["Target"]
__getattr__ = refusing("tvm.target")
