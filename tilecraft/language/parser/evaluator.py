"""Evaluates Python expressions of a kernel; IR values build IR through their operators.

Python values (closure ints, dtypes, helper functions) evaluate as Python; `and`/`or`/`not`,
conditional expressions and chained comparisons on IR values become IR logic.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import operator
import types
from typing import TYPE_CHECKING, Any

from tilecraft.errors import KernelError, ParseError, ParseRuntimeError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferData
from tilecraft.ir.expr import Expr
from tilecraft.ir.visitor import walk
from tilecraft.language.generic import KeptCondition
from tilecraft.language.types import _TensorFactory

if TYPE_CHECKING:
    from tilecraft.language.parser.core import Parser

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.MatMult: operator.matmul,
}  # fmt: skip
_CMPOPS = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}  # fmt: skip

USER_ERRORS = (E.IRError, TypeError, ValueError, IndexError, KeyError, AttributeError, ZeroDivisionError)


def is_ir(value: Any) -> bool:
    return isinstance(value, Expr) and not isinstance(value, (E.IntImm, E.FloatImm))


def truth(value: Any) -> bool | Expr:
    """A Python truth value, or the IR condition when `value` is symbolic (or kept: `T.ir.keep`)."""
    if isinstance(value, KeptCondition):
        return value.condition
    if is_ir(value):
        return value
    return bool(value)


class Evaluator:
    def __init__(self, parser: Parser) -> None:
        self.parser = parser
        # The `A.data` nodes in the data position of a T.Tensor(shape, dtype, A.data) view: the one
        # place a buffer's memory may be named.
        self.view_data: set[int] = set()

    def error(self, node: ast.AST, message: str, hint: str | None = None) -> ParseError:
        return ParseError(message, self.parser.source.span(node), hint)

    def eval(self, node: ast.expr) -> Any:
        method = getattr(self, "eval_" + type(node).__name__, None)
        if method is None:
            return self.eval_fallback(node)
        return method(node)

    def eval_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def eval_Name(self, node: ast.Name) -> Any:
        namespace = self.parser.namespace()
        try:
            value = namespace[node.id]
        except KeyError:
            if node.id in self.parser.pending_tensors:
                raise self.error(
                    node,
                    f"parameter {node.id!r} needs a type annotation before its first use",
                    hint=f"annotate it in the signature ({node.id}: T.Tensor((M, N), dtype); scalars T.int32 / "
                    f"T.float32), or declare the tensor at the top of the body: `{node.id}: T.Tensor((M, N), dtype)`",
                ) from None
            raise self.error(
                node, f"name {node.id!r} is not defined", _did_you_mean(node.id, namespace)
            ) from None
        if isinstance(value, Buffer) and value.scope == "local.var":
            return value[0]
        return value

    def eval_Attribute(self, node: ast.Attribute) -> Any:
        base = self.eval(node.value)
        try:
            value = getattr(base, node.attr)
        except AttributeError:
            owner = getattr(base, "__name__", type(base).__name__)
            names = [n for n in dir(base) if not n.startswith("_")]
            raise self.error(
                node, f"{owner} has no attribute {node.attr!r}", _did_you_mean(node.attr, names)
            ) from None
        if isinstance(value, BufferData) and id(node) not in self.view_data:
            name = value.buffer.name
            raise self.error(
                node,
                f"{name}.data, the memory of {name}, is only valid as the third argument of "
                f"T.Tensor(shape, dtype, {name}.data), which declares a view of it",
                hint=f"to read or write {name}, index it ({name}[i, j]) or pass {name} itself to a tile op",
            )
        return value

    def eval_Subscript(self, node: ast.Subscript) -> Any:
        base = self.eval(node.value)
        if isinstance(base, E.BufferLoad) and base.buffer.scope == "local.var":
            base = base.buffer
        index = self.eval(node.slice)
        return self.apply(node, operator.getitem, base, index)

    def eval_Slice(self, node: ast.Slice) -> slice:
        parts = (node.lower, node.upper, node.step)
        return slice(*(None if p is None else self.eval(p) for p in parts))

    def eval_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self._elements(node.elts))

    def eval_List(self, node: ast.List) -> list:
        return list(self._elements(node.elts))

    def _elements(self, elts):
        for elt in elts:
            if isinstance(elt, ast.Starred):
                yield from self.eval(elt.value)
            else:
                yield self.eval(elt)

    def eval_Dict(self, node: ast.Dict) -> dict:
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.eval(v))
            else:
                out[self.eval(k)] = self.eval(v)
        return out

    def eval_BinOp(self, node: ast.BinOp) -> Any:
        # `a + b + c + ...` parses left-deep: walk down its left operands instead of recursing into
        # them, so a sum of thousands of terms needs no Python stack per term. Operands are evaluated,
        # and operators applied, in Python's order (left operand, right operand, operator).
        chain = [node]
        while isinstance(chain[-1].left, ast.BinOp):
            chain.append(chain[-1].left)
        value = self.eval(chain[-1].left)
        for op in reversed(chain):
            value = self.apply(op, _BINOPS[type(op.op)], value, self.eval(op.right))
        return value

    def eval_UnaryOp(self, node: ast.UnaryOp) -> Any:
        chain = [node]  # `- - x`, `not not c`: walked down, not recursed into, as in eval_BinOp
        while isinstance(chain[-1].operand, ast.UnaryOp):
            chain.append(chain[-1].operand)
        value = self.eval(chain[-1].operand)
        for op in reversed(chain):
            value = self._unary(op, value)
        return value

    def _unary(self, node: ast.UnaryOp, value: Any) -> Any:
        if isinstance(node.op, ast.Not):
            return E.logical_not(value) if is_ir(value) else not value
        op = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(node.op)]
        return self.apply(node, op, value)

    def eval_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        result = self.eval(node.values[0])
        for value_node in node.values[1:]:
            if not is_ir(result):
                if bool(result) != is_and:
                    return result
                result = self.eval(value_node)
                continue
            nxt = self.eval(value_node)
            result = E.logical_and(result, nxt) if is_and else E.logical_or(result, nxt)
        return result

    def eval_Compare(self, node: ast.Compare) -> Any:
        left = self.eval(node.left)
        result: Any = True
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node)
            this = self.apply(node, _CMPOPS[type(op)], left, right)
            result = E.logical_and(result, this) if is_ir(result) or is_ir(this) else (result and this)
            if result is False:
                return False
            left = right
        return result

    def eval_IfExp(self, node: ast.IfExp) -> Any:
        cond = truth(self.eval(node.test))
        if isinstance(cond, bool):
            return self.eval(node.body if cond else node.orelse)
        return self.apply(node, E.select, cond, self.eval(node.body), self.eval(node.orelse))

    def eval_JoinedStr(self, node: ast.JoinedStr) -> str:
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                spec = self.eval(value.format_spec) if value.format_spec else ""
                parts.append(format(self.eval(value.value), spec))
            else:
                parts.append(self.eval(value))
        return "".join(parts)

    def eval_Call(self, node: ast.Call) -> Any:
        func = self.eval(node.func)
        allowed = {id(n) for n in _view_data_nodes(node)} if isinstance(func, _TensorFactory) else set()
        self.view_data |= allowed
        try:
            args = list(self._elements(node.args))
            kwargs = {}
            for kw in node.keywords:
                if kw.arg is None:
                    kwargs.update(self.eval(kw.value))
                else:
                    kwargs[kw.arg] = self.eval(kw.value)
        finally:
            self.view_data -= allowed
        from tilecraft.language.macro import Macro

        if isinstance(func, Macro):
            return self.parser.inline_macro(node, func, args, kwargs)
        if _is_users_python(func):
            return self.call_python(node, func, args, kwargs)
        return self.apply(node, func, *args, **kwargs)

    def call_python(self, node: ast.Call, func, args: list, kwargs: dict) -> Any:
        """A plain Python function of the user's, run now, as TileLang's builder runs it. The statements
        its T.* calls build and it does not return go where the call is: before the statement that makes
        the call, in the order built, after the allocations it made (a `def row_max(x, m):
        T.reduce_max(x, m, dim=1)` reduces there). What it returns is the call's value."""
        builder = self.parser.builder
        allocations, preludes = len(builder.pending_allocations), len(builder.preludes)
        made: list[S.Stmt] = []
        token = S.STATEMENTS_MADE.set(made)
        try:
            result = self.apply(node, func, *args, **kwargs)
        finally:
            S.STATEMENTS_MADE.reset(token)
        taken = [stmt for _, stmt in builder.preludes[preludes:]]
        placed = _dropped_statements(made, result, taken)
        # Allocations the call made open before the statement too when statements it built (placed here,
        # or returned) address them; a helper that only makes a buffer leaves it for the assignment to name.
        if placed or (made and len(builder.pending_allocations) > allocations):
            self._place(node, func, placed, made, allocations, preludes)
        return result

    def _place(self, node: ast.Call, func, placed: list, made: list, allocations: int, preludes: int) -> None:
        """Queue `placed` (statements a plain call built and dropped) to go before the statement being
        parsed, in the order built among the other statements its expressions asked for (builder.preludes),
        after the allocations the call made (they scope what follows, as a statement's own do)."""
        builder = self.parser.builder
        ops = [s for s in placed if isinstance(s, S.TileOp)]
        if ops and not builder.kernels:
            from tilecraft.language.parser.core import _op_name  # core imports this module

            raise self.error(node, f"T.{_op_name(ops[0])}, which {getattr(func, '__name__', 'this function')}() "
                             "builds, is only valid inside `with T.Kernel(...)`",
                             hint="tile ops run on the device: call the function inside a `with T.Kernel(...)` "
                             "block")  # fmt: skip
        order = {id(s): k for k, s in enumerate(made)}
        queued = [(order[id(s)], None, s) for s in placed]
        queued += [(order.get(id(s), -1), b, s) for b, s in builder.preludes[preludes:]]
        queued.sort(key=lambda entry: entry[0])
        allocated = builder.pending_allocations[allocations:]
        del builder.pending_allocations[allocations:]
        span = self.parser.source.span(node)
        builder.preludes[preludes:] = [*(self.parser.allocation_prelude(b, span) for b in allocated),
                                       *((b, s) for _, b, s in queued)]  # fmt: skip

    def eval_fallback(self, node: ast.expr) -> Any:
        """Lambdas, comprehensions and the rest: Python's own eval over a snapshot of the names."""
        code = compile(ast.fix_missing_locations(ast.Expression(node)), self.parser.source.file, "eval")
        try:
            return eval(code, self.parser.namespace().flat())  # noqa: S307 - evaluating the user's own kernel
        except USER_ERRORS as exc:
            raise self.error(node, f"{type(exc).__name__}: {exc}") from None

    def apply(self, node: ast.AST, fn, *args, **kwargs) -> Any:
        """Call `fn`, turning IR construction errors into errors located at `node`."""
        builder = self.parser.builder
        saved, builder.span = builder.span, self.parser.source.span(node)
        try:
            return fn(*args, **kwargs)
        except KernelError as exc:
            if exc.span is None:
                raise ParseError(exc.message, builder.span, exc.hint) from None
            raise
        except USER_ERRORS as exc:
            raise _located_error(exc)(_user_message(exc), builder.span) from None
        finally:
            builder.span = saved


