"""A generated fast path for calls whose arrays are torch tensors.

The execution backend's fast-path support fixes the device; the artifact fixes the alignment every
buffer's address needs (`artifact.buffer_alignment` bytes: what the generated code assumes, and what
the full path checks). A call that breaks either takes the full path and its error.

For the common case (torch tensors of the right dtype, rank, contiguity and device; Python scalars
within their dtype's range), a function generated for one kernel checks exactly what the full
validation checks, binds the symbolic dims from the shapes (each within its dtype's range), allocates
outputs with torch.empty and launches through the execution backend's raw launcher: no per-call
objects beyond the outputs. Anything unusual returns MISS and the call takes the full path, which also
writes the error messages. (Torch tensors are writable and in native byte order, so those checks of the
full path cannot fail here.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilecraft._modules import imported
from tilecraft.ir import expr as E
from tilecraft.jit.scalars import integer_range
from tilecraft.runtime.artifact import CompiledArtifact
from tilecraft.runtime.launch import FastPath

MISS = object()
_TORCH_MAX_SIZE = 2**63 - 1  # torch sizes are int64: an int64 dim needs no range check


def _dim_source(e: Any, names: dict[int, str]) -> str | None:
    value = E.const_value(e) if isinstance(e, E.Expr) else e
    if isinstance(value, int):
        return str(value)
    if isinstance(e, E.Var) and id(e) in names:
        return names[id(e)]
    return None


class _Writer:
    def __init__(self, artifact: CompiledArtifact, out_idx: tuple[int, ...], fast: Any, torch: Any) -> None:
        self.art = artifact
        self.out_idx = out_idx
        self.device = fast.device
        self.alignment = artifact.buffer_alignment  # a power of two (the artifact checks it)
        self.torch = torch
        self.names = {id(v): f"v{j}" for j, v in enumerate(artifact.symbolic_dims)}
        self.limits = {f"v{j}": integer_range(v.dtype)[1] for j, v in enumerate(artifact.symbolic_dims)}
        self.bound: set[str] = set()
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {
            "_MISS": MISS, "_Tensor": torch.Tensor, "_empty": torch.empty, "_empty_like": torch.empty_like,
        }  # fmt: skip
        self.shapes: dict[int, tuple[str, ...]] = {}  # checked inputs: their dims, as sources

    def line(self, text: str) -> None:
        self.lines.append("    " + text)

    def tensor(self, i: int) -> bool:
        p = self.art.params[i]
        # packed 4-bit data (the full path reads its bytes' shape) and dtypes torch lacks (float6, given
        # as uint8 bytes) take the full path
        torch_dtype = getattr(self.torch, p.dtype.name, None)
        if p.strides or p.dtype.is_packed or torch_dtype is None:
            return False
        self.namespace[f"_dt{i}"] = torch_dtype
        self.line(f"if a{i}.__class__ is not _Tensor or a{i}.dtype is not _dt{i}: return _MISS")
        self.line(f"if a{i}.get_device() != {self.device} or not a{i}.is_contiguous(): return _MISS")
        self.line(f"p{i} = a{i}.data_ptr()")
        if self.alignment > 1:
            self.line(f"if p{i} & {self.alignment - 1}: return _MISS")
        self.line(f"s{i} = a{i}.shape")
        self.line(f"if len(s{i}) != {len(p.shape)}: return _MISS")
        dims = []
        for axis, dim in enumerate(p.shape):
            source = _dim_source(dim, self.names)
            if source is None:
                return False
            if source in self.bound or source.isdigit():
                self.line(f"if s{i}[{axis}] != {source}: return _MISS")
            else:
                self.line(f"{source} = s{i}[{axis}]")
                # A size beyond the dim's dtype would wrap in the kernel: the full path says so.
                if self.limits[source] < _TORCH_MAX_SIZE:
                    self.line(f"if {source} > {self.limits[source]}: return _MISS")
                self.bound.add(source)
            dims.append(source)
        self.shapes[i] = tuple(dims)
        return True

    def scalar(self, i: int) -> None:
        p = self.art.params[i]
        if p.dtype.is_integer:
            low, high = integer_range(p.dtype)
            # Out of range would wrap when packed: the full path names the parameter and its range.
            self.line(f"if a{i}.__class__ is not int or not {low} <= a{i} <= {high}: return _MISS")
        elif p.dtype.is_bool:
            self.line(f"if a{i}.__class__ is not bool: return _MISS")
        else:
            self.line(f"if a{i}.__class__ not in (int, float): return _MISS")

    def output(self, i: int, reference: int) -> bool:
        p = self.art.params[i]
        if p.dtype.is_packed or getattr(self.torch, p.dtype.name, None) is None:
            return False
        dims = [_dim_source(d, self.names) for d in p.shape]
        if any(d is None or (not d.isdigit() and d not in self.bound) for d in dims):
            return False
        # empty_like of a checked (contiguous) input of the same shape and dtype, else empty with the
        # dims as separate ints: both allocate faster than empty with a shape tuple (~1.7 and ~2.1 us
        # against ~3 us per call on an H200 host).
        twin = next((j for j, d in self.shapes.items() if d == tuple(dims)
                     and self.art.params[j].dtype == p.dtype), None)  # fmt: skip
        if twin is not None:
            self.line(f"a{i} = _empty_like(a{twin})")
            return True
        self.namespace[f"_dt{i}"] = getattr(self.torch, p.dtype.name)
        size = "".join(f"{d}, " for d in dims) or "(), "  # a 0-d output needs the empty tuple
        self.line(f"a{i} = _empty({size}dtype=_dt{i}, device=a{reference}.device)")
        return True


def build_fast_path(artifact: CompiledArtifact, out_idx: tuple[int, ...], fast: FastPath) -> Callable | None:
    """`fast(*args)` returning the outputs (or None), or MISS; None when this kernel has no fast path.

    `fast` is the execution backend's `fast_path(loaded)`: the raw launcher, device and stream getter."""
    torch = imported("torch")
    if torch is None:
        return None
    n = len(artifact.params)
    inputs = [i for i in range(n) if i not in out_idx]
    buffers = [i for i in inputs if artifact.params[i].kind == "buffer"]
    if not buffers:
        return None
    w = _Writer(artifact, out_idx, fast, torch)
    w.lines.append("def fast(*args):")
    w.line(f"if len(args) != {len(inputs)}: return _MISS")
    w.line("".join(f"a{i}, " for i in inputs) + "= args")
    for i in inputs:
        ok = w.tensor(i) if artifact.params[i].kind == "buffer" else (w.scalar(i) or True)
        if not ok:
            return None
    if any(w.names[id(v)] not in w.bound for v in artifact.symbolic_dims):
        return None
    for i in out_idx:
        if not w.output(i, buffers[0]):
            return None
    values = ", ".join(
        f"p{i}" if i in w.shapes else f"a{i}.data_ptr()" if p.kind == "buffer" else f"a{i}"
        for i, p in enumerate(artifact.params)
    )
    dims = "".join(f"{w.names[id(v)]}, " for v in artifact.symbolic_dims)
    w.namespace.update({"_launch": fast.launch, "_stream": fast.stream})
    w.line(f"_launch(({values},), ({dims}), _stream({fast.device}))")
    outs = [f"a{i}" for i in out_idx]
    w.line(f"return {outs[0] if len(outs) == 1 else '[' + ', '.join(outs) + ']'}" if outs else "return None")
    source = "\n".join(w.lines) + "\n"
    exec(compile(source, f"<tilecraft fast path {artifact.function_name}>", "exec"), w.namespace)  # noqa: S102
    function = w.namespace["fast"]
    function.__source__ = source
    return function
