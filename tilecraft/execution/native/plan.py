"""A kernel's plan for the compiled launcher: its `LaunchPlan` (runtime/plan.py) written as the
extension's tables, with the execution backend's launch (`NativeLaunch`) bound in, so a call runs no
Python.

Per buffer: its dtype (torch dtype object; numpy element kind and size), each dim static or a symbolic
dim (bound by the first buffer that has it, within the plan's range for it, equal in the others),
whether the kernel writes it (numpy arrays must then be writable); contiguity, the device (torch
tensors) and the alignment for every buffer; per scalar its kind and range; per output the input it
is allocated like. The compiled launcher accepts a call that satisfies every rule and returns MISS
for any other, which then takes the Python path and gets its error message there. Only a plain plan
(`LaunchPlan.plain`) can be written so; nor can grids the bytecode cannot express or more parameters
than the launcher's limits: those kernels have no plan, and their calls take the Python path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tilecraft._modules import imported
from tilecraft.ir import dtype as dt
from tilecraft.runtime.launch import NativeLaunch
from tilecraft.runtime.plan import LaunchPlan, ParamPlan

P_BUFFER, P_INT, P_UINT, P_FLOAT, P_BOOL = range(5)
_ELEMENT_KINDS = {"int": 0, "uint": 1, "float": 2, "bool": 3}
_NO_NUMPY_KIND = 99  # bfloat16, float8: no buffer-protocol format; numpy arrays of them take the Python path
_INT64_MAX = 2**63 - 1


class _NoPlan(Exception):
    """This kernel's calls cannot be described by the launcher's rules."""


def build_plan(plan: LaunchPlan, launch: NativeLaunch, miss: Any) -> Any | None:
    """The compiled launcher's Plan for `plan` (a call it does not accept returns `miss`), or None when
    its calls take the Python path."""
    from tilecraft.execution.native import launcher_module

    module = launcher_module()
    if module is None or not plan.plain():
        return None
    limits = module.LIMITS
    if len(plan.params) > limits["params"] or len(plan.dims) > limits["vars"]:
        return None
    if any(len(p.shape) > limits["dims"] for p in plan.params):
        return None
    torch = imported("torch")
    try:
        spec = _launch_spec(launch, limits)
        rules = tuple(_rule(p, torch) for p in plan.params)
    except _NoPlan:
        return None
    outputs = tuple((i, rules[i][1], dt.numpy_dtype(plan.params[i].dtype), twin)
                    for i, twin in zip(plan.outputs, plan.twins))  # fmt: skip
    alloc = (torch.empty, torch.empty_like, np.empty) if torch is not None else (None, None, np.empty)
    return module.Plan(
        miss, torch.Tensor if torch is not None else None, np.ndarray if launch.host_arrays else None,
        launch.device, launch.alignment, rules, plan.inputs, outputs, plan.dim_limits, alloc, spec,
        launch.keep_alive,
    )  # fmt: skip


def _rule(p: ParamPlan, torch: Any) -> tuple:
    if not p.is_buffer:
        return _scalar_rule(p)
    dims = tuple(r.static if r.static is not None else -(r.slot + 1) for r in p.shape)
    if any(r.static is not None and r.static < 0 for r in p.shape):
        raise _NoPlan  # the launcher's tables write a symbolic dim as a negative number
    torch_dtype = getattr(torch, p.dtype.name, None) if torch is not None else None
    kind = _ELEMENT_KINDS.get(p.dtype.kind, _NO_NUMPY_KIND)
    return (P_BUFFER, torch_dtype, kind, max(1, p.dtype.bits // 8), dims, int(p.written))


def _scalar_rule(p: ParamPlan) -> tuple:
    if p.dtype.is_bool:
        return (P_BOOL,)
    limits = p.scalar_range()
    if limits is not None:
        low, high = limits
        return (P_UINT, high) if high > _INT64_MAX else (P_INT, low, high)
    return (P_FLOAT, int(p.dtype.bits <= 32))


def _launch_spec(launch: NativeLaunch, limits: dict) -> tuple:
    if launch.kind == "packed-call":
        return ("packed-call", launch.address, None, launch.failed, launch.slots)
    kernels = tuple((k.function, k.grid, k.block, k.dynamic_smem, k.slots) for k in launch.kernels)
    if len(kernels) > limits["kernels"]:
        raise _NoPlan
    return ("kernel-params", launch.address, launch.stream, launch.failed, kernels)
