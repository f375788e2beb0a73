"""Prints IR as kernel-language text that `T.parse_script` (tilecraft.language.script) reads back into an
equal IR: `print_ir(parse(print_ir(ir))) == print_ir(ir)`, and the re-parsed IR is structurally equal
function by function.

What the language spells (kernels, loops, allocations, tile ops, expressions) prints as a user writes it.
Everything else prints in the generic form `T.ir.<name>(field=value, ...)` (tilecraft.language.generic),
derived from the class's fields: statements and values a backend's lowering makes, layouts, host-side
kernel calls. Classes are named through the registry of tilecraft.ir.nodes, to which every `@node` and
`@ir_value` class belongs, a backend's own included, so no shared file lists them. A statement field (a
body) prints as the block of `with T.ir.<name>(...):`; a constant a field holds as a Python value prints
with its dtype (`T.int32(0)`) wherever the field also takes Python numbers.

The text keeps the IR's shape where parsing would change it: an expression the parser would compute from
constants (`0 * 32`) prints in the generic form, an `if` on a constant as `if T.ir.keep(False):`, a
comparison with a constant on the left with a typed constant, a store whose value has another dtype than
its buffer as `T.ir.BufferStore(...)`, and an object a pass bound twice (a reused loop variable) gets a
name per binding, as the two objects parsing makes. Names are unique within a function.

A node with more than one statement field does not parse back (no node has one today).
"""

from __future__ import annotations

import contextlib
import enum
import keyword
import math
import re
from collections.abc import Iterator
from typing import Any

from tilecraft.ir import expr as E
from tilecraft.ir import nodes
from tilecraft.ir import op as ops
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion, Range
from tilecraft.ir.dtype import DataType
from tilecraft.ir.function import POINTER_PARAMS_ATTR, IRModule, PrimFunc
from tilecraft.ir.python_lines import PythonLines
from tilecraft.ir.visitor import Visitor, walk

_PREC = {
    "Or": 1, "And": 2, "Not": 3, "CmpOp": 4, "bitwise_or": 5, "bitwise_xor": 6, "bitwise_and": 7,
    "shift": 8, "Add": 9, "Sub": 9, "Mul": 10, "Div": 10, "FloorDiv": 10, "FloorMod": 10, "neg": 11,
}  # fmt: skip
_ATOM = 13
_INFIX_CALLS = {
    "bitwise_and": "&",
    "bitwise_or": "|",
    "bitwise_xor": "^",
    "shift_left": "<<",
    "shift_right": ">>",
}
_ALLOC = {"shared": "alloc_shared", "shared.dyn": "alloc_shared", "local.fragment": "alloc_fragment",
          "local": "alloc_local", "local.var": "alloc_var"}  # fmt: skip
_KIND_FN = {S.ForKind.SERIAL: "serial", S.ForKind.UNROLLED: "unroll", S.ForKind.VECTORIZED: "vectorized",
            S.ForKind.PIPELINED: "Pipelined", S.ForKind.PARALLEL: "Parallel"}  # fmt: skip
_GEMM_KEYWORDS = (
    ("transpose_a", "transpose_A"), ("transpose_b", "transpose_B"), ("policy", "policy"),
    ("clear_accum", "clear_accum"), ("k_pack", "k_pack"), ("wg_wait", "wg_wait"),
)  # fmt: skip
_PIPELINE_KEYS = ("num_stages", "order", "stage", "group", "sync")


def dtype_str(dtype: DataType) -> str:
    return f'"{dtype}"'


