"""A kernel's plan for the compiled launcher: its argument rules, output allocation and the execution
backend's launch (`NativeLaunch`), bound once, so a call runs no Python.

The rules are the Python path's checks written as data: per buffer its dtype (torch dtype object; numpy
element kind and size), rank, each dim static or a symbolic dim (bound by the first buffer that has
it, within its dtype's range, equal in the others), contiguity, the device (torch tensors) and the
alignment, writability (numpy) for the buffers the kernel writes; per scalar its kind and range. The
compiled launcher accepts a call that satisfies every rule and returns MISS for any other, which then
takes the Python path and gets its error message there. A kernel that the rules cannot describe
(strided or computed shapes, packed 4-bit parameters, workspaces, grids the bytecode cannot express,
more parameters than the launcher's limits) has no plan: its calls take the Python path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tilecraft._modules import imported
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.runtime.launch import NativeLaunch

P_BUFFER, P_INT, P_UINT, P_FLOAT, P_BOOL = range(5)
_ELEMENT_KINDS = {"int": 0, "uint": 1, "float": 2, "bool": 3}
_NO_NUMPY_KIND = 99  # bfloat16, float8: no buffer-protocol format; numpy arrays of them take the Python path
_INT64_MAX = 2**63 - 1


class _NoPlan(Exception):
    """This kernel's calls cannot be described by the launcher's rules."""


def integer_range(dtype: Any) -> tuple[int, int]:
    if dtype.is_uint:
        return 0, (1 << dtype.bits) - 1
    half = 1 << (dtype.bits - 1)
    return -half, half - 1


def build_plan(artifact: Any, out_idx: tuple[int, ...], launch: NativeLaunch, miss: Any) -> Any | None:
    """The compiled launcher's Plan for `artifact` called with `out_idx` allocated (a call it does not
    accept returns `miss`), or None when its calls take the Python path."""
    from tilecraft.execution.native import launcher_module

    module = launcher_module()
    if module is None or any(p.workspace for p in artifact.params):
        return None
    try:
        return _Builder(artifact, out_idx, launch, module, miss).plan()
    except _NoPlan:
        return None


class _Builder:
    def __init__(self, artifact: Any, out_idx: tuple[int, ...], launch: NativeLaunch, module: Any, miss: Any
                 ) -> None:  # fmt: skip
        self.art = artifact
        self.params = artifact.params
        self.out_idx = out_idx
        self.inputs = tuple(i for i in range(len(artifact.params)) if i not in out_idx)
        self.miss = miss
        self.launch = launch
        self.module = module
        self.torch = imported("torch")
        self.vars = {id(v): j for j, v in enumerate(self.art.symbolic_dims)}
        limits = module.LIMITS
        if len(self.params) > limits["params"] or len(self.vars) > limits["vars"]:
            raise _NoPlan

    def plan(self) -> Any:
        rules = tuple(self._rule(p) for p in self.params)
        bound = {d for i in self.inputs if rules[i][0] == P_BUFFER for d in rules[i][4] if d < 0}
        if len(bound) != len(self.vars):
            raise _NoPlan  # a symbolic dim no input's shape gives
        outputs = tuple(self._output(i, rules) for i in self.out_idx)
        torch = self.torch
        alloc = (torch.empty, torch.empty_like, np.empty) if torch is not None else (None, None, np.empty)
        var_high = tuple(min(integer_range(v.dtype)[1], _INT64_MAX) for v in self.art.symbolic_dims)
        launch = self.launch
        return self.module.Plan(
            self.miss, torch.Tensor if torch is not None else None, np.ndarray if launch.host_arrays else None,
            launch.device, launch.alignment, rules, self.inputs, outputs, var_high, alloc, self._launch_spec(),
            launch.keep_alive,
        )  # fmt: skip

    def _rule(self, p: Any) -> tuple:
        if p.kind == "scalar":
            return _scalar_rule(p.dtype)
        if p.strides or len(p.shape) > self.module.LIMITS["dims"] or p.dtype.is_packed:
            raise _NoPlan  # packed 4-bit data: the Python path reads its bytes' shape
        dims = tuple(self._dim(e) for e in p.shape)
        torch_dtype = getattr(self.torch, p.dtype.name, None) if self.torch is not None else None
        kind = _ELEMENT_KINDS.get(p.dtype.kind, _NO_NUMPY_KIND)
        return (P_BUFFER, torch_dtype, kind, max(1, p.dtype.bits // 8), dims, int(p.written))

    def _dim(self, e: Any) -> int:
        value = E.const_value(e) if isinstance(e, E.Expr) else e
        if isinstance(value, int) and value >= 0:
            return value
        if isinstance(e, E.Var) and id(e) in self.vars:
            return -(self.vars[id(e)] + 1)
        raise _NoPlan  # a computed dim: the Python path evaluates and checks it

    def _output(self, i: int, rules: tuple) -> tuple:
        p = self.params[i]
        dims = rules[i][4]
        twin = next((j for j in self.inputs if rules[j][0] == P_BUFFER and rules[j][4] == dims
                     and self.params[j].dtype == p.dtype), -1)  # fmt: skip
        torch_dtype = rules[i][1]
        return (i, torch_dtype, dt.numpy_dtype(p.dtype), twin)

    def _launch_spec(self) -> tuple:
        launch = self.launch
        if launch.kind == "packed-call":
            return ("packed-call", launch.address, None, launch.failed, launch.slots)
        kernels = tuple((k.function, k.grid, k.block, k.dynamic_smem, k.slots) for k in launch.kernels)
        if len(kernels) > self.module.LIMITS["kernels"]:
            raise _NoPlan
        return ("kernel-params", launch.address, launch.stream, launch.failed, kernels)


def _scalar_rule(dtype: Any) -> tuple:
    if dtype.is_bool:
        return (P_BOOL,)
    if dtype.is_integer:
        low, high = integer_range(dtype)
        return (P_UINT, high) if high > _INT64_MAX else (P_INT, low, high)
    return (P_FLOAT, int(dtype.bits <= 32))
