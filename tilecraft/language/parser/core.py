"""The parser: a kernel's Python AST -> tile IR (PrimFunc)."""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import inspect
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tilecraft.errors import KernelError, ParseError, ParseRuntimeError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, StridedSliceError
from tilecraft.ir.expr import Expr, Var
from tilecraft.ir.function import POINTER_PARAMS_ATTR, WORKSPACE_ATTR, PrimFunc
from tilecraft.ir.op import RNG_CALLS
from tilecraft.ir.visitor import substitute, walk
from tilecraft.language import builder as B
from tilecraft.language import packed
from tilecraft.language.barriers import WarpGroups
from tilecraft.language.extern import CALL_EXTERN
from tilecraft.language.generic import NodeWithoutBody, WithBlock
from tilecraft.language.kernel import KernelSpec
from tilecraft.language.let import LetBinding
from tilecraft.language.loops import LoopSpec, PersistentSpec, python_range
from tilecraft.language.parser.evaluator import Evaluator, is_ir, truth
from tilecraft.language.parser.scope import Scope
from tilecraft.language.parser.source import Source, function_source
from tilecraft.language.reducers import check_epochs_closed, check_no_partial_access
from tilecraft.language.types import ON_CHIP_ANNOTATIONS, InvalidTensorType, TensorType
from tilecraft.transform.expression_depth import bound_expression_depth

_THREAD_NAMES = ("tx", "ty", "tz")
# Macros inline while parsing, so a recursive macro must stop on a Python value; deeper than this it
# does not (a tree of halving tile sizes needs log2 levels), and Python's own limit is not far off.
MAX_MACRO_DEPTH = 32
# A `while` on a Python condition unrolls while parsing; more passes than this is a loop that never ends
# (or a kernel no one meant to write: every pass is one more copy of the body).
MAX_PARSE_TIME_ITERATIONS = 4096
_BLOCK_NAMES = ("bx", "by", "bz")


@dataclass
class _Wrapper:
    """A statement that scopes the rest of its block (let binding, allocation)."""

    make: Callable[[S.Stmt], S.Stmt]


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


@dataclass
class EagerParam:
    """An eager-style parameter: a tensor (re-annotated in the body) or a Python value."""

    is_tensor: bool
    value: Any = None