class Printer(PythonLines):
    """Writes kernel-language text; names are made unique per printed unit."""

    def __init__(self, unique_names: bool = True, readable: bool = False) -> None:
        super().__init__()
        self.unique_names = unique_names
        # For messages: `5 // 0` rather than the generic form that parses back to the same tree.
        self.readable = readable
        self.names: dict[int, str] = {}
        self.used: set[str] = {"T", "float"}
        # Views not declared yet, and the indent of the function body they are declared in.
        self.pending_views: list[Buffer] = []
        self.made_at: dict[int, list[Buffer]] = {}
        self.view_indent = -1

    # ------------------------------------------------------------------ names

    def name(self, obj: E.Var | Buffer) -> str:
        key = id(obj)
        if key in self.names:
            return self.names[key]
        base = re.sub(r"\W", "_", obj.name) or "v"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "v_" + base
        name = base
        if self.unique_names:
            k = 1
            while name in self.used:
                name = f"{base}_{k}"
                k += 1
        self.used.add(name)
        self.names[key] = name
        return name

    @contextlib.contextmanager
    def binding(self, *objs: E.Var | Buffer) -> Iterator[None]:
        """The scope of a loop, let or allocation binding `objs`: an object bound a second time (a pass
        reused a loop variable) gets a name of its own there, as parsing the text makes two objects."""
        saved = {id(o): self.names.pop(id(o)) for o in objs if id(o) in self.names}
        try:
            yield
        finally:
            self.names.update(saved)

    # ------------------------------------------------------------------ expressions

    def expr(self, e: Any, parent: int = 0, like: DataType | None = None) -> str:
        text, prec = self._expr(e, like)
        return f"({text})" if prec < parent else text

    def _expr(self, e: Any, like: DataType | None) -> tuple[str, int]:
        if not isinstance(e, E.Expr):
            return repr(e), _ATOM
        if not self.readable and _folds_when_parsed(e):
            return self.generic(e), _ATOM
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is not None:
            return method(e, like)
        if isinstance(e, E.CmpOp):
            if E.is_const(e.a):  # Python reflects `0 < x` to `x > 0`; a typed constant keeps the order
                right = self.expr(e.b, _PREC["CmpOp"] + 1)
                return f"{self._typed_constant(e.a)} {e.symbol} {right}", _PREC["CmpOp"]
            return self._binary(e, e.symbol, _PREC["CmpOp"], _PREC["CmpOp"] + 1)
        if isinstance(e, E.BinaryOp):
            return self._e_binary(e)
        return self._generic_expr(e), _ATOM

    def _e_IntImm(self, e: E.IntImm, like) -> tuple[str, int]:
        if e.dtype.is_bool:
            return ("True" if e.value else "False"), _ATOM
        if e.dtype.name == "int32" or like == e.dtype:
            return str(e.value), (_PREC["neg"] if e.value < 0 else _ATOM)
        return f"T.{e.dtype}({e.value})", _ATOM

    def _e_FloatImm(self, e: E.FloatImm, like) -> tuple[str, int]:
        v = e.value
        text = repr(v) if math.isfinite(v) else f"float('{v}')"
        if math.isfinite(v) and (e.dtype.name == "float32" or like == e.dtype):
            return text, (_PREC["neg"] if v < 0 or text.startswith("-") else _ATOM)
        return f"T.{e.dtype}({text})", _ATOM

    def _e_StringImm(self, e: E.StringImm, like) -> tuple[str, int]:
        return repr(e.value), _ATOM

    def _e_Var(self, e: E.Var, like) -> tuple[str, int]:
        return self.name(e), _ATOM

    def _operand(self, e: E.Expr, other: E.Expr, prec: int) -> str:
        like = other.dtype if isinstance(e, (E.IntImm, E.FloatImm)) else None
        return self.expr(e, prec, like)

    def _binary(self, e: E.BinaryOp, symbol: str, prec: int, right_prec: int) -> tuple[str, int]:
        left = self._operand(e.a, e.b, prec)
        right = self._operand(e.b, e.a, right_prec)
        return f"{left} {symbol} {right}", prec

    def _e_binary(self, e: E.BinaryOp) -> tuple[str, int]:
        name = type(e).__name__
        if name in _PREC and name not in ("And", "Or"):
            return self._binary(e, e.symbol, _PREC[name], _PREC[name] + 1)
        fn = {"Min": "min", "Max": "max", "TruncMod": "truncmod"}.get(name)
        if fn is not None:
            return f"T.{fn}({self._operand(e.a, e.b, 0)}, {self._operand(e.b, e.a, 0)})", _ATOM
        return self._generic_expr(e), _ATOM

    def _e_And(self, e: E.And, like) -> tuple[str, int]:
        return self._binary(e, "and", _PREC["And"], _PREC["And"] + 1)

    def _e_Or(self, e: E.Or, like) -> tuple[str, int]:
        return self._binary(e, "or", _PREC["Or"], _PREC["Or"] + 1)

    def _e_Not(self, e: E.Not, like) -> tuple[str, int]:
        return f"not {self.expr(e.a, _PREC['Not'])}", _PREC["Not"]

    def _e_Select(self, e: E.Select, like) -> tuple[str, int]:
        c = self.expr(e.condition)
        t = self._operand(e.true_value, e.false_value, 0)
        f = self._operand(e.false_value, e.true_value, 0)
        return f"T.if_then_else({c}, {t}, {f})", _ATOM

    def _e_Cast(self, e: E.Cast, like) -> tuple[str, int]:
        return f"T.cast({self.expr(e.value)}, {dtype_str(e.dtype)})", _ATOM

    def _e_Call(self, e: E.Call, like) -> tuple[str, int]:
        if e.op in _INFIX_CALLS and len(e.args) == 2:
            prec = _PREC.get(e.op, _PREC["shift"])
            return self._binary(E.Add(e.dtype, *e.args), _INFIX_CALLS[e.op], prec, prec + 1)
        if e.op == "bitwise_not":
            return f"~{self.expr(e.args[0], _PREC['neg'])}", _PREC["neg"]
        if e.op == "reinterpret":
            return f"T.reinterpret({self.expr(e.args[0])}, {dtype_str(e.dtype)})", _ATOM
        if e.op in ("call_extern", "access_ptr") and e.args and _extern_form(e):
            if e.op == "call_extern":  # T.call_extern(dtype, name, *args)
                args = ", ".join(self.expr(a) for a in e.args)
                return f"T.call_extern({dtype_str(e.dtype)}, {args})", _ATOM
            load, mask, extent = e.args  # T.access_ptr(buf[i], mask, extent)
            return f"T.access_ptr({self.expr(load)}, {self.expr(mask)}, {self.expr(extent)})", _ATOM
        natural = e.op in ops.MATH_FLOAT + ops.MATH_ANY and e.args and e.args[0].dtype == e.dtype
        args = ", ".join(self.expr(a) for a in e.args)
        if natural:
            return f"T.{e.op}({args})", _ATOM
        sep = ", " if args else ""
        return f"T.call_intrin({dtype_str(e.dtype)}, {e.op!r}{sep}{args})", _ATOM

    def _e_BufferLoad(self, e: E.BufferLoad, like) -> tuple[str, int]:
        name = self.name(e.buffer)
        if e.buffer.scope == "local.var":
            return name, _ATOM
        return f"{name}[{', '.join(self.expr(i) for i in e.indices)}]", _ATOM

    def _e_Ramp(self, e: E.Ramp, like) -> tuple[str, int]:
        return f"T.Ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", _ATOM

    def _e_Broadcast(self, e: E.Broadcast, like) -> tuple[str, int]:
        return f"T.Broadcast({self.expr(e.value)}, {e.lanes})", _ATOM

    def _generic_expr(self, e: E.Expr) -> str:
        return self.generic(e)

    def value(self, v: Any) -> str:
        """Any field value: expressions, buffers, regions, tuples, enums, layouts, registered classes."""
        if isinstance(v, E.Expr):
            return self.expr(v)
        if isinstance(v, Buffer):
            return self.name(v)
        if isinstance(v, BufferRegion):
            return self.region(v)
        if isinstance(v, DataType):
            return dtype_str(v)
        if isinstance(v, S.GemmWarpPolicy):
            return f"T.GemmWarpPolicy.{v.value}"
        if isinstance(v, tuple):
            inner = ", ".join(self.value(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{self.exact(k)}: {self.exact(x)}" for k, x in v.items()) + "}"
        if hasattr(v, "structural_key") and hasattr(v, "vars"):  # T.Layout, T.Fragment: lambdas
            return _layout_text(v)
        if nodes.is_registered(v):
            return self.generic(v)
        return repr(v)

    def exact(self, v: Any, hint: Any = None) -> str:
        """`v` as the value a field annotated `hint` holds: a constant expression keeps its dtype
        (`T.int32(4)`, not the Python number `4`) unless the field holds numbers only as expressions."""
        if isinstance(v, (E.IntImm, E.FloatImm)) and not nodes.numbers_are_exprs(hint):
            return self._typed_constant(v)
        if isinstance(v, tuple):
            inner = ", ".join(self.exact(x, nodes.item_hint(hint, k)) for k, x in enumerate(v))
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        return self.value(v)

    def _typed_constant(self, e: E.IntImm | E.FloatImm) -> str:
        text, _ = self._expr(e, None)
        return text if text.startswith("T.") else f"T.{e.dtype}({text})"

    def generic(self, v: Any, skip: tuple[str, ...] = ()) -> str:
        """`T.ir.<name>(field=value, ...)`: any registered class, its fields that differ from their
        defaults spelled out (tilecraft.language.generic builds it again)."""
        cls = type(v)
        hints = nodes.field_types(cls)
        defaults = nodes.defaults_of(cls)
        args = []
        for key, x in nodes.fields_of(v).items():
            if key in skip or (key in defaults and _same_plain(x, defaults[key])):
                continue
            args.append(f"{key}={self.exact(x, hints.get(key))}")
        return f"T.ir.{nodes.qualified_name(cls)}({', '.join(args)})"

    # ------------------------------------------------------------------ regions

    def region(self, r: BufferRegion) -> str:
        buf = r.buffer
        if all(_is_zero(rng.min) and E.same_expr(rng.extent, dim) for rng, dim in zip(r.ranges, buf.shape)):
            return self.name(buf)
        has_slice = any(not _is_one(rng.extent) for rng in r.ranges)
        parts = [self._range(rng, has_slice) for rng in r.ranges]
        return f"{self.name(buf)}[{', '.join(parts)}]"

    def _range(self, rng: Range, index_allowed: bool) -> str:
        if index_allowed and _is_one(rng.extent):
            return self.expr(rng.min)
        if _is_zero(rng.min) and rng.min.dtype == rng.extent.dtype:
            return f":{self.expr(rng.extent)}"
        return f"{self.expr(rng.min)}:{self.expr(_stop(rng.min, rng.extent))}"

    # ------------------------------------------------------------------ statements

    def stmt(self, s: S.Stmt) -> None:
        if self.pending_views and self.indent == self.view_indent and not isinstance(s, _WRAPPERS):
            self._declare_views(s)
        method = getattr(self, "_s_" + type(s).__name__, None)
        if method is not None:
            method(s)
        else:
            self._generic_stmt(s)

    def _declare_views(self, s: S.Stmt) -> None:
        """`V = T.Tensor(shape, dtype, A.data)` for the views `s` uses, just before the function-level
        statement `s`: once, in scope for every kernel after it."""
        used = {id(n) for n in walk(s) if isinstance(n, Buffer)}
        for view in [v for v in self.pending_views if id(v) in used]:
            if view.address is not None:
                self._declare_made(view)
            else:
                self._view_line(view)
            self.pending_views.remove(view)

    def _view_line(self, view: Buffer) -> None:
        shape = self.value(tuple(view.shape))
        base, dtype = self.name(view.base), dtype_str(view.declared_dtype)
        self.line(f"{self.name(view)} = T.Tensor({shape}, {dtype}, {base}.data)")

    def _declare_made(self, buf: Buffer) -> None:
        """`X = T.make_tensor(address, shape, dtype)` for a tensor made from an address."""
        args = f"{self.expr(buf.address)}, {self.value(tuple(buf.shape))}, {dtype_str(buf.declared_dtype)}"
        if buf.strides:
            args += f", {self.value(tuple(buf.strides))}"
        self.line(f"{self.name(buf)} = T.make_tensor({args})")

    def _s_SeqStmt(self, s: S.SeqStmt) -> None:
        for k, x in enumerate(s.stmts):
            if k == len(s.stmts) - 1 or not _opens_scope(x):
                self.stmt(x)
                continue
            # an allocation or let that ends before the statements after it: a block of its own
            if self.pending_views and self.indent == self.view_indent:
                self._declare_views(x)
            self.line("with T.ir.scope():")
            self.block(x)

    def _s_Evaluate(self, s: S.Evaluate) -> None:
        v = s.value
        if isinstance(v, E.Call) and v.op == "sync_threads" and not v.args:
            self.line("T.sync_threads()")
        else:
            self.line(f"T.evaluate({self.expr(v)})")

    def _s_BufferStore(self, s: S.BufferStore) -> None:
        if s.value.dtype != s.buffer.dtype:  # `A[i] = v` would cast v to A's dtype
            self._generic_stmt(s)
            return
        value = self.expr(s.value, 0, s.buffer.dtype)
        name = self.name(s.buffer)
        if s.buffer.scope == "local.var":
            self.line(f"{name} = {value}")
        else:
            self.line(f"{name}[{', '.join(self.expr(i) for i in s.indices)}] = {value}")

    def _s_LetStmt(self, s: S.LetStmt) -> None:
        value = self.expr(s.value, 0, s.var.dtype)
        with self.binding(s.var):
            self.line(f"{self.name(s.var)}: T.{s.var.dtype} = {value}")
            for made in self.made_at.pop(id(s.var), ()):  # tensors at the address this binds
                self._declare_made(made)
            self.stmt(s.body)

    def _s_IfThenElse(self, s: S.IfThenElse) -> None:
        if isinstance(s.condition, E.IntImm):  # `if True:` would be decided while parsing
            condition = f"T.ir.keep({self.exact(s.condition)})"
        else:
            condition = self.expr(s.condition)
        self.if_else(condition, s.then_case, s.else_case)

    def _s_For(self, s: S.For) -> None:
        loops = [s]
        while s.kind is S.ForKind.PARALLEL and _merges_into(loops, loops[-1].body):
            loops.append(loops[-1].body)
        args = self._loop_args(loops)
        with self.binding(*(f.loop_var for f in loops)):
            names = ", ".join(self.name(f.loop_var) for f in loops)
            self.line(f"for {names} in T.{_KIND_FN[s.kind]}({args}):")
            self.block(loops[-1].body)

    def _s_While(self, s: S.While) -> None:
        self.line(f"while {self.expr(s.condition)}:")
        self.block(s.body)

    def _loop_args(self, loops: list[S.For]) -> str:
        s = loops[0]
        if s.kind is S.ForKind.PARALLEL:
            args = [self._parallel_extent(f) for f in loops]
        elif _is_zero(s.min):
            args = [self.expr(s.extent)]
        else:
            args = [self.expr(s.min), self.expr(_stop(s.min, s.extent))]
        extra = dict(s.annotations)
        keys = _PIPELINE_KEYS if s.kind is S.ForKind.PIPELINED else ()
        if s.kind is S.ForKind.PARALLEL:
            keys = ("coalesced_width",)
        for key in keys:
            if key in extra:
                args.append(f"{key}={self.value(extra.pop(key))}")
        if extra:
            args.append(f"annotations={self.value(extra)}")
        return ", ".join(args)

    def _parallel_extent(self, f: S.For) -> str:
        if _is_zero(f.min):
            return self.expr(f.extent)
        return f"({self.expr(f.min)}, {self.expr(_stop(f.min, f.extent))})"

    def _s_Allocate(self, s: S.Allocate) -> None:
        b = s.buffer
        fn = _ALLOC.get(b.scope, "alloc_local")
        if b.scope == S.BARRIER_SCOPE:
            self._barriers(s)
            return
        with self.binding(b):
            if b.scope == "local.var":
                self.line(f"{self.name(b)} = T.alloc_var({dtype_str(b.dtype)})")
            else:
                shape = self.value(tuple(b.shape))
                scope = ', scope="shared"' if b.scope == "shared" else ""
                self.line(f"{self.name(b)} = T.{fn}({shape}, {dtype_str(b.declared_dtype)}{scope})")
            views = [v for v in _views(s.body) if v.base is b]
            with self.binding(*views):
                for view in views:  # a tile's views, where the tile is in scope
                    self._view_line(view)
                self.stmt(s.body)

    def _barriers(self, s: S.Allocate) -> None:
        """`T.alloc_barrier(counts)` is the allocation and its BarrierInit, printed as one line."""
        stmts = list(s.body.stmts) if isinstance(s.body, S.SeqStmt) else [s.body]
        init = stmts[0] if stmts else None
        if not isinstance(init, S.BarrierInit) or init.barriers is not s.buffer:
            raise ValueError(f"barrier buffer {s.buffer.name} is allocated without its BarrierInit")
        counts = list(init.counts)
        self.line(f"{self.name(s.buffer)} = T.alloc_barrier({counts[0] if len(counts) == 1 else counts})")
        self.stmt(S.seq(*stmts[1:]))

    def _s_BarrierInit(self, s: S.BarrierInit) -> None:
        raise ValueError(f"the BarrierInit of {s.barriers.name} has no surface form away from its allocation")

    def _s_Mbarrier(self, s: S.Mbarrier) -> None:
        barrier = f"{self.name(s.barriers)}[{self.expr(s.index)}]"
        if s.op == "arrive":
            self.line(f"T.mbarrier_arrive({barrier})")
        elif s.op == "wait":
            self.line(f"T.mbarrier_wait_parity({barrier}, {self.expr(s.value)})")
        else:
            self.line(f"T.mbarrier_expect_tx({barrier}, {self.expr(s.value)})")

    def _s_KernelLaunch(self, s: S.KernelLaunch) -> None:
        grid = ", ".join(self.expr(g) for g in s.grid)
        threads = str(s.threads[0]) if len(s.threads) == 1 else str(tuple(s.threads))
        extra = f", annotations={self.value(dict(s.annotations))}" if s.annotations else ""
        names = [self.name(v) for v in s.block_vars]
        target = names[0] if len(names) == 1 else f"({', '.join(names)})"
        self.line(f"with T.Kernel({grid}, threads={threads}{extra}) as {target}:")
        self.indent += 1
        used = _used_vars(s.body)
        for k, tv in enumerate(s.thread_vars):
            if id(tv) in used:
                self.line(f"{self.name(tv)} = T.get_thread_binding({k})")
        self.indent -= 1
        self.block(s.body)

    def _s_Copy(self, s: S.Copy) -> None:
        extra = "".join(f", {k}={self.value(v)}" for k, v in s.annotations if k in S.COPY_KEYWORDS)
        others = {k: v for k, v in s.annotations if k not in S.COPY_KEYWORDS}
        if others:
            extra += f", annotations={self.value(others)}"
        self.line(f"T.copy({self.region(s.src)}, {self.region(s.dst)}{extra})")

    def _s_Fill(self, s: S.Fill) -> None:
        self.line(f"T.fill({self.region(s.dst)}, {self.expr(s.value, 0, s.dst.dtype)})")

    def _s_Gemm(self, s: S.Gemm) -> None:
        args = [self.region(s.a), self.region(s.b), self.region(s.c)]
        defaults = S.Gemm(s.a, s.b, s.c)
        for f, kw in _GEMM_KEYWORDS:
            if getattr(s, f) != getattr(defaults, f):
                args.append(f"{kw}={self.value(getattr(s, f))}")
        if s.annotations:
            args.append(f"annotations={self.value(dict(s.annotations))}")
        self.line(f"T.gemm({', '.join(args)})")

    def _s_Reduce(self, s: S.Reduce) -> None:
        clear = "" if s.clear else ", clear=False"
        nan = "" if s.nan_propagate else ", nan_propagate=False"
        self.line(f"T.reduce_{s.kind}({self.region(s.src)}, {self.region(s.dst)}, dim={s.dim}{clear}{nan})")

    def _s_Cumsum(self, s: S.Cumsum) -> None:
        rev = ", reverse=True" if s.reverse else ""
        self.line(f"T.cum{s.kind}({self.region(s.src)}, {self.region(s.dst)}, dim={s.dim}{rev})")

    def _s_AtomicOp(self, s: S.AtomicOp) -> None:
        if isinstance(s.value, BufferRegion):
            self.line(f"T.atomic_{s.kind}({self.region(s.dst)}, {self.region(s.value)})")
            return
        element = f"{self.name(s.dst.buffer)}[{', '.join(self.expr(r.min) for r in s.dst.ranges)}]"
        self.line(f"T.atomic_{s.kind}({element}, {self.expr(s.value, 0, s.dst.dtype)})")

    def _s_UseSwizzle(self, s: S.UseSwizzle) -> None:
        self.line(f"T.use_swizzle(panel_size={s.panel_size}, order={s.order!r})")

    def _s_AnnotateLayout(self, s: S.AnnotateLayout) -> None:
        self.line(f"T.annotate_layout({{{self.name(s.buffer)}: {self.value(s.layout)}}})")

    def _s_AnnotateSafeValue(self, s: S.AnnotateSafeValue) -> None:
        self.line(f"T.annotate_safe_value({{{self.name(s.buffer)}: {self.expr(s.value, 0, s.buffer.dtype)}}})")

    def _s_Print(self, s: S.Print) -> None:
        value = self.region(s.value) if isinstance(s.value, BufferRegion) else self.expr(s.value)
        msg = f", msg={s.msg!r}" if s.msg else ""
        self.line(f"T.print({value}{msg})")

    def _generic_stmt(self, s: S.Stmt) -> None:
        """Statements the language has no spelling for: `T.ir.<name>(fields)`; a statement field (a body)
        becomes the indented block of `with T.ir.<name>(other fields):`."""
        bodies = [k for k, v in nodes.fields_of(s).items() if isinstance(v, S.Stmt)]
        if not bodies:
            self.line(self.generic(s))
            return
        head = f"with {self.generic(s, skip=tuple(bodies))}:"
        for key in bodies:  # more than one body does not parse back (no node has two)
            self.line(head + (f"  # {key}" if len(bodies) > 1 else ""))
            self.block(getattr(s, key))

    # ------------------------------------------------------------------ functions

    def func(self, f: PrimFunc) -> None:
        params = []
        for p in f.params:
            if isinstance(p, Buffer):
                params.append(f"{self.name(p)}: {self._tensor_type(p)}")
            elif p.name in (f.attr(POINTER_PARAMS_ATTR, ()) or ()):
                params.append(f"{self.name(p)}: T.ptr")
            else:
                params.append(f"{self.name(p)}: T.{p.dtype}")
        self.line("@T.prim_func")
        self.line(f"def {f.name}({', '.join(params)}):")
        self.indent += 1
        if f.attrs:
            self.line(f"T.func_attr({self.value(dict(f.attrs))})")
        self.indent -= 1
        lets = {id(n.var) for n in walk(f.body) if isinstance(n, S.LetStmt)}
        made = _made(f.body)
        self.made_at = {}
        for buf in made:
            if id(buf.address) in lets:
                self.made_at.setdefault(id(buf.address), []).append(buf)
        views = [v for v in _views(f.body) if v.scope == "global"]
        self.pending_views = views + [b for b in made if id(b.address) not in lets]
        self.view_indent = self.indent + 1
        self.block(f.body)

    def _tensor_type(self, b: Buffer) -> str:
        shape = self.value(tuple(b.shape))
        if b.strides:
            return f"T.StridedTensor({shape}, {self.value(tuple(b.strides))}, {dtype_str(b.declared_dtype)})"
        return f"T.Tensor({shape}, {dtype_str(b.declared_dtype)})"

    def module(self, funcs: list[PrimFunc]) -> str:
        body_printer_lines = []
        declared = []
        for f in funcs:
            for v in _module_level_vars(f):
                if id(v) not in self.names:
                    declared.append(v)
                    self.name(v)
        # Names are scoped per function (parsing makes each function's buffers its own), the module's
        # symbolic dims aside.
        module_names, module_used = dict(self.names), set(self.used)
        for f in funcs:
            self.names, self.used = dict(module_names), set(module_used)
            self.func(f)
            self.line("")
        body_printer_lines, self.lines = self.lines, []
        header = ["import tilecraft.language as T", ""]
        for v in declared:
            header.append(f'{self.name(v)} = T.dynamic("{self.name(v)}", {dtype_str(v.dtype)})')
        if declared:
            header.append("")
        header.append("")
        return "\n".join(header + body_printer_lines).rstrip() + "\n"


# Statements that scope the rest of their block and print it at their own indent.
_WRAPPERS = (S.SeqStmt, S.LetStmt, S.Allocate)


def _opens_scope(s: S.Stmt) -> bool:
    """Whether the printed `s` ends in a binding (allocation, let) whose scope would take in whatever
    follows it at the same indentation."""
    if isinstance(s, S.SeqStmt):
        return bool(s.stmts) and _opens_scope(s.stmts[-1])
    return isinstance(s, (S.LetStmt, S.Allocate))


def _views(body: S.Stmt) -> list[Buffer]:
    """The views `body` uses, in order of first use."""
    found: dict[int, Buffer] = {}
    for n in walk(body):
        if isinstance(n, Buffer) and n.base is not None:
            found.setdefault(id(n), n)
    return list(found.values())


def _made(body: S.Stmt) -> list[Buffer]:
    """The tensors made from addresses (T.make_tensor) that `body` uses, in order of first use."""
    found: dict[int, Buffer] = {}
    for n in walk(body):
        if isinstance(n, Buffer) and n.address is not None:
            found.setdefault(id(n), n)
    return list(found.values())


def _module_level_vars(f: PrimFunc) -> list[E.Var]:
    out = list(f.symbolic_dims)
    for v in f.attr("tilecraft.consts", ()) or ():
        if all(v is not o for o in out):
            out.append(v)
    return out


def _extern_form(e: E.Call) -> bool:
    """Whether a call_extern / access_ptr call has the arguments its T.* spelling builds back."""
    if e.op == "call_extern":
        return isinstance(e.args[0], E.StringImm)
    return (len(e.args) == 3 and isinstance(e.args[0], E.BufferLoad) and isinstance(e.args[1], E.StringImm)
            and e.dtype == E.dt.uint64 and e.args[2].dtype == E.dt.int32)  # fmt: skip


def _layout_text(layout) -> str:
    p = Printer(unique_names=False)
    args = ", ".join(p.name(v) for v in layout.vars)
    if type(layout).__name__ == "Layout":
        body = ", ".join(p.expr(e) for e in layout.index)
        return f"T.Layout({layout.shape}, lambda {args}: ({body},))"
    rep = f", {p.name(layout.replica_var)}" if layout.replicate > 1 else ""
    index = ", ".join(p.expr(e) for e in layout.index)
    return (
        f"T.Fragment({layout.shape}, forward_thread_fn=lambda {args}{rep}: {p.expr(layout.thread)}, "
        f"forward_index_fn=lambda {args}: ({index},), replicate={layout.replicate})"
    )


def _merges_into(loops: list[S.For], inner: S.Stmt) -> bool:
    """Whether `inner` prints as one more variable of `T.Parallel(...)`: the same annotations, and
    bounds that do not use the outer loop variables (all extents are evaluated before the loop)."""
    if not (isinstance(inner, S.For) and inner.kind is S.ForKind.PARALLEL):
        return False
    if not E.same_expr(inner.annotations, loops[0].annotations):
        return False
    outer = {id(f.loop_var) for f in loops}
    return not (outer & _used_vars((inner.min, inner.extent)))


def _stop(start: E.Expr, extent: E.Expr) -> E.Expr:
    """The end of `[start, start + extent)`, written back as `stop` when the extent is `stop - start`
    (what parsing `(start, stop)` makes); `extent_between` recovers the same extent from either."""
    if isinstance(extent, E.Sub) and E.same_expr(extent.b, start):
        return extent.a
    return E.add(start, extent)


def _folds_when_parsed(e: E.Expr) -> bool:
    """Whether the language would compute `e` from its constant operands while parsing (`0 * 32` is the
    Python number 0): such an expression prints in the generic form, which builds it as it is."""
    if isinstance(e, (E.And, E.Or)):
        return E.is_const(e.a) or E.is_const(e.b)
    if isinstance(e, E.BinaryOp):
        return E.is_const(e.a) and E.is_const(e.b)
    if isinstance(e, E.Call) and e.op in _INFIX_CALLS | {"bitwise_not": "~"}:
        return all(E.is_const(a) for a in e.args)
    if isinstance(e, (E.Cast, E.Not)):
        return E.is_const(e.value if isinstance(e, E.Cast) else e.a)
    if isinstance(e, E.Select):
        return E.is_const(e.condition)
    return False


def _same_plain(value: Any, default: Any) -> bool:
    """Whether `value` is the plain (not IR) `default` of its field."""
    plain = (bool, int, float, str, type(None), tuple, enum.Enum)
    if not isinstance(default, plain) or type(value) is not type(default):
        return False
    if isinstance(default, tuple):
        return not default and not value
    return value == default


def _is_zero(e: Any) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


def _is_one(e: Any) -> bool:
    return isinstance(e, E.IntImm) and e.value == 1


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class _VarUse(Visitor):
    def __init__(self) -> None:
        self.ids: set[int] = set()

    def visit_Var(self, v: E.Var) -> None:
        self.ids.add(id(v))


def _used_vars(node: Any) -> set[int]:
    v = _VarUse()
    v.visit(node)
    return v.ids


def print_ir(node: Any) -> str:
    """Kernel-language text for a module, a function, a statement or an expression."""
    p = Printer()
    if isinstance(node, IRModule):
        return p.module(list(node.functions))
    if isinstance(node, PrimFunc):
        return p.module([node])
    if isinstance(node, S.Stmt):
        p.stmt(node)
        return "\n".join(p.lines) + "\n"
    return p.expr(node)


def expr_to_str(e: E.Expr) -> str:
    return Printer(unique_names=False, readable=True).expr(e)
