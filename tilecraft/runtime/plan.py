"""`LaunchPlan`: how a kernel is called, decided once per compiled kernel and read by every call path.

A plan is made from a `CompiledArtifact` and the `out_idx` a `Kernel` allocates. Per parameter it says
what a call must pass: a buffer's dtype, each dim and stride (a constant, a symbolic dim bound by the
first array that has it, or an expression checked once every dim is bound), whether it must be
contiguous, whether the kernel writes it (so the memory must be writable), whether it is packed 4-bit
data, and its role (an input, an output to allocate, or a workspace each call allocates); a scalar's
kind and range. For the launch as a whole: the symbolic dims and the largest value each may take, the
byte alignment every buffer's address needs, and for each output the input it can be allocated like.

The plan is the one source of these rules. `Kernel` (tilecraft/jit/kernel.py) checks a call against it
and writes the error messages (`ParamPlan.bind`, `ParamPlan.check_memory` here); the generated fast path
for torch tensors (jit/fastpath.py) and the compiled launcher's rules (execution/native/plan.py) are
made from it and accept exactly the calls it accepts, sending every other call to the checked path for
its error. Device and byte order are not parameter facts: an array in non-native byte order is refused
when it is read (runtime/arrays.py), and the device is the execution backend's (`check_device`, and the
device index its `FastPath` or `NativeLaunch` names). What differs between backends is only how a
checked value reaches the kernel (the backend's launcher, `Launcher`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tilecraft.errors import ArgumentError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.eval import evaluate
from tilecraft.runtime.arrays import check_alignment
from tilecraft.runtime.scalars import check_dim, integer_range

if TYPE_CHECKING:
    from tilecraft.ir.dtype import DataType
    from tilecraft.runtime.arrays import ArrayArg
    from tilecraft.runtime.artifact import CompiledArtifact, ParamInfo

INPUT, OUTPUT, WORKSPACE = "input", "output", "workspace"
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True, eq=False)
class DimRule:
    """How one dim (or stride) of a buffer parameter is checked or bound: equal to `static`, bound to
    symbolic dim `var` (number `slot` of the plan's `dims`; -1: a variable that is not one of them), or
    equal to `expr` once every dim is bound."""

    axis: int
    static: int | None = None
    var: E.Var | None = None
    slot: int = -1
    expr: E.Expr | None = None


def _rules(exprs: Sequence[E.Expr], slots: dict[int, int]) -> tuple[DimRule, ...]:
    rules = []
    for axis, e in enumerate(exprs):
        value = E.const_value(e) if isinstance(e, E.Expr) else e
        if isinstance(value, int):
            rules.append(DimRule(axis, static=value))
        elif isinstance(e, E.Var):
            rules.append(DimRule(axis, var=e, slot=slots.get(id(e), -1)))
        else:
            rules.append(DimRule(axis, expr=e))
    return tuple(rules)


@dataclass(frozen=True, eq=False)
class ParamPlan:
    """One parameter's rules. `strides` None: the array must be contiguous (row-major); `role` is INPUT,
    OUTPUT (allocated when a call leaves it out) or WORKSPACE (allocated by every call)."""

    index: int
    info: ParamInfo
    role: str
    shape: tuple[DimRule, ...] = ()
    strides: tuple[DimRule, ...] | None = None
    # The info's facts every call reads, as fields (a property costs a call on the hot path).
    name: str = field(init=False)
    dtype: DataType = field(init=False)
    is_buffer: bool = field(init=False)
    written: bool = field(init=False)
    packed: bool = field(init=False)

    def __post_init__(self) -> None:
        info = self.info
        object.__setattr__(self, "name", info.name)
        object.__setattr__(self, "dtype", info.dtype)
        object.__setattr__(self, "is_buffer", info.kind == "buffer")
        object.__setattr__(self, "written", info.written)
        object.__setattr__(self, "packed", info.kind == "buffer" and info.dtype.is_packed)

    @property
    def plain(self) -> bool:
        """A contiguous, unpacked buffer whose every dim is a constant or a symbolic dim: what the fast
        path and the compiled launcher check without the interpreter."""
        return (self.is_buffer and self.strides is None and not self.packed
                and all(r.expr is None and (r.var is None or r.slot >= 0) for r in self.shape))  # fmt: skip

    def scalar_range(self) -> tuple[int, int] | None:
        """The values an integer scalar may take (None for a float or bool scalar, and for buffers)."""
        return integer_range(self.dtype) if not self.is_buffer and self.dtype.is_integer else None

    # ---------------------------------------------------------------- the checked path

    def bind(self, arg: ArrayArg, env: dict, deferred: list, last_known: bool = True) -> None:
        """Check `arg` (a packed parameter's logical view: `last_known` False when its last dim is bound
        by `packed_last` instead) and bind the dims it carries."""
        info = self.info
        if arg.dtype != info.dtype and not _byte_codes(info.dtype, arg.dtype):
            raise ArgumentError(
                f"parameter {info.name!r}: expected dtype {info.dtype}, got {arg.dtype}; "
                f"{conversion_hint(info.name, info.dtype, arg.library)}"
            )
        self.check_rank(arg)
        rules = self.shape if last_known else self.shape[:-1]
        self._bind_dims(rules, arg.shape, "shape", env, deferred)
        if self.strides is not None:
            self._bind_dims(self.strides, arg.strides, "strides", env, deferred)

    def _bind_dims(self, rules: Sequence[DimRule], actual: Sequence[int], what: str, env: dict, deferred: list
                   ) -> None:  # fmt: skip
        name = self.name
        for rule in rules:
            got = actual[rule.axis]
            if rule.static is not None:
                if got != rule.static:
                    declared = self.info.shape if what == "shape" else self.info.strides
                    raise ArgumentError(
                        f"parameter {name!r}: {what}[{rule.axis}] must be {rule.static}, got {got} "
                        f"(expected {what} {fmt(declared)}, got {tuple(actual)})"
                    )
            elif rule.var is not None:
                bound = env.get(rule.var)
                if bound is None:
                    check_dim(rule.var.name, rule.var.dtype, got, f"parameter {name!r}: {what}[{rule.axis}]")
                    env[rule.var] = got
                elif bound != got:
                    raise ArgumentError(
                        f"parameter {name!r}: {what}[{rule.axis}] is {got}, but {rule.var.name} = {bound} "
                        "from an earlier parameter"
                    )
            else:
                deferred.append((rule, got, name, what))

    def check_rank(self, arg: ArrayArg) -> None:
        info = self.info
        if len(arg.shape) != len(info.shape):
            raise ArgumentError(
                f"parameter {info.name!r}: expected {len(info.shape)} dims {fmt(info.shape)}, got shape {arg.shape}"
            )

    def packed_last(self, nbytes: int, env: dict, deferred: list, pending: list) -> int:
        """The last dim of packed data held in rows of `nbytes` bytes: N or N - 1 of 2 * nbytes values, as
        the parameter's declared dim says (a symbolic one that no other array binds is even: 2 * nbytes)."""
        rule, name = self.shape[-1], self.name
        if rule.static is not None:
            check_bytes(name, rule.static, nbytes)
            return rule.static
        if rule.var is not None:
            bound = env.get(rule.var)
            if bound is None:
                pending.append((rule.var, nbytes, name))
                return 2 * nbytes
            check_bytes(name, bound, nbytes)
            return bound
        deferred.append((rule, nbytes, name, "bytes"))
        return 2 * nbytes

    def check_memory(self, arg: ArrayArg, caller: ArrayArg, alignment: int) -> None:
        """Alignment and contiguity of the memory the kernel reads (`arg`) and, for a parameter the kernel
        writes, that the caller's array (`caller`) is writable. (The device is the execution backend's.)"""
        name = self.name
        check_alignment(arg, name, alignment)
        if self.strides is None and not contiguous(arg.shape, arg.strides):
            raise ArgumentError(
                f"parameter {name!r} must be contiguous (row-major), got strides {arg.strides} for shape "
                f"{arg.shape}; pass a contiguous copy ({_contiguous_copy(name, caller.library)}) or "
                "declare the parameter with T.StridedTensor"
            )
        if self.written and not caller.writable:
            raise ArgumentError(
                f"parameter {name!r} is read-only memory, but the kernel writes it; pass a writable "
                "array (numpy: a copy, np.array(x), or a memmap opened with mode='r+')"
            )


@dataclass(frozen=True, eq=False)
class LaunchPlan:
    """Every rule of a call to one compiled kernel with `outputs` allocated (see the module docstring).

    `params` follow the artifact's parameters (workspaces last); `inputs` are what a caller passes when
    it leaves the outputs out; `dims` the symbolic dims in launch order, `dim_limits` the largest value
    each may take (its dtype's, at most int64's); `twins[k]` an input with the dims and dtype of output
    `outputs[k]` (-1: none), which outputs may be allocated like; `alignment` the byte alignment every
    buffer's address needs (`CompiledArtifact.buffer_alignment`).
    """

    name: str
    params: tuple[ParamPlan, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    workspaces: tuple[int, ...]
    dims: tuple[E.Var, ...]
    dim_limits: tuple[int, ...]
    twins: tuple[int, ...]
    alignment: int
    # (parameter index, the Var) of each scalar parameter a buffer's shape uses (`T.empty([m + 1])` of a
    # kernel taking `m: T.int32`): a call binds it to the scalar's value before it allocates outputs.
    scalar_dims: tuple[tuple[int, E.Var], ...] = ()

    @staticmethod
    def build(artifact: CompiledArtifact, out_idx: Sequence[int] = ()) -> LaunchPlan:
        """The plan of `artifact` called with the parameters `out_idx` names allocated (negative indices
        count from the last parameter a caller passes; workspaces are not among those)."""
        workspaces = tuple(i for i, p in enumerate(artifact.params) if p.workspace)
        n = len(artifact.params) - len(workspaces)
        outputs = tuple(sorted({i % n if -n <= i < n else _bad_out_idx(i, n) for i in out_idx}))
        slots = {id(v): j for j, v in enumerate(artifact.symbolic_dims)}
        params = []
        for i, info in enumerate(artifact.params):
            role = WORKSPACE if info.workspace else OUTPUT if i in outputs else INPUT
            if info.kind != "buffer":
                params.append(ParamPlan(i, info, role))
                continue
            strides = _rules(info.strides, slots) if info.strides else None
            params.append(ParamPlan(i, info, role, _rules(info.shape, slots), strides))
        inputs = tuple(i for i in range(n) if i not in outputs)
        limits = tuple(min(integer_range(v.dtype)[1], _INT64_MAX) for v in artifact.symbolic_dims)
        twins = tuple(_twin(params[i], [params[j] for j in inputs]) for i in outputs)
        return LaunchPlan(artifact.function_name, tuple(params), inputs, outputs, workspaces,
                          tuple(artifact.symbolic_dims), limits, twins, artifact.buffer_alignment,
                          _scalar_dims(artifact))  # fmt: skip

    @property
    def callable_params(self) -> tuple[ParamPlan, ...]:
        """The parameters a caller passes (or gets back): every one but the workspaces."""
        return self.params[: len(self.params) - len(self.workspaces)]

    def input_buffers(self) -> tuple[int, ...]:
        return tuple(i for i in self.inputs if self.params[i].is_buffer)

    def plain(self) -> bool:
        """Whether every rule is one the fast path and the compiled launcher check themselves: no
        workspaces, every buffer plain (`ParamPlan.plain`), every symbolic dim bound by an input's shape."""
        if self.workspaces or not all(p.plain for p in self.params if p.is_buffer):
            return False
        bound = {r.slot for i in self.input_buffers() for r in self.params[i].shape if r.var is not None}
        return len(bound) == len(self.dims)

    def arrange(self, args: Sequence[Any], kernel: str | None = None) -> list:
        """The call's values in parameter order (None for each output the call leaves out); an error
        naming what kernel `kernel` (default: the artifact's function) takes when there are neither all
        parameters nor all inputs."""
        n = len(self.params) - len(self.workspaces)
        if len(args) == n:
            return list(args)
        if len(args) == len(self.inputs):
            values: list = [None] * n
            for i, a in zip(self.inputs, args):
                values[i] = a
            return values
        names = [self.params[i].name for i in self.inputs]
        every = ", ".join(p.name for p in self.callable_params)
        missing = f"; missing: {', '.join(names[len(args) :])}" if len(args) < len(names) else ""
        raise ArgumentError(
            f"kernel {kernel or self.name} takes {len(self.inputs)} inputs ({', '.join(names)})"
            + (f" or all {n} parameters ({every}; out_idx names the outputs)" if self.outputs else "")
            + f", got {len(args)}{missing}"
        )

    def check_deferred(self, env: dict, deferred: list) -> None:
        """The dims given by expressions, once every symbolic dim is bound; a symbolic dim that only such
        a dim holds (`A: T.Tensor((n * 4,))`, `(n + 1,)`) is solved from it first, as TileLang binds it."""
        solve_dims(env, deferred)
        for rule, got, name, what in deferred:
            unbound = [v.name for v in _unbound(rule.expr, env)]
            if unbound:
                raise ArgumentError(f"parameter {name!r}: {what}[{rule.axis}] is {rule.expr}, and no input's "
                                    f"shape binds {', '.join(unbound)} (nor solves for it)")  # fmt: skip
            expected = int(evaluate(rule.expr, env))
            if what == "bytes":  # the last dim of packed data, given as its bytes
                check_bytes(name, expected, got)
            elif expected != got:
                raise ArgumentError(
                    f"parameter {name!r}: {what}[{rule.axis}] must be {rule.expr} = {expected}, got {got}"
                )

    def shape_of(self, i: int, env: dict) -> tuple[int, ...]:
        """The shape of a new array for parameter i (an output or a workspace), from the bound dims."""
        return tuple(_eval_dim(e, env, self.params[i].name) for e in self.params[i].info.shape)

    def dim_values(self, env: dict) -> list[int]:
        """The symbolic dims' values, in launch order; an error for one no array bound."""
        values = []
        for v in self.dims:
            if v not in env:
                raise ArgumentError(f"symbolic dim {v.name} is not bound by any input's shape")
            values.append(env[v])
        return values


def _unbound(expr: E.Expr, env: dict) -> list[E.Var]:
    from tilecraft.ir.visitor import free_vars

    return [v for v in free_vars(expr) if v not in env]


def solve_dims(env: dict, deferred: list) -> None:
    """Bind each symbolic dim that is the one unbound variable of an affine dim expression `a * n + b`
    (a != 0) to the value that makes the expression the array's dim, while any is left to solve."""
    progress = True
    while progress:
        progress = False
        for rule, got, name, what in deferred:
            unbound = _unbound(rule.expr, env)
            if what == "bytes" or len(unbound) != 1:
                continue
            var = unbound[0]
            value = _affine_solution(rule.expr, var, got, env)
            if value is not None:
                where = f"{var.name}, solved from parameter {name!r}: {what}[{rule.axis}] = {rule.expr},"
                check_dim(var.name, var.dtype, value, where)
                env[var] = value
                progress = True


def _affine_solution(expr: E.Expr, var: E.Var, got: int, env: dict) -> int | None:
    """The integer n with expr(n) == got, where expr is `a * n + b` in `var` (checked at three points and
    at the solution); None when expr is not so or no integer solves it (the dim check then says)."""
    def at(n: int) -> int:
        return int(evaluate(expr, {**env, var: n}))

    try:
        b, a = at(0), at(1) - at(0)
        if a == 0 or at(2) != 2 * a + b or at(-1) != b - a or (got - b) % a or (got - b) // a < 0:
            return None
        n = (got - b) // a
        return n if at(n) == got else None
    except (ArithmeticError, ValueError):  # the expression divides by the dim, or the like: not affine
        return None


def _scalar_dims(artifact: CompiledArtifact) -> tuple[tuple[int, E.Var], ...]:
    """The scalar parameters that buffers' shapes use, as their Vars there (found by the parameter's name:
    a symbolic dim never shares a name with a parameter)."""
    from tilecraft.ir.visitor import free_vars

    dims = {id(v) for v in artifact.symbolic_dims}
    used = {v.name: v for p in artifact.params for v in free_vars((p.shape, p.strides)) if id(v) not in dims}
    return tuple((i, used[p.name]) for i, p in enumerate(artifact.params) if p.kind != "buffer" and p.name in used)


def _twin(output: ParamPlan, inputs: Sequence[ParamPlan]) -> int:
    """The first input buffer with `output`'s dtype and the same declared dims (-1: none)."""
    if not output.plain:
        return -1
    key = _dims_key(output)
    for p in inputs:
        if p.plain and p.dtype == output.dtype and _dims_key(p) == key:
            return p.index
    return -1


def _dims_key(p: ParamPlan) -> tuple:
    return tuple(r.static if r.static is not None else ("var", r.slot) for r in p.shape)


def _eval_dim(e: Any, env: dict, name: str) -> int:
    if isinstance(e, int):
        return e
    try:
        return int(evaluate(e, env))
    except (KeyError, ValueError) as exc:
        raise ArgumentError(
            f"cannot allocate {name!r}: its shape {e} depends on a dim no input provides ({exc})"
        ) from None


def _bad_out_idx(i: int, n: int) -> int:
    raise ArgumentError(f"out_idx {i} is out of range for a kernel with {n} parameters")


def contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Row-major contiguous element strides (dims of size 1 may have any stride; empty arrays are)."""
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def conversion_hint(name: str, dtype: DataType, library: str) -> str:
    """How the caller converts an array of `library` to `dtype` (a copy)."""
    if library == "torch":
        return f"convert it first: {name}.to(torch.{dtype})"
    try:
        np_dtype = dt.numpy_dtype(dtype)
    except Exception:  # noqa: BLE001 - a dtype numpy cannot hold: say what to pass, not how
        return f"pass a {dtype} array"
    scalar = np_dtype.type  # numpy.float32, ml_dtypes.bfloat16 ...
    return f"convert it first: {name}.astype({scalar.__module__.split('.')[0]}.{scalar.__name__})"


def _contiguous_copy(name: str, library: str) -> str:
    return f"{name}.contiguous()" if library == "torch" else f"numpy.ascontiguousarray({name})"


def _byte_codes(dtype: DataType, given: DataType) -> bool:
    """uint8 bytes given for a one-byte microscaling format (float6, float8_e8m0fnu): their codes."""
    return dtype.kind == "microfloat" and not dtype.is_packed and given == dt.uint8


def check_bytes(name: str, n: int, nbytes: int) -> None:
    """Rows of `n` packed 4-bit values take `nbytes` bytes."""
    if (n + 1) // 2 != nbytes:
        raise ArgumentError(
            f"parameter {name!r}: rows of {n} packed 4-bit values take {(n + 1) // 2} bytes, got {nbytes} (the "
            "last dim of packed data counts bytes: ceil(N / 2))"
        )


def resolve_packed(env: dict, pending: list) -> None:
    """Bind the symbolic last dims that only packed data gave (2 * its bytes), or check them against the
    value another array bound."""
    for var, nbytes, name in pending:
        bound = env.get(var)
        if bound is None:
            check_dim(var.name, var.dtype, 2 * nbytes, f"parameter {name!r}: the last dim")
            env[var] = 2 * nbytes
        else:
            check_bytes(name, bound, nbytes)
    pending.clear()


def fmt(exprs: Sequence[Any]) -> str:
    """A shape as an error message writes it: `(n, 4)`, `(n,)`."""
    return "(" + ", ".join(str(e) for e in exprs) + ("," if len(exprs) == 1 else "") + ")"
