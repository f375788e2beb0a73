"""PrimFunc and IRModule."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Node, Var, node
from tilecraft.ir.stmt import Annotations, Stmt, annotation

Param = Buffer | Var

# The attribute listing the indices of the parameters that are global scratch buffers the function
# allocated itself (`T.alloc_global`): the last parameters; each call allocates them, callers pass none.
WORKSPACE_ATTR = "tilecraft.workspace"
# The kernel's own compile options, set in its body (T.annotate_pass_configs, T.annotate_compile_flags): pass
# configs as (key, value) pairs, which the caller's override, and device compiler flags, before the caller's.
PASS_CONFIGS_ATTR = "tilecraft.pass_configs"
COMPILE_FLAGS_ATTR = "tilecraft.compile_flags"
OUT_IDX_ATTR = "tilecraft.out_idx"
# TileLang's names of the same attributes, which its programs read as `func.attrs["tilelang_out_idx"]`.
TILELANG_ATTR_NAMES = {
    "tilelang_out_idx": OUT_IDX_ATTR,
    "tilelang_pass_configs": PASS_CONFIGS_ATTR,
    "tilelang_compile_flags": COMPILE_FLAGS_ATTR,
}


class FunctionAttrs(tuple):
    """A function's attributes: `(key, value)` pairs in order, readable by key as TVM's `func.attrs` map
    is (`"k" in f.attrs`, `f.attrs["k"]`, `f.attrs.get("k")`), TileLang's names of tilecraft's own
    attributes included (`TILELANG_ATTR_NAMES`; `tilelang_out_idx` gives the output parameters'
    positions from the start, where TileLang counts them from the end)."""

    __slots__ = ()

    def _value(self, key: str) -> tuple[bool, Any]:
        key = TILELANG_ATTR_NAMES.get(key, key)
        for k, v in tuple.__iter__(self):
            if k == key:
                return True, v
        return False, None

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            return self._value(item)[0]
        return tuple.__contains__(self, item)

    def __getitem__(self, item):
        if not isinstance(item, str):
            return tuple.__getitem__(self, item)
        found, value = self._value(item)
        if not found:
            raise KeyError(item)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        found, value = self._value(key)
        return value if found else default

    def keys(self) -> list[str]:
        return [k for k, _ in tuple.__iter__(self)]


# The names of the parameters annotated T.ptr: addresses, which a call may pass as arrays.
POINTER_PARAMS_ATTR = "tilecraft.pointer_params"


@node
class PrimFunc(Node):
    """A kernel function: typed parameters (buffers and scalars) and a body.

    Symbolic dims are the Vars that appear in parameter shapes and are not parameters themselves;
    they are bound from the actual arrays at each call.
    """

    name: str
    params: tuple[Param, ...]
    body: Stmt
    attrs: Annotations = ()

    def __post_init__(self) -> None:
        if type(self.attrs) is not FunctionAttrs:
            object.__setattr__(self, "attrs", FunctionAttrs(self.attrs))

    def attr(self, key: str, default: Any = None) -> Any:
        return annotation(self.attrs, key, default)

    def with_attr(self, key: str, value: Any) -> PrimFunc:
        attrs = tuple((k, v) for k, v in self.attrs if k != key) + ((key, value),)
        return PrimFunc(self.name, self.params, self.body, attrs, span=self.span)

    def with_body(self, body: Stmt) -> PrimFunc:
        return PrimFunc(self.name, self.params, body, self.attrs, span=self.span)

    def without_attr(self, key: str) -> PrimFunc:
        attrs = tuple((k, v) for k, v in self.attrs if k != key)
        return PrimFunc(self.name, self.params, self.body, attrs, span=self.span)

    @property
    def buffer_params(self) -> tuple[Buffer, ...]:
        return tuple(p for p in self.params if isinstance(p, Buffer))

    @property
    def buffer_map(self) -> dict[Buffer, Buffer]:
        """TVM's map from a parameter to its buffer: here the buffer parameters are the buffers."""
        return {p: p for p in self.buffer_params}

    @property
    def symbolic_dims(self) -> tuple[Var, ...]:
        """Vars in parameter shapes and strides, in order of first appearance."""
        from tilecraft.ir.visitor import free_vars

        seen: dict[Var, None] = {}
        scalars = {p for p in self.params if isinstance(p, Var)}
        for buf in self.buffer_params:
            for e in (*buf.shape, *buf.strides):
                for v in free_vars(e):
                    if v not in scalars:
                        seen.setdefault(v, None)
        return tuple(seen)

    def script(self) -> str:
        from tilecraft.ir.printer import print_ir

        return print_ir(self)

    def __str__(self) -> str:
        return self.script()


@dataclass(frozen=True)
class IRModule:
    """Named PrimFuncs; the unit that passes transform and backends lower."""

    functions: tuple[PrimFunc, ...] = field(default=())
    attrs: Annotations = ()

    @staticmethod
    def from_func(func: PrimFunc) -> IRModule:
        return IRModule((func,))

    def __getitem__(self, name: str) -> PrimFunc:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(f"no function {name!r} in module; functions: {[f.name for f in self.functions]}")

    def attr(self, key: str, default: Any = None) -> Any:
        return annotation(self.attrs, key, default)

    def with_functions(self, functions) -> IRModule:
        return IRModule(tuple(functions), self.attrs)

    def with_attr(self, key: str, value: Any) -> IRModule:
        attrs = tuple((k, v) for k, v in self.attrs if k != key) + ((key, value),)
        return IRModule(self.functions, attrs)

    def script(self) -> str:
        from tilecraft.ir.printer import print_ir

        return print_ir(self)

    def __str__(self) -> str:
        return self.script()
