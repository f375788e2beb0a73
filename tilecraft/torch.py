"""PyTorch integration: a tilecraft kernel as a `torch.library` custom op.

    op = tilecraft.torch.custom_op(kernel, name="mylib::scale")
    y = op(x, 2.0)                       # eager: runs the kernel
    torch.compile(model, fullgraph=True) # traces through `op` without a graph break

The op's schema comes from the kernel's parameters: each input buffer is a `Tensor`, each scalar an
`int`, `float` or `bool`, and the outputs (`out_idx`) are what it returns. An input the kernel writes
(in place, not in `out_idx`) is declared mutated (`Tensor(a!)`), so torch orders it correctly. The fake
(meta) implementation that torch.compile traces with gives each output the shape its `T.Tensor`
declaration states, with the symbolic dims bound from the inputs' shapes, and its dtype; it runs no
kernel and touches no memory.

`kernel_or_jit_function` is a compiled `Kernel`, or an eager-style `@tilecraft.jit` function (its body
opens `with T.Kernel(...)`), which is specialized, and compiled once, per shape of its tensors. A
lazy-style jit function needs its factory's arguments: pass `f(M, N, ...)`, a Kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tilecraft.errors import ArgumentError, TilecraftError
from tilecraft.ir import expr as E
from tilecraft.ir.eval import evaluate

_NEED_TORCH = "tilecraft.torch needs PyTorch; install it (pip install torch, or pip install tilecraft[torch])"
_DEFAULT_NAMESPACE = "tilecraft"


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise TilecraftError(_NEED_TORCH) from None
    return torch


def custom_op(kernel_or_jit_function: Any, name: str, *, device_types: str | Sequence[str] | None = None
              ) -> Callable[..., Any]:  # fmt: skip
    """Register `kernel_or_jit_function` as the torch custom op `name` ("namespace::op"; a bare name
    goes in the "tilecraft" namespace) and return the op (callable like the kernel, with tensors).

    `device_types` limits the devices the op is registered for (default: every device; the kernel's own
    checks refuse tensors on a device its target cannot read)."""
    torch = _torch()
    signature = _Signature.of(kernel_or_jit_function)
    qualified = name if "::" in name else f"{_DEFAULT_NAMESPACE}::{name}"
    op = torch.library.custom_op(
        qualified, signature.run, mutates_args=signature.mutated, device_types=device_types,
        schema=signature.schema(),
    )  # fmt: skip
    op.register_fake(signature.fake)
    return op


_SCALAR_TYPES = {"bool": "bool", "int": "int", "uint": "int"}


class _Signature:
    """The schema, eager implementation and fake implementation of one kernel (or eager jit function)."""

    def __init__(self, params: Sequence[Any], outputs: Sequence[int], kernel_for: Callable[[tuple], Any]) -> None:
        self.params = tuple(params)
        self.outputs = tuple(outputs)
        self.inputs = tuple(i for i in range(len(self.params)) if i not in self.outputs)
        self.kernel_for = kernel_for
        self.mutated = tuple(self.params[i].name for i in self.inputs if self.params[i].kind == "buffer"
                             and self.params[i].written)  # fmt: skip

    @staticmethod
    def of(target: Any) -> _Signature:
        from tilecraft.jit.api import JITFunction
        from tilecraft.jit.kernel import Kernel

        if isinstance(target, Kernel):
            return _Signature(target.params, target.out_idx, lambda args: target)
        if isinstance(target, JITFunction):
            return _eager_signature(target)
        raise ArgumentError(
            f"tilecraft.torch.custom_op takes a compiled Kernel or an eager-style @tilecraft.jit function, "
            f"got {type(target).__name__}"
        )

    def schema(self) -> str:
        args = []
        for j, i in enumerate(self.inputs):
            p = self.params[i]
            if p.kind == "buffer":
                alias = f"({chr(ord('a') + j % 26)}{j // 26 or ''}!)" if p.name in self.mutated else ""
                args.append(f"Tensor{alias} {p.name}")
            else:
                args.append(f"{_SCALAR_TYPES.get(p.dtype.kind, 'float')} {p.name}")
        returns = ["Tensor"] * len(self.outputs)
        result = returns[0] if len(returns) == 1 else "(" + ", ".join(returns) + ")"
        return f"({', '.join(args)}) -> {result}"

    def run(self, *args: Any) -> Any:
        result = self.kernel_for(args)(*args)
        return _returned(result, len(self.outputs))

    def fake(self, *args: Any) -> Any:
        torch = _torch()
        kernel = self.kernel_for(args)
        env = _bind_dims(kernel.params, self.inputs, args)
        reference = next(a for a in args if isinstance(a, torch.Tensor))
        outputs = []
        for i in self.outputs:
            p = kernel.params[i]
            shape = [_dim(e, env, p.name) for e in p.shape]
            if p.dtype.is_packed:  # bytes, two values each (runtime/packed.py)
                shape[-1] = (shape[-1] + 1) // 2
            outputs.append(reference.new_empty(shape, dtype=_storage(p.dtype).as_torch()))
        return _returned(outputs, len(self.outputs))


def _returned(result: Any, count: int) -> Any:
    if count == 0:
        return None
    if count == 1:
        return result[0] if isinstance(result, list) else result
    return tuple(result)


def _eager_signature(function: Any) -> _Signature:
    """The signature of an eager jit function: its parameters as parsed with every array a tensor; the
    Kernel of a call is compiled once per shape (the jit function memoizes it)."""
    if not function.eager:
        raise ArgumentError(
            f"{function.func.__name__} is a lazy-style @tilecraft.jit factory; pass the Kernel it returns "
            f"for your sizes: tilecraft.torch.custom_op({function.func.__name__}(...), name=...)"
        )
    from tilecraft.jit.api import _normalize_out_idx, consts_from_shapes
    from tilecraft.runtime.artifact import ParamInfo
    from tilecraft.transform.written import written_params

    names = [n for n, p in function.signature.parameters.items() if p.default is p.empty]
    parsed = function._parse_eager({}, names)
    n = len(parsed.params)
    outputs = tuple(sorted({i % n for i in _normalize_out_idx(function.options.get("out_idx"), parsed)}))
    params = [ParamInfo.from_param(p, w) for p, w in zip(parsed.params, written_params(parsed))]
    inputs = [i for i in range(len(params)) if i not in outputs]

    def kernel_for(args: tuple) -> Any:
        shapes = {params[i].name: _shape(a) for i, a in zip(inputs, args) if params[i].kind == "buffer"}
        consts = consts_from_shapes(parsed, shapes, shapes)  # torch holds packed 4-bit data as bytes
        return function._specialize(parsed, consts)

    return _Signature(params, outputs, kernel_for)


def _shape(tensor: Any) -> tuple[int, ...]:
    """A tensor's shape, for binding compile-time symbols without reading its data (fake tensors)."""
    return tuple(int(s) for s in tensor.shape)


