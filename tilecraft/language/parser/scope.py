"""Name scopes of a kernel being parsed."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_MISSING = object()

# Scopes whose bodies become IR (run many times or conditionally): re-binding an outer name inside
# them would not do what Python code suggests, so the parser refuses it.
IR_BODY_KINDS = ("ir_loop", "ir_branch")


@dataclass
class Scope:
    kind: str
    parent: Scope | None = None
    names: dict[str, Any] = field(default_factory=dict)
    loop_kind: Any = None  # the ForKind of an IR loop's body scope (T.reducer_update asks for T.Parallel)

    def lookup(self, name: str) -> Any:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return _MISSING

    def owner(self, name: str) -> Scope | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope
            scope = scope.parent
        return None

    def crosses_ir_body(self, owner: Scope) -> bool:
        """Whether an IR loop or branch lies between this scope and `owner`."""
        scope: Scope | None = self
        while scope is not None and scope is not owner:
            if scope.kind in IR_BODY_KINDS:
                return True
            scope = scope.parent
        return False

    def inside_ir_body(self) -> bool:
        """Whether an IR loop, branch or kernel lies between this scope and its function or macro."""
        scope: Scope | None = self
        while scope is not None and scope.kind not in ("function", "macro"):
            if scope.kind in (*IR_BODY_KINDS, "kernel"):
                return True
            scope = scope.parent
        return False


class Namespace(Mapping):
    """The names an expression sees: kernel scopes, then the function's closure and globals, then builtins."""

    def __init__(self, scope: Scope, env: Mapping[str, Any]) -> None:
        self.scope = scope
        self.env = env

    def __getitem__(self, name: str) -> Any:
        value = self.scope.lookup(name)
        if value is not _MISSING:
            return value
        if name in self.env:
            return self.env[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise KeyError(name)

    def __iter__(self):
        seen = set()
        scope: Scope | None = self.scope
        while scope is not None:
            for k in scope.names:
                if k not in seen:
                    seen.add(k)
                    yield k
            scope = scope.parent
        for k in self.env:
            if k not in seen:
                yield k

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def flat(self) -> dict[str, Any]:
        """A plain dict (for Python's own eval of lambdas and comprehensions)."""
        merged = dict(self.env)
        chain = []
        scope: Scope | None = self.scope
        while scope is not None:
            chain.append(scope.names)
            scope = scope.parent
        for names in reversed(chain):
            merged.update(names)
        return merged
