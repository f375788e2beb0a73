"""`bound-expression-depth`: after it runs, no expression of a function nests deeper than `HOIST_DEPTH`
levels where it is evaluated unconditionally, and none deeper than `MAX_DEPTH` anywhere.

Every later stage (the semantic check, the passes, the printers, the simplifier, codegen) walks an
expression by recursion, one Python frame or more per level, so a sum of thousands of terms
(`sum(A[i, k] for k in range(2048))` in a kernel) would overflow Python's stack in each of them. Here
the deep part of such an expression is computed first, into an immutable local (a `LetStmt` wrapped
around its statement): `C[i] = a0 + a1 + ... + a2047` becomes `p0 = a0 + ... + a63; p1 = p0 + a64 + ...;
C[i] = p31 + ... + a2047`. The operations, their order and their dtypes are the same, so the result is
the same to the bit (a partial result held in a local has the dtype it had inside the expression, and
integer data wraps at that width either way); only what is evaluated unconditionally is moved, and only
to just before its statement: not the operands a `T.if_then_else` chooses between, nor the right
operand of `and` / `or`, nor a `while` condition (evaluated before every iteration). What still nests
deeper than `MAX_DEPTH` there, and a statement that would need more than `MAX_LOCALS` locals (each
one more LetStmt level), is an error at the statement's line that says what to do instead.

The walk itself keeps its own stack, so it handles any depth.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tilecraft.errors import SemanticError
from tilecraft.ir import expr as E
from tilecraft.ir import op as ops
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Expr, Node
from tilecraft.ir.function import PrimFunc
from tilecraft.ir.span import Span
from tilecraft.ir.visitor import _field_names

HOIST_DEPTH = 64  # an unconditionally evaluated subexpression this deep is computed first, into a local
MAX_DEPTH = 100  # deeper than this where nothing may be moved is an error (later stages recurse per level)
# Each local is one more LetStmt around the statement, which the later stages also recurse into: past
# this many (a chain of about 4000 operations in one statement) the statement is an error.
MAX_LOCALS = 64
_PURE_CALLS = frozenset(ops.MATH_FLOAT + ops.MATH_ANY + ops.BITWISE)
_METADATA_FIELDS = ("annotations", "attrs")  # layouts and pass hints: never rewritten
LOCAL_NAME = "partial"  # the name the locals get (codegen makes each one unique)


def bound_expression_depth(func: PrimFunc) -> PrimFunc:
    """`func` with every deep expression split as the module docstring says (the same object when none
    is deep); SemanticError at the statement of one that cannot be split."""
    try:
        body = _Splitter().stmt(func.body)
    except RecursionError:  # statements nested hundreds deep (each assignment wraps the rest of its block)
        raise SemanticError(
            f"kernel {func.name} nests its statements too deeply to compile (Python's recursion limit was reached)",
            func.span,
            "split the kernel's long blocks: fewer assignments in one block (each one nests the rest of the block), "
            "or a loop over what repeats",
        ) from None
    return func if body is func.body else func.with_body(body)


class _Splitter:
    def stmt(self, s: S.Stmt) -> S.Stmt:
        lets: list[tuple[E.Var, Expr]] | None = None if isinstance(s, (S.While, S.KernelLaunch)) else []
        changes = {}
        for name in _field_names(type(s)):
            old = getattr(s, name)
            if name in _METADATA_FIELDS:
                continue
            new = self.field(old, lets, s.span)
            if new is not old:
                changes[name] = new
        if lets is not None and len(lets) > MAX_LOCALS:
            raise _too_long(len(lets), s.span)
        out = dataclasses.replace(s, **changes) if changes else s
        for var, value in reversed(lets or ()):
            out = S.LetStmt(var, value, out, span=s.span)
        return out

    def field(self, value: Any, lets: list | None, span: Span | None) -> Any:
        if isinstance(value, S.Stmt):
            return self.stmt(value)
        if isinstance(value, Expr):
            return bounded(value, lets, span)
        if isinstance(value, tuple):
            items = tuple(self.field(v, lets, span) for v in value)
            return value if all(a is b for a, b in zip(items, value)) else items
        if isinstance(value, Node) and not isinstance(value, Buffer):  # regions and ranges of tile ops
            changes = {}
            for name in _field_names(type(value)):
                old = getattr(value, name)
                new = self.field(old, lets, span)
                if new is not old:
                    changes[name] = new
            return dataclasses.replace(value, **changes) if changes else value
        return value


def bounded(root: Expr, lets: list[tuple[E.Var, Expr]] | None, span: Span | None) -> Expr:
    """`root` with each unconditionally evaluated subexpression `HOIST_DEPTH` deep replaced by a new Var,
    its value appended to `lets` in evaluation order (`lets` None: nothing may move); SemanticError at
    `span` when what is left is deeper than `MAX_DEPTH`."""
    done: dict[tuple[int, bool], tuple[Expr, int]] = {}  # (id, conditional) -> (rewritten, depth)
    stack: list[tuple[Expr, bool, bool]] = [(root, False, False)]
    while stack:
        node, conditional, expanded = stack.pop()
        key = (id(node), conditional)
        if key in done:
            continue
        children = _children(node, conditional)
        if not expanded and children:
            stack.append((node, conditional, True))
            stack.extend((c, cond) + (False,) for c, cond in reversed(children) if (id(c), cond) not in done)
            continue
        # The root itself stays: moved, it would be the same depth again as a LetStmt's value.
        movable_into = None if conditional or node is root else lets
        done[key] = _rebuilt(node, children, done, movable_into, span)
    result, depth = done[(id(root), False)]
    if depth > MAX_DEPTH:
        raise _too_deep(depth, span)
    return result


def _children(node: Expr, conditional: bool) -> list[tuple[Expr, bool]]:
    """The expression operands of `node`, each with whether it is evaluated only under a condition."""
    out = []
    for name in _field_names(type(node)):
        value = getattr(node, name)
        chosen = conditional or _is_conditional(node, name)
        if isinstance(value, Expr):
            out.append((value, chosen))
        elif isinstance(value, tuple):
            out.extend((v, chosen) for v in value if isinstance(v, Expr))
    return out


def _is_conditional(node: Expr, field: str) -> bool:
    if isinstance(node, E.Select):
        return field != "condition"
    return isinstance(node, (E.And, E.Or)) and field == "b"  # && and || skip their right operand


def _rebuilt(node: Expr, children: list[tuple[Expr, bool]], done: dict, lets: list | None,
             span: Span | None) -> tuple[Expr, int]:  # fmt: skip
    """`node` over its rewritten operands, and its depth; moved into a new local when deep enough."""
    results = iter(done[(id(c), cond)] for c, cond in children)
    changes, depth = {}, 0
    for name in _field_names(type(node)):
        value = getattr(node, name)
        if isinstance(value, Expr):
            new, d = next(results)
            depth = max(depth, d)
        elif isinstance(value, tuple) and any(isinstance(v, Expr) for v in value):
            pairs = [next(results) if isinstance(v, Expr) else (v, 0) for v in value]
            new = tuple(p[0] for p in pairs)
            depth = max([depth] + [p[1] for p in pairs])
            new = value if all(a is b for a, b in zip(new, value)) else new
        else:
            continue
        if new is not value:
            changes[name] = new
    rebuilt = dataclasses.replace(node, **changes) if changes else node
    depth += 1
    if lets is not None and depth >= HOIST_DEPTH and _movable(rebuilt):
        if depth > MAX_DEPTH:  # what it holds under a condition is too deep already
            raise _too_deep(depth, span)
        var = E.Var(rebuilt.dtype, LOCAL_NAME, span=span)
        lets.append((var, rebuilt))
        return var, 1
    return rebuilt, depth


def _movable(node: Expr) -> bool:
    """Whether `node` may be computed into a local before its statement: a scalar operation that reads
    and computes only (no intrinsic with an effect)."""
    if node.dtype.lanes != 1:
        return False
    if isinstance(node, E.Call):
        return node.op in _PURE_CALLS
    return isinstance(node, (E.BinaryOp, E.Not, E.Cast, E.Select))


def _too_deep(depth: int, span: Span | None) -> SemanticError:
    return SemanticError(
        f"this expression nests {depth} levels deep where it cannot be computed in parts (inside a "
        f"T.if_then_else branch, the right operand of `and` / `or`, a `while` condition or a T.Kernel "
        f"grid); at most {MAX_DEPTH} levels are supported there",
        span,
        "compute the deep part into a local first (`t = ...` on a line before), or shorten the expression",
    )


def _too_long(locals_needed: int, span: Span | None) -> SemanticError:
    return SemanticError(
        f"this statement's expressions are too long to compile: they chain about {locals_needed * HOIST_DEPTH} "
        f"operations, which would take {locals_needed} partial results; at most {MAX_LOCALS} (about "
        f"{MAX_LOCALS * HOIST_DEPTH} chained operations) are supported in one statement",
        span,
        "accumulate in a loop instead (`acc = T.alloc_var(dtype)`, then `for k in T.serial(K): acc += ...`), "
        "or split the sum over several statements",
    )