def _bind_dims(params: Sequence[Any], inputs: Sequence[int], args: Sequence[Any]) -> dict:
    """The symbolic dims bound by the inputs' shapes (as torch gives them: ints, or SymInts when
    torch.compile traces with dynamic shapes)."""
    env: dict = {}
    for i, value in zip(inputs, args):
        p = params[i]
        if p.kind != "buffer":
            continue
        if len(value.shape) != len(p.shape):
            raise ArgumentError(
                f"parameter {p.name!r}: expected {len(p.shape)} dims, got shape {tuple(value.shape)}"
            )
        for axis, (e, size) in enumerate(zip(p.shape, value.shape)):
            if p.dtype.is_packed and axis == len(p.shape) - 1:
                continue  # bytes, not values: bound from another input, or taken as 2 * size below
            if isinstance(e, E.Var) and e not in env:
                env[e] = size
    for i, value in zip(inputs, args):
        p = params[i]
        e = p.shape[-1] if p.kind == "buffer" and p.dtype.is_packed and p.shape else None
        if isinstance(e, E.Var) and e not in env:
            env[e] = 2 * value.shape[-1]
    return env


def _storage(dtype: Any) -> Any:
    from tilecraft.runtime.packed import storage_dtype

    return storage_dtype(dtype) if dtype.is_packed else dtype


def _dim(e: Any, env: dict, name: str) -> Any:
    value = E.const_value(e) if isinstance(e, E.Expr) else e
    if isinstance(value, int):
        return value
    if isinstance(e, E.Var) and e in env:
        return env[e]
    try:
        return evaluate(e, env)
    except (KeyError, ValueError) as exc:
        raise ArgumentError(
            f"cannot give output {name!r} a shape: {e} depends on a dim no input provides ({exc})"
        ) from None