def environment(func, outer_locals: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    """The names a function body sees besides its own: closure cells, the locals of the scope that
    defined it (string annotations may name them without a closure cell), then globals."""
    closure = inspect.getclosurevars(func).nonlocals if func.__closure__ else {}
    return ChainMap(dict(closure), dict(outer_locals or {}), func.__globals__)


class Parser:
    def __init__(self, source: Source, env: Mapping[str, Any], annotations: Mapping[str, Any] | None = None):
        self.source = source
        self.env = env
        self.annotations = dict(annotations or {})
        self.scope = Scope("function")
        self.builder = B.Builder(self)
        self.evaluator = Evaluator(self)
        self.func_attrs: dict[str, Any] = {}
        self.items: list = []
        self.params: list[Buffer | Var] = []
        self.pending_tensors: dict[str, int] = {}
        self.returned: Any = None
        self.macro_calls: list[str] = []  # the macros being expanded, outermost first
        # What each name bound to an IR expression (a LetStmt) stands for, in terms of unbound symbols.
        self.let_values: dict[Var, Expr] = {}

    # ------------------------------------------------------------------ entry points

    def namespace(self):
        from tilecraft.language.parser.scope import Namespace

        return Namespace(self.scope, self.env)

    def span(self, node: ast.AST):
        return self.source.span(node)

    def error(self, node: ast.AST, message: str, hint: str | None = None) -> ParseError:
        return ParseError(message, self.span(node), hint)

    def parse(self, eager: Mapping[str, EagerParam] | None = None) -> PrimFunc:
        B.push(self.builder)
        # A kernel parsed while a plain helper of another kernel runs builds its own statements, which are
        # not the helper's (evaluator.call_python).
        token = S.STATEMENTS_MADE.set(None)
        try:
            self._bind_params(eager)
            body = self._function_body()
            return self._finish(body)
        finally:
            S.STATEMENTS_MADE.reset(token)
            B.pop()

    # ------------------------------------------------------------------ parameters

    def _bind_params(self, eager: Mapping[str, EagerParam] | None) -> None:
        args = self.source.tree.args
        if args.vararg or args.kwarg:
            raise self.error(self.source.tree, "kernels cannot take *args or **kwargs")
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            self._bind_param(arg, None if eager is None else eager.get(arg.arg))

    def _bind_param(self, arg: ast.arg, eager: EagerParam | None) -> None:
        annotation = self._annotation(arg)
        name = arg.arg
        if isinstance(annotation, (TensorType, dt.DataType)) or annotation in (int, float, bool):
            if eager is not None and eager.is_tensor and not isinstance(annotation, TensorType):
                raise self.error(arg, f"parameter {name!r} was given an array but is annotated {annotation}")
            param = self._param_from_annotation(name, annotation, arg)
            if eager is not None and not eager.is_tensor and annotation in (int, float, bool):
                self.scope.names[name] = eager.value
                return
            self.params.append(param)
            self.scope.names[name] = param
            return
        if eager is None or eager.is_tensor:  # a tensor the body declares (`A: T.Tensor(...)`)
            self.pending_tensors[name] = len(self.params)
            self.params.append(Var(dt.int32, f"__pending_{name}"))
        else:
            self.scope.names[name] = eager.value

    def _annotation(self, arg: ast.arg) -> Any:
        """The parameter's annotation: the value Python computed when it defined the function (its
        names may live only in the defining scope), else (`from __future__ import annotations`)
        the annotation evaluated here."""
        if arg.annotation is None:
            return None
        value = self.annotations.get(arg.arg)
        if value is None or isinstance(value, str):
            value = self.evaluator.eval(arg.annotation)
        if isinstance(value, InvalidTensorType):
            raise self.error(arg.annotation, f"parameter {arg.arg!r}: {value.error}")
        return value

    def _param_from_annotation(self, name: str, annotation: Any, node: ast.AST) -> Buffer | Var:
        if isinstance(annotation, TensorType):
            self._check_global(name, annotation, node)
            return annotation.to_buffer(name)
        if isinstance(annotation, dt.PointerType):  # an address (tilecraft/language/pointers.py)
            var = Var(dt.uint64, name)
            self.builder.pointer_params.append(var)
            return var
        return Var(dt.as_dtype(annotation), name)

    def _check_global(self, name: str, annotation: TensorType, node: ast.AST) -> None:
        """A kernel parameter is a tensor in global memory; T.SharedBuffer and its kin annotate macro
        parameters only."""
        if annotation.scope == "global":
            return
        raise self.error(
            node,
            f"parameter {name!r} is annotated T.{ON_CHIP_ANNOTATIONS[annotation.scope]}, which describes an "
            "on-chip buffer a macro receives; a kernel's parameters are global tensors",
            hint="annotate it T.Tensor(shape, dtype), and allocate on-chip buffers inside T.Kernel",
        )

    def _finish(self, body: S.Stmt) -> PrimFunc:
        check_epochs_closed(self.builder)
        if self.builder.preludes:  # asked for outside any statement (a parameter's annotation)
            raise self.error(self.source.tree, "an expression outside the body (a parameter's annotation) "
                             "builds statements, which have no place there",
                             hint="call the function that builds them in the body")  # fmt: skip
        for name in self.pending_tensors:
            raise self.error(
                self.source.tree,
                f"tensor parameter {name!r} is never declared",
                hint=f"add `{name}: T.Tensor((M, N), dtype)` at the top of the kernel body, or annotate "
                "the parameter (scalars with T.int32 / T.float32)",
            )
        params = tuple(self.params) + tuple(self.builder.outputs)
        attrs = dict(self.func_attrs)
        if self.builder.outputs:
            attrs["tilecraft.out_idx"] = self._out_idx(params)
        if self.builder.workspaces:
            attrs[WORKSPACE_ATTR] = tuple(range(len(params), len(params) + len(self.builder.workspaces)))
            params += tuple(self.builder.workspaces)
        if self.builder.consts:
            attrs["tilecraft.consts"] = tuple(self.builder.consts)
        if self.builder.pointer_params:
            attrs[POINTER_PARAMS_ATTR] = tuple(v.name for v in self.builder.pointer_params)
        func = PrimFunc(
            self.source.tree.name, params, body, tuple(attrs.items()), span=self.span(self.source.tree)
        )
        for finish in self.builder.finishers:
            func = finish(func)
        # A sum of thousands of terms is split into locals here, so no later stage recurses per term.
        return bound_expression_depth(func)

    def _out_idx(self, params: tuple) -> tuple[int, ...]:
        returned = self.returned
        if returned is None:
            raise ParseError(
                "the kernel allocates outputs with T.empty but returns nothing",
                self.span(self.source.tree),
                hint="end the kernel with `return C` (or `return C, D`)",
            )
        returned = returned if isinstance(returned, tuple) else (returned,)
        index = {id(p): i for i, p in enumerate(params)}
        out = []
        for r in returned:
            if not isinstance(r, Buffer) or id(r) not in index:
                raise ParseError("a kernel can only return tensors it received or made with T.empty",
                                 self.span(self.source.tree))  # fmt: skip
            out.append(index[id(r)])
        return tuple(out)

    # ------------------------------------------------------------------ blocks

    def _block(self, stmts: list[ast.stmt], kind: str) -> S.Stmt:
        saved_items, saved_scope = self.items, self.scope
        self.items, self.scope = [], Scope(kind, self.scope)
        try:
            for node in stmts:
                self.statement(node)
            return _fold(self.items)
        finally:
            self.items, self.scope = saved_items, saved_scope

    def _function_body(self) -> S.Stmt:
        """The function's statements up to its `return` (which a parse-time `if` may take early)."""
        try:
            for node in self.source.tree.body:
                self.statement(node)
        except _Return as ret:
            self.returned = ret.value
        return _fold(self.items)

    def emit(self, value: Any, node: ast.AST) -> None:
        if isinstance(value, S.Stmt):
            if value.span is None:
                value = dataclasses.replace(value, span=self.span(node))
            if isinstance(value, S.TileOp) and not self.builder.kernels:
                raise self.error(
                    node,
                    f"T.{_op_name(value)} is only valid inside `with T.Kernel(...)`",
                    hint="tile ops run on the device: put them in a `with T.Kernel(...)` block",
                )
            self.items.append(value)
        elif isinstance(value, NodeWithoutBody):
            raise self.error(node, f"T.ir.{value.cls.__name__}(...) lacks its field {value.body_field!r}",
                             hint="write its statements in a block: `with T.ir.<name>(...):`")  # fmt: skip
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, S.Stmt) for v in value):
            for v in value:
                self.emit(v, node)
        elif isinstance(value, LetBinding):
            self._open_let(value.var, value.value, self.span(node))

    def statement(self, node: ast.stmt) -> None:
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            kind = type(node).__name__
            raise self.error(node, f"`{kind}` statements are not supported in kernels",
                             hint=_UNSUPPORTED_HINTS.get(kind, _STATEMENTS_HINT))  # fmt: skip
        self._flush_allocations(node, None)
        start = len(self.items)
        # Preludes asked for by an enclosing statement's expressions (an `if`'s test) go before it, not
        # into the block this statement is in.
        outer, self.builder.preludes = self.builder.preludes, []
        returned = None
        try:
            method(node)
        except _Return as ret:  # `return f(x)`: what f(x) asked for still goes before the return
            returned = ret
        except RecursionError:
            if self.macro_calls:
                raise  # inside a macro expansion: its outermost call names the macro (inline_macro)
            # Sums and unary chains are walked without recursion; what nests deeper still (calls in calls
            # in calls ...) is named here, at the innermost statement, instead of a bare RecursionError.
            raise self.error(
                node,
                "this statement nests too deeply for the parser (Python's recursion limit was reached)",
                hint="compute the innermost parts into locals on lines before (`t = ...`)",
            ) from None
        finally:
            mine, self.builder.preludes = self.builder.preludes, outer
        self._insert_preludes(node, start, mine)
        self._flush_allocations(node, None)
        if returned is not None:
            raise returned

    def _insert_preludes(self, node: ast.stmt, start: int, preludes: list) -> None:
        """Put the statements the expressions of `node` asked for (builder.preludes) before the items it
        made, each in the scope of its variable's allocation."""
        span = self.span(node)
        made: list[Any] = []
        for buf, stmt in preludes:
            if buf is not None:
                made.append(_Wrapper(lambda body, b=buf, sp=span: S.Allocate(b, body, span=sp)))
            if stmt is not None:
                made.append(stmt if stmt.span is not None else dataclasses.replace(stmt, span=span))
        self.items[start:start] = made

    def allocation_prelude(self, buf: Buffer, span) -> tuple[Buffer, S.Stmt | None]:
        """A prelude that opens the allocation of `buf` (made by an expression's plain Python call, which
        cannot name it: it keeps its buffer, so the statements the call built still address it), with the
        store of its initial value if it has one."""
        init = self.builder.inits.pop(buf, None)
        if callable(init):
            return buf, init(buf, span)
        if init is not None:
            return buf, S.BufferStore(buf, init, (E.const(0),), span=span)
        return buf, None

    # ------------------------------------------------------------------ statements

    def stmt_Expr(self, node: ast.Expr) -> None:
        value = self.evaluator.eval(node.value)
        if isinstance(value, E.Call) and value.op in (CALL_EXTERN, *RNG_CALLS):  # a call made for its effect
            value = S.Evaluate(value, span=self.span(node))
        self.emit(value, node)

    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = self.evaluator.eval(node.value)
        for target in node.targets:
            self._assign(target, value, node)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "annotated assignment needs a plain name")
        annotation = self.evaluator.eval(node.annotation)
        name = node.target.id
        if node.value is None:
            self._reannotate(node, name, annotation)
            return
        value = self.evaluator.eval(node.value)
        if isinstance(annotation, dt.DataType) or annotation in (int, float, bool):
            dtype = dt.as_dtype(annotation)
            self._bind_let(node, name, E.cast(value, dtype), force=True)
            return
        self._assign(node.target, value, node)

    def _reannotate(self, node: ast.AnnAssign, name: str, annotation: Any) -> None:
        if not isinstance(annotation, TensorType):
            raise self.error(
                node, f"`{name}: ...` without a value must declare a tensor: T.Tensor(shape, dtype)"
            )
        if name not in self.pending_tensors:
            raise self.error(node, f"{name!r} is not a tensor parameter of this kernel, or is declared twice")
        self._check_global(name, annotation, node)
        # A parameter's shape is checked and bound at the call, where no LetStmt is in scope:
        # `nchunks = T.ceildiv(seqlen, chunk)` before `dt: T.Tensor((B, nchunks, chunk))` means the
        # expression, not a new symbol.
        shape, strides = self.without_lets(annotation.shape), self.without_lets(annotation.strides)
        buf = dataclasses.replace(annotation, shape=shape, strides=strides).to_buffer(name)
        self.params[self.pending_tensors.pop(name)] = buf
        self.scope.names[name] = buf

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        from tilecraft.language.parser.evaluator import _BINOPS

        op = _BINOPS[type(node.op)]
        if isinstance(node.target, ast.Subscript):
            buf, indices = self._store_target(node.target)
            value = self.evaluator.apply(node, op, buf[tuple(indices)], self.evaluator.eval(node.value))
            self._store(node, buf, indices, value)
            return
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "augmented assignment needs a name or a buffer element")
        current = self.evaluator.eval(node.target)
        value = self.evaluator.apply(node, op, current, self.evaluator.eval(node.value))
        self._assign(node.target, value, node)

    def _assign(self, target: ast.expr, value: Any, node: ast.stmt) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            self._unpack(target, value, node)
        elif isinstance(target, ast.Subscript):
            buf, indices = self._store_target(target, value)
            self._store(node, buf, indices, value)
        elif isinstance(target, ast.Name):
            self._assign_name(target.id, value, node)
        else:
            raise self.error(target, "only names, tuples of names and buffer elements can be assigned")

    def _unpack(self, target: ast.Tuple | ast.List, value: Any, node: ast.stmt) -> None:
        if isinstance(value, Expr) or not hasattr(value, "__iter__"):
            raise self.error(node, f"cannot unpack {type(value).__name__} into {len(target.elts)} names")
        values = list(value)
        if len(values) != len(target.elts):
            raise self.error(node, f"cannot unpack {len(values)} values into {len(target.elts)} names")
        if len(values) > 1 and any(self._stores(t) for t in target.elts):
            values = [self._snapshot(v, node) for v in values]
        for t, v in zip(target.elts, values):
            self._assign(t, v, node)

    def _stores(self, target: ast.expr) -> bool:
        """Whether assigning to `target` writes memory: a buffer element or a T.alloc_var variable."""
        if isinstance(target, (ast.Tuple, ast.List)):
            return any(self._stores(t) for t in target.elts)
        if isinstance(target, ast.Name):
            existing = self.scope.lookup(target.id)
            return isinstance(existing, Buffer) and existing.scope == "local.var"
        return isinstance(target, ast.Subscript)

    def _snapshot(self, value: Any, node: ast.stmt) -> Any:
        """`value` bound to a name when it reads memory, so that `a[0], a[1] = a[1], a[0]` reads both
        elements before it writes either, as Python does."""
        if not isinstance(value, Expr) or not any(isinstance(n, E.BufferLoad) for n in walk(value)):
            return value
        var = Var(value.dtype, "unpacked")
        span = self.span(node)
        self.items.append(_Wrapper(lambda body, v=var, x=value: S.LetStmt(v, x, body, span=span)))
        return var

    def _assign_name(self, name: str, value: Any, node: ast.stmt) -> None:
        existing = self.scope.lookup(name)
        if isinstance(existing, Buffer) and existing.scope == "local.var" and not isinstance(value, Buffer):
            self._store(node, existing, [E.const(0)], value)
            return
        if isinstance(value, Buffer) and self._claim_allocation(value, name, node):
            return
        if isinstance(value, Buffer):
            value = self._name_output(value, name)
        if isinstance(value, Buffer) and value.address is not None:
            value = self._bind_address(value, name, node)
        self._check_rebind(name, node)
        if is_ir(value) and not isinstance(value, Var):
            self._bind_let(node, name, value)
        else:
            self.scope.names[name] = value

    def _bind_address(self, buf: Buffer, name: str, node: ast.stmt) -> Buffer:
        """`X = T.make_tensor(address, ...)`: the tensor named `X`, its address read here once (a local
        bound to it, as TileLang binds the pointer) unless it is a variable already."""
        address = buf.address
        if not isinstance(address, Var):
            address = Var(dt.uint64, f"{name}_address")
            value = E.cast(buf.address, dt.uint64)
            span = self.span(node)
            self.items.append(_Wrapper(lambda body, v=address, x=value: S.LetStmt(v, x, body, span=span)))
        return dataclasses.replace(buf, name=name, address=address)

    def _name_output(self, buf: Buffer, name: str) -> Buffer:
        """`C = T.empty(...)`, `W = T.alloc_global(...)` and `V = T.Tensor(shape, dtype, A.data)` name
        the buffer after the variable."""
        for made, prefix in ((self.builder.outputs, "out"), (self.builder.workspaces, "workspace")):
            for k, out in enumerate(made):
                if out is buf and out.name.startswith(prefix):
                    made[k] = dataclasses.replace(buf, name=name)
                    return made[k]
        views = self.builder.unnamed_views
        for k, view in enumerate(views):
            if view is buf:
                del views[k]
                return dataclasses.replace(buf, name=name)
        return buf

    def inner_vars(self) -> set[int]:
        """Ids of the Vars bound inside the current T.Kernel: block and thread indices, loop variables
        and names assigned in it (what a value fixed for the whole function may not use)."""
        ids = {id(v) for k in self.builder.kernels for v in (*k.block_vars, *k.thread_vars)}
        scope = self.scope
        while scope is not None and scope.kind not in ("function", "macro"):
            ids |= {id(v) for v in scope.names.values() if isinstance(v, Var)}
            scope = scope.parent
        return ids

    def _check_rebind(self, name: str, node: ast.stmt) -> None:
        owner = self.scope.owner(name)
        if owner is None or owner is self.scope or not self.scope.crosses_ir_body(owner):
            return
        raise self.error(
            node,
            f"{name!r} is bound outside this loop or branch and cannot be re-bound inside it",
            hint=f"to update a scalar across iterations declare `{name} = T.alloc_var(dtype)` before the "
            "loop; otherwise use a new name",
        )

    def _bind_let(self, node: ast.stmt, name: str, value: Any, force: bool = False) -> None:
        value = E.convert(value)
        if not force and not is_ir(value):
            self.scope.names[name] = value
            return
        self._check_rebind(name, node)
        span = self.span(node)
        if packed.is_vector(value):  # one local per lane (tilecraft/language/packed.py)
            locals_, value = self.evaluator.apply(node, packed.bind_lanes, name, value)
            for var, x in locals_:
                self._open_let(var, x, span)
            self.scope.names[name] = value
            return
        var = Var(value.dtype, name)
        self._open_let(var, value, span)
        self.scope.names[name] = var

    def _open_let(self, var: Var, value: Expr, span) -> None:
        """`var` stands for `value` in the rest of the block (a LetStmt around it)."""
        self.items.append(_Wrapper(lambda body: S.LetStmt(var, value, body, span=span)))
        self.let_values[var] = substitute(value, self.let_values)

    def without_lets(self, exprs: tuple[Expr, ...]) -> tuple[Expr, ...]:
        """`exprs` with every name bound by a LetStmt replaced by its value: the shape of a tensor the
        host allocates or views (`OH = (H + 2 * P - K) // S + 1` before `T.empty((N, OH, OW, F))`) must
        be computable from the symbols alone, where no LetStmt is in scope."""
        return tuple(substitute(e, self.let_values) for e in exprs)

    def _store_target(self, target: ast.Subscript, value: Any = None) -> tuple[Buffer, list[Expr]]:
        base = self.evaluator.eval(target.value)
        if isinstance(base, E.BufferLoad) and base.buffer.scope == "local.var":
            base = base.buffer
        if not isinstance(base, Buffer):
            raise self.error(
                target, f"only buffer elements can be assigned, not elements of {type(base).__name__}"
            )
        index = self.evaluator.eval(target.slice)
        index = list(index) if isinstance(index, tuple) else [index]
        if any(isinstance(i, slice) and i.step not in (None, 1) for i in index):
            raise ParseRuntimeError(str(StridedSliceError(base.name)), self.span(target))
        if any(isinstance(i, slice) for i in index):
            index = self._slice_as_lanes(target, base, index, value)
        if len(index) != base.ndim:
            raise self.error(
                target, f"buffer {base.name} has {base.ndim} dims but is indexed with {len(index)}"
            )
        return base, [self._store_index(target, base, i) for i in index]

    def _slice_as_lanes(self, target: ast.Subscript, buf: Buffer, index: list, value: Any) -> list:
        """`B[i, j:j + n] = v` where `v` is a vector of n lanes stores lane k at `j + k` (the slice is the
        index `T.Ramp(j, 1, n)`, as TileLang stores a vector); any other slice assignment is refused."""
        from tilecraft.ir.arith.analyzer import simplify
        from tilecraft.language.math import Ramp

        lanes = packed.vector_lanes(value) if packed.is_vector(value) else 1
        slices = [k for k, i in enumerate(index) if isinstance(i, slice)]
        if lanes > 1 and len(slices) == 1 and slices[0] < buf.ndim:
            k, part = slices[0], index[slices[0]]
            start = E.convert(0 if part.start is None else part.start)
            stop = E.convert(buf.shape[k] if part.stop is None else part.stop)
            if E.const_value(simplify(E.sub(stop, start))) == lanes:
                return [*index[:k], Ramp(start, E.const(1, start.dtype), lanes), *index[k + 1:]]
        raise self.error(
            target, "slice assignment is not supported (except of a vector value into as many elements)",
            hint="use T.fill or T.copy on regions",
        )

    def _store_index(self, target: ast.Subscript, buf: Buffer, value: Any) -> Expr:
        index = self.evaluator.apply(target, E.convert, value)
        if not index.dtype.is_integer:
            raise self.error(
                target,
                f"index {index} of {buf.name} has dtype {index.dtype}; indices must be integers",
                hint="convert explicitly: T.cast(x, 'int32') truncates, T.cast(T.floor(x), 'int32') floors",
            )
        return index

    def _store(self, node: ast.stmt, buf: Buffer, indices: list, value: Any) -> None:
        if isinstance(value, (Buffer, S.Stmt)) or not isinstance(value, (Expr, int, float, bool)):
            raise self.error(node, f"cannot store a {type(value).__name__} into buffer {buf.name}")
        if self.builder.reducer_epochs:
            self.evaluator.apply(node, check_no_partial_access, self.builder, buf, value)
        vectors = any(packed.is_vector(x) for x in (*indices, value))
        if vectors and buf.dtype.lanes == 1:  # (a buffer of a vector dtype is the semantic check's error)
            value = E.convert(value)
            makers = self.evaluator.apply(node, packed.store_lanes, buf, tuple(indices), value, self.span(node))
            self.items.extend(m if isinstance(m, S.Stmt) else _Wrapper(m) for m in makers)
            return
        value = self.evaluator.apply(node, E.cast, value, buf.dtype)
        self.items.append(S.BufferStore(buf, value, tuple(indices), span=self.span(node)))

    # ------------------------------------------------------------------ allocations

    def _claim_allocation(self, buf: Buffer, name: str, node: ast.stmt) -> bool:
        pending = self.builder.pending_allocations
        if not any(b is buf for b in pending):
            return False
        self._check_rebind(name, node)
        self._flush_allocations(node, (buf, name))
        return True

    def _flush_allocations(self, node: ast.stmt, named: tuple[Buffer, str] | None) -> None:
        """Open an Allocate for each buffer allocated by the statement just evaluated."""
        pending = self.builder.pending_allocations
        while pending:
            buf = pending.pop(0)
            name = named[1] if named is not None and named[0] is buf else buf.name
            new = dataclasses.replace(buf, name=name, span=self.span(node))
            self._rename(buf, new)
            span = self.span(node)
            self.items.append(_Wrapper(lambda body, b=new, sp=span: S.Allocate(b, body, span=sp)))
            if buf in self.builder.reducers:
                self.builder.reducers[new] = self.builder.reducers.pop(buf)
            init = self.builder.inits.pop(buf, None)
            if callable(init):  # a statement made for the allocated buffer (T.alloc_barrier's counts)
                self.items.append(init(new, span))
            elif init is not None:
                self.items.append(S.BufferStore(new, init, (E.const(0),), span=span))
            if named is not None and named[0] is buf:
                self.scope.names[name] = new

    def _rename(self, old: Buffer, new: Buffer) -> None:
        """Allocations are created before their name is known; fix up the one reference held so far."""
        for scope_names in (self.scope.names,):
            for k, v in list(scope_names.items()):
                if v is old:
                    scope_names[k] = new

    # ------------------------------------------------------------------ control flow

    def stmt_If(self, node: ast.If) -> None:
        cond = truth(self.evaluator.eval(node.test))
        if isinstance(cond, bool):
            for s in node.body if cond else node.orelse:
                self.statement(s)
            return
        then_case = self._block(node.body, "ir_branch")
        else_case = self._block(node.orelse, "ir_branch") if node.orelse else None
        self.items.append(S.IfThenElse(cond, then_case, else_case, span=self.span(node)))

    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(node, "`for ... else` is not supported in kernels")
        spec = self._loop_spec(node.iter)
        if isinstance(spec, PersistentSpec):
            self._persistent_for(node, spec)
            return
        if not isinstance(spec, LoopSpec):
            self._python_for(node, spec)
            return
        names = _target_names(node.target)
        if names is None or len(names) != len(spec.ranges):
            raise self.error(
                node.target,
                f"this loop binds {len(spec.ranges)} variable(s); write `for {_names_hint(spec)} in ...`",
            )
        loop_vars = [Var(r.min.dtype, n) for n, r in zip(names, spec.ranges)]
        body_scope_names = dict(zip(names, loop_vars))
        body = self._loop_body(node.body, body_scope_names, loop_kind=spec.kind)
        span = self.span(node)
        strides = spec.strides or (None,) * len(loop_vars)
        for var, rng, stride in reversed(list(zip(loop_vars, spec.ranges, strides))):
            if stride is not None:  # a step other than 1: count the iterations, the variable follows
                count, (start, step) = Var(var.dtype, f"{var.name}_count"), stride
                body = S.LetStmt(var, E.add(start, E.mul(count, step)), body, span=span)
                var = count
            body = S.For(var, rng.min, rng.extent, spec.kind, body, spec.annotations, span=span)
        self.items.append(body)

    def _persistent_for(self, node: ast.For, spec: PersistentSpec) -> None:
        """`for i, j in T.Persistent(...)`: a serial loop over the block's waves whose body binds the
        tile's coordinates (a block runs one wave fewer where the last is partly empty)."""
        names = _target_names(node.target)
        if names is None or len(names) != len(spec.domain):
            raise self.error(node.target, f"this T.Persistent loop binds {len(spec.domain)} variable(s), one per "
                             "dim of its domain")  # fmt: skip
        dtype = spec.index.dtype
        wave, tile = Var(dtype, "wave"), Var(dtype, "tile")
        coords = [Var(dtype, n) for n in names]
        body = self._loop_body(node.body, dict(zip(names, coords)))
        for var, value in reversed(list(zip(coords, spec.coordinates(tile)))):
            body = S.LetStmt(var, value, body)
        span = self.span(node)
        body = S.LetStmt(tile, E.add(E.mul(wave, spec.wave_size), spec.index), body)
        self.items.append(S.For(wave, E.const(0, dtype), spec.waves(), S.ForKind.SERIAL, body,
                                ((S.PERSISTENT, True),), span=span))  # fmt: skip

    def stmt_While(self, node: ast.While) -> None:
        """`while cond:` with a run-time condition is a While loop; with a Python condition it runs
        while parsing (like `if` on a Python value), each pass emitting the body once more."""
        if node.orelse:
            raise self.error(node, "`while ... else` is not supported in kernels")
        cond = truth(self.evaluator.eval(node.test))
        if isinstance(cond, bool):
            self._python_while(node, cond)
            return
        if self.builder.preludes:  # they would run once, before the loop, not at each test
            raise self.error(node.test, "this `while` condition calls a function that builds statements "
                             "(T.warp_reduce_*, or a plain Python function whose T.* calls build them)",
                             hint="compute it into a T.alloc_var before the loop and at the end of its body, and "
                             "test the variable")  # fmt: skip
        if not self.builder.kernels:
            raise self.error(node, "a `while` loop with a run-time condition is only valid inside "
                             "`with T.Kernel(...)`", hint="put the loop inside the kernel's block")  # fmt: skip
        if not any(isinstance(n, E.BufferLoad) for n in walk(cond)):
            raise self.error(
                node.test,
                f"the condition `{ast.unparse(node.test)}` reads no buffer, so nothing the loop body does can "
                "change it: the loop would run forever or never",
                hint="keep the loop state in a variable the body updates: `k = T.alloc_var('int32')` before "
                "the loop, `while k < n:` and `k = k + 1` inside it",
            )
        self.items.append(S.While(cond, self._loop_body(node.body, {}), span=self.span(node)))

    def _python_while(self, node: ast.While, cond: bool) -> None:
        """A `while` on a Python condition unrolls while parsing; the body must change the condition."""
        passes = 0
        while cond:
            passes += 1
            if passes > MAX_PARSE_TIME_ITERATIONS:
                raise self.error(
                    node.test,
                    f"this `while` loop's condition is a Python value and still true after "
                    f"{MAX_PARSE_TIME_ITERATIONS} passes while parsing (each pass emits the body once more)",
                    hint="a Python condition must become false through Python values the body changes; for a "
                    "loop that runs on the device make the condition read a T.alloc_var the body updates",
                )
            for s in node.body:
                self.statement(s)
            cond = truth(self.evaluator.eval(node.test))
            if not isinstance(cond, bool):
                raise self.error(
                    node.test,
                    "this `while` loop's condition was a Python value when the loop started and is a run-time "
                    "value now; the loop cannot be both unrolled while parsing and run on the device",
                    hint="make the condition a run-time value from the start (read a T.alloc_var), or keep it "
                    "a Python value",
                )

    def _loop_spec(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Call):
            func = self.evaluator.eval(node.func)
            if func is builtins.range:
                args = [self.evaluator.eval(a) for a in node.args]
                return self.evaluator.apply(node, python_range, *args)
        return self.evaluator.eval(node)

    def _loop_body(self, stmts: list[ast.stmt], names: dict[str, Var], kind: str = "ir_loop",
                   loop_kind: S.ForKind | None = None) -> S.Stmt:  # fmt: skip
        saved_items, saved_scope = self.items, self.scope
        self.items, self.scope = [], Scope(kind, self.scope, dict(names), loop_kind)
        try:
            for s in stmts:
                self.statement(s)
            return _fold(self.items)
        finally:
            self.items, self.scope = saved_items, saved_scope

    def _python_for(self, node: ast.For, iterable: Any) -> None:
        """`for x in (a, b):` over a Python iterable (tuple, list, enumerate, zip ...) unrolls at parse time."""
        if isinstance(iterable, (Expr, Buffer)) or not hasattr(iterable, "__iter__"):
            raise self.error(
                node.iter,
                f"cannot iterate over {type(iterable).__name__} in a kernel",
                hint="use T.serial, T.Parallel, T.Pipelined, T.unroll, T.vectorized or range",
            )
        for item in iterable:
            self._assign(node.target, item, node)
            for s in node.body:
                self.statement(s)

    def stmt_With(self, node: ast.With) -> None:
        if len(node.items) != 1:
            raise self.error(node, "a kernel `with` statement takes exactly one T.Kernel(...)")
        item = node.items[0]
        spec = self.evaluator.eval(item.context_expr)
        if isinstance(spec, WithBlock):
            if item.optional_vars is not None:
                raise self.error(item.optional_vars, "`with T.ir...:` binds no name")
            self.evaluator.apply(item.context_expr, spec.enter)
            try:
                body = self._block(node.body, "ir_branch")
            finally:
                spec.exit()
            self.items.append(self.evaluator.apply(item.context_expr, spec.build, body))
            return
        if isinstance(spec, WarpGroups):
            if item.optional_vars is not None:
                raise self.error(item.optional_vars, "`with T.ws(...)` binds no name")
            body = self._block(node.body, "ir_branch")
            self.items.append(S.IfThenElse(spec.condition, body, span=self.span(node)))
            return
        if not isinstance(spec, KernelSpec):
            raise self.error(
                item.context_expr, f"`with` in a kernel needs T.Kernel(...), got {type(spec).__name__}"
            )
        if self.builder.kernels:
            raise self.error(node, "T.Kernel cannot be nested inside another T.Kernel",
                             hint="write the kernels one after another; they launch in order")  # fmt: skip
        self.items.append(self._kernel(node, item, spec))

    def _kernel(self, node: ast.With, item: ast.withitem, spec: KernelSpec) -> S.KernelLaunch:
        names = _target_names(item.optional_vars) if item.optional_vars is not None else []
        if names is None or len(names) > len(spec.grid):
            raise self.error(
                item.optional_vars, f"T.Kernel has {len(spec.grid)} grid dims; bind at most that many"
            )
        block_vars = tuple(
            Var(dt.int32, names[i] if i < len(names) else _BLOCK_NAMES[i]) for i in range(len(spec.grid))
        )
        thread_vars = tuple(Var(dt.int32, _THREAD_NAMES[i]) for i in range(len(spec.threads)))
        ctx = B.KernelContext(block_vars, thread_vars, spec.threads)
        self.builder.kernels.append(ctx)
        try:
            body = self._loop_body(node.body, {n: v for n, v in zip(names, block_vars)}, kind="kernel")
        finally:
            self.builder.kernels.pop()
        for state in reversed(ctx.rng_states):  # visible to every draw, whatever block T.rng_init was in
            body = S.Allocate(state, body, span=state.span)
        return S.KernelLaunch(spec.grid, spec.threads, block_vars, thread_vars, body, spec.annotations,
                              span=self.span(node))  # fmt: skip

    def stmt_Return(self, node: ast.Return) -> None:
        if self.scope.inside_ir_body():
            raise self.error(
                node,
                "`return` inside a loop, a symbolic `if` or a T.Kernel block is not supported",
                hint="return once at the end of the kernel or macro; select values with T.if_then_else",
            )
        raise _Return(None if node.value is None else self.evaluator.eval(node.value))

    def stmt_Assert(self, node: ast.Assert) -> None:
        cond = truth(self.evaluator.eval(node.test))
        if not isinstance(cond, bool):
            raise self.error(
                node,
                "assert needs a condition known while parsing; symbolic asserts are not supported",
                hint="assert on Python values (tile sizes, dtypes); guard run-time values with `if`",
            )
        if not cond:
            msg = self.evaluator.eval(node.msg) if node.msg is not None else "assertion failed"
            raise self.error(node, str(msg))

    def stmt_FunctionDef(self, node: ast.FunctionDef) -> None:
        """A helper defined inside the kernel is an ordinary Python function (or a macro)."""
        # A copy: a macro's tree is parsed again at every call and must keep its own line numbers.
        module = ast.Module(body=[copy.deepcopy(node)], type_ignores=[])
        ast.increment_lineno(module, self.source.line_offset)
        namespace = self.namespace().flat()
        exec(compile(module, self.source.file, "exec"), namespace)  # noqa: S102 - the user's own helper
        self.scope.names[node.name] = namespace[node.name]

    # ------------------------------------------------------------------ macros

    def inline_macro(self, node: ast.Call, macro, args: list, kwargs: dict) -> Any:
        name = macro.func.__name__
        if len(self.macro_calls) >= MAX_MACRO_DEPTH:
            raise self._endless_macro(
                node, name, f"still expanding after {MAX_MACRO_DEPTH} nested macro calls"
            )
        if self.macro_calls:
            return self._expand_macro(node, macro, args, kwargs)
        try:
            return self._expand_macro(node, macro, args, kwargs)
        except RecursionError:
            # A deep caller stack can exhaust Python's limit before MAX_MACRO_DEPTH; the stack has
            # unwound to the outermost call by now, so reporting is safe.
            raise self._endless_macro(
                node, name, "exceeded Python's recursion limit while expanding"
            ) from None

    def _expand_macro(self, node: ast.Call, macro, args: list, kwargs: dict) -> Any:
        try:
            bound = macro.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(node, f"macro {macro.func.__name__}: {exc}") from None
        bound.apply_defaults()
        saved = (self.source, self.env, self.scope)
        self.source, self.env = macro.source, environment(macro.func)
        # Statements go straight into the caller's block, so values the macro binds stay in scope
        # for what it returns.
        self.scope = Scope("macro", None, dict(bound.arguments))
        self.macro_calls.append(macro.func.__name__)
        try:
            for s in self.source.tree.body:
                self.statement(s)
            return None
        except _Return as ret:
            return ret.value
        finally:
            self.macro_calls.pop()
            self.source, self.env, self.scope = saved

    def _endless_macro(self, node: ast.Call, name: str, what: str) -> ParseError:
        chain = [*self.macro_calls, name]
        start = max((k for k, n in enumerate(chain[:-1]) if n == name), default=0)
        cycle = " -> ".join(chain[start:])
        return self.error(
            node,
            f"macro {name} calls itself without end ({cycle} -> ...): {what}",
            hint="macros are inlined while parsing, so recursion must stop on a Python value "
            "(`if n == 1: return x` with n a Python int); repeat work with a loop instead",
        )