def _is_users_python(func) -> bool:
    """A Python function or method written outside tilecraft (a helper of the user's kernel file)."""
    if not isinstance(func, (types.FunctionType, types.MethodType)):
        return False
    return not (getattr(func, "__module__", None) or "").startswith("tilecraft")


def _statements_in(value: Any) -> list:
    """The statements a helper returned, nested ones included."""
    if isinstance(value, S.Stmt):
        return [n for n in walk(value) if isinstance(n, S.Stmt)]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in _statements_in(v)]
    return []


def _dropped_statements(made: list, result: Any, taken: list) -> list:
    """The statements among `made` (in the order made) that nothing holds: not in the returned value or
    in `taken`, not part of a statement made later, and not an intermediate a T.* call rebuilt (the
    sequences `S.seq` flattens, a statement `dataclasses.replace` copied: its parts are held elsewhere)."""
    held: set[int] = set()
    spans: dict[tuple, list] = {}  # a held statement's _fields -> the spans of those that have them

    def hold(stmt: S.Stmt) -> None:
        for n in _statements_in(stmt):
            held.add(id(n))
            spans.setdefault(_fields(n), []).append(n.span)

    for value in (result, *taken):
        for n in _statements_in(value):
            hold(n)
    kept = []
    for stmt in reversed(made):
        if any(id(n) in held for n in _statements_in(stmt)) or _respanned(stmt, spans):
            continue
        kept.append(stmt)
        hold(stmt)
    return kept[::-1]


