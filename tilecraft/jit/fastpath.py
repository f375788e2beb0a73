"""A generated fast path for calls whose arrays are torch tensors.

The execution backend's fast-path support fixes the device; the kernel's `LaunchPlan` (runtime/plan.py)
every other rule: dtypes, dims, the symbolic dims' ranges, scalar kinds and ranges, the alignment every
buffer's address needs, and which input an output can be allocated like. A call that breaks any takes
the full path, which checks the same plan and raises its error.

For a plain plan (`LaunchPlan.plain`: no strides, packed data, derived dims or workspaces) and the
common call (torch tensors of the right dtype, rank, contiguity and device; Python scalars within their
dtype's range), a function generated for one kernel checks exactly what the full validation checks, binds the symbolic dims from the shapes (each within its dtype's range), allocates
outputs with torch.empty and launches through the execution backend's raw launcher: no per-call
objects beyond the outputs. Anything unusual returns MISS and the call takes the full path, which also
writes the error messages. (Torch tensors are writable and in native byte order, so those checks of the
full path cannot fail here.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilecraft._modules import imported
from tilecraft.runtime.launch import FastPath
from tilecraft.runtime.plan import LaunchPlan, ParamPlan

MISS = object()
_TORCH_MAX_SIZE = 2**63 - 1  # torch sizes are int64: an int64 dim needs no range check


class _Writer:
    def __init__(self, plan: LaunchPlan, fast: FastPath, torch: Any) -> None:
        self.plan = plan
        self.device = fast.device
        self.alignment = max(plan.alignment, fast.alignment)  # powers of two
        self.lines: list[str] = []
        self.bound: set[int] = set()
        self.namespace: dict[str, Any] = {
            "_MISS": MISS, "_Tensor": torch.Tensor, "_empty": torch.empty, "_empty_like": torch.empty_like,
        }  # fmt: skip
        self.torch = torch

    def line(self, text: str) -> None:
        self.lines.append("    " + text)

    def torch_dtype(self, p: ParamPlan) -> Any:
        # dtypes torch lacks (float6, given as uint8 bytes) take the full path
        return getattr(self.torch, p.dtype.name, None)

    def tensor(self, p: ParamPlan) -> bool:
        i = p.index
        torch_dtype = self.torch_dtype(p)
        if torch_dtype is None:
            return False
        self.namespace[f"_dt{i}"] = torch_dtype
        self.line(f"if a{i}.__class__ is not _Tensor or a{i}.dtype is not _dt{i}: return _MISS")
        self.line(f"if a{i}.get_device() != {self.device} or not a{i}.is_contiguous(): return _MISS")
        self.line(f"p{i} = a{i}.data_ptr()")
        if self.alignment > 1:
            self.line(f"if p{i} & {self.alignment - 1}: return _MISS")
        self.line(f"s{i} = a{i}.shape")
        self.line(f"if len(s{i}) != {len(p.shape)}: return _MISS")
        for rule in p.shape:
            if rule.static is not None:
                self.line(f"if s{i}[{rule.axis}] != {rule.static}: return _MISS")
            elif rule.slot in self.bound:
                self.line(f"if s{i}[{rule.axis}] != v{rule.slot}: return _MISS")
            else:
                self.line(f"v{rule.slot} = s{i}[{rule.axis}]")
                # A size beyond the dim's dtype would wrap in the kernel: the full path says so.
                limit = self.plan.dim_limits[rule.slot]
                if limit < _TORCH_MAX_SIZE:
                    self.line(f"if v{rule.slot} > {limit}: return _MISS")
                self.bound.add(rule.slot)
        return True

    def scalar(self, p: ParamPlan) -> None:
        i = p.index
        limits = p.scalar_range()
        if limits is not None:
            # Out of range would wrap when packed: the full path names the parameter and its range.
            self.line(f"if a{i}.__class__ is not int or not {limits[0]} <= a{i} <= {limits[1]}: return _MISS")
        elif p.dtype.is_bool:
            self.line(f"if a{i}.__class__ is not bool: return _MISS")
        else:
            self.line(f"if a{i}.__class__ not in (int, float): return _MISS")

    def output(self, p: ParamPlan, twin: int, reference: int) -> bool:
        i = p.index
        torch_dtype = self.torch_dtype(p)
        if torch_dtype is None:
            return False
        # empty_like of a checked (contiguous) input of the same shape and dtype, else empty with the
        # dims as separate ints: both allocate faster than empty with a shape tuple (~1.7 and ~2.1 us
        # against ~3 us per call on an H200 host).
        if twin >= 0:
            self.line(f"a{i} = _empty_like(a{twin})")
            return True
        self.namespace[f"_dt{i}"] = torch_dtype
        dims = [str(r.static) if r.static is not None else f"v{r.slot}" for r in p.shape]
        size = "".join(f"{d}, " for d in dims) or "(), "  # a 0-d output needs the empty tuple
        self.line(f"a{i} = _empty({size}dtype=_dt{i}, device=a{reference}.device)")
        return True


def build_fast_path(plan: LaunchPlan, fast: FastPath) -> Callable | None:
    """`fast(*args)` returning the outputs (or None), or MISS; None when this kernel has no fast path.

    `plan` is the kernel's launch plan, `fast` the execution backend's `fast_path(loaded)`: the raw
    launcher, device and stream getter."""
    torch = imported("torch")
    buffers = plan.input_buffers()
    if torch is None or not buffers or not plan.plain():
        return None
    w = _Writer(plan, fast, torch)
    w.lines.append("def fast(*args):")
    w.line(f"if len(args) != {len(plan.inputs)}: return _MISS")
    w.line("".join(f"a{i}, " for i in plan.inputs) + "= args")
    for i in plan.inputs:
        p = plan.params[i]
        if p.is_buffer and not w.tensor(p):
            return None
        if not p.is_buffer:
            w.scalar(p)
    for i, twin in zip(plan.outputs, plan.twins):
        if not w.output(plan.params[i], twin, buffers[0]):
            return None
    values = ", ".join(
        f"p{p.index}" if p.role == "input" and p.is_buffer else f"a{p.index}.data_ptr()" if p.is_buffer
        else f"a{p.index}" for p in plan.params
    )  # fmt: skip
    dims = "".join(f"v{j}, " for j in range(len(plan.dims)))
    w.namespace.update({"_launch": fast.launch, "_stream": fast.stream})
    w.line(f"_launch(({values},), ({dims}), _stream({fast.device}))")
    outs = [f"a{i}" for i in plan.outputs]
    w.line(f"return {outs[0] if len(outs) == 1 else '[' + ', '.join(outs) + ']'}" if outs else "return None")
    source = "\n".join(w.lines) + "\n"
    exec(compile(source, f"<tilecraft fast path {plan.name}>", "exec"), w.namespace)  # noqa: S102
    function = w.namespace["fast"]
    function.__source__ = source
    return function