def _fold(items: list) -> S.Stmt:
    """Build the block: each wrapper (let, allocate) scopes the statements after it."""
    result: list[S.Stmt] = []
    for item in reversed(items):
        if isinstance(item, _Wrapper):
            result = [item.make(S.seq(*reversed(result)) if result else S.SeqStmt(()))]
        else:
            result.append(item)
    return S.seq(*reversed(result)) if result else S.SeqStmt(())


_STATEMENTS_HINT = (
    "kernels support assignments, `if`, `while`, `for` over T.serial/T.Parallel/T.Pipelined/T.unroll/"
    "T.vectorized/range, `with T.Kernel(...)`, T.* calls, macros and a final `return`"
)
_UNSUPPORTED_HINTS = {
    "Break": "loops always run their full trip count; guard the rest of the body with `if`",
    "Continue": "guard the rest of the loop body with `if` instead",
    "Try": "errors in kernels are reported while parsing; there is nothing to catch at run time",
}


def _target_names(target: ast.expr) -> list[str] | None:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
        return [e.id for e in target.elts]
    return None


def _names_hint(spec: LoopSpec) -> str:
    return ", ".join("ijklmn"[k] for k in range(len(spec.ranges)))


def _op_name(op: S.TileOp) -> str:
    return type(op).__name__.lower()


def parse_function(
    func, eager: Mapping[str, EagerParam] | None = None, outer_locals: Mapping[str, Any] | None = None
) -> PrimFunc:
    """Parse a Python function's source into a PrimFunc.

    `outer_locals` are the locals of the scope that defined `func` (decorators pass their caller's),
    needed when `from __future__ import annotations` leaves parameter annotations as text.
    """
    source = function_source(func)
    annotations = getattr(func, "__annotations__", None)
    try:
        return Parser(source, environment(func, outer_locals), annotations).parse(eager)
    except KernelError as exc:
        raise exc.with_traceback(None) from None


__all__ = ["EagerParam", "Parser", "parse_function"]