def _fields(stmt: S.Stmt) -> tuple:
    """A statement's type and the identity of each field but its span: equal for a copy of it."""
    return (type(stmt), *(id(getattr(stmt, f.name)) for f in dataclasses.fields(stmt) if f.name != "span"))


def _respanned(stmt: S.Stmt, spans: dict[tuple, list]) -> bool:
    """Whether a held statement is `stmt` given another span (`dataclasses.replace(stmt, span=...)`); two
    calls building the same statement from the same objects at one call share its span, and both stay."""
    return any(span != stmt.span for span in spans.get(_fields(stmt), ()))


def _view_data_nodes(call: ast.Call) -> list[ast.expr]:
    """The argument of `T.Tensor(shape, dtype, data)` in the `data` position, when it is `X.data`."""
    positional = call.args[2:3] if not any(isinstance(a, ast.Starred) for a in call.args[:3]) else []
    keyword = [kw.value for kw in call.keywords if kw.arg == "data"]
    return [n for n in (*positional, *keyword) if isinstance(n, ast.Attribute) and n.attr == "data"]


def _did_you_mean(name: str, candidates) -> str | None:
    close = difflib.get_close_matches(name, list(candidates), n=3)
    return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else None


class ParseValueError(ParseError, ValueError):
    """A T.* call refused an argument's value (a ValueError): located like any ParseError, and still a
    ValueError for code that catches the call's own error class."""


def _located_error(exc: Exception) -> type[ParseError]:
    if isinstance(exc, ValueError):
        return ParseValueError
    return ParseRuntimeError if isinstance(exc, RuntimeError) else ParseError


def _user_message(exc: Exception) -> str:
    text = str(exc)
    if isinstance(exc, E.IRError):
        return text
    return f"{type(exc).__name__}: {text}"
