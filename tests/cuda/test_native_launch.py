"""The compiled launcher's CUDA launch, without a GPU: it calls the `cuLaunchKernel` of the driver
library the Python path loaded (the fake one here), with the grid its bytecode computes, torch's
current stream and the parameter bytes the Python launcher would pack; anything it does not accept
takes the Python path, which raises its usual errors."""

from __future__ import annotations

import struct
import sys
import types

import pytest

from tests.cuda.helpers import FakeContext, add_artifact
from tilecraft import settings
from tilecraft.errors import ArgumentError
from tilecraft.execution import native
from tilecraft.execution.cuda_driver import launch as launch_module
from tilecraft.execution.nvcc.backend import NvccExecutionBackend
from tilecraft.execution.nvcc.spec import NVCC
from tilecraft.jit.kernel import Kernel


@pytest.fixture
def torch(monkeypatch):
    """A stand-in torch: tensors of a class in a `torch` module, with what the launchers read."""
    torch = types.ModuleType("torch")

    class Tensor:
        def __init__(self, ptr, shape, dtype=None, device=0, contiguous=True):
            self.ptr, self.shape, self._device, self._contiguous = ptr, tuple(shape), device, contiguous
            self.dtype = torch.float32 if dtype is None else dtype
            self.device = f"cuda:{device}"

        def get_device(self):
            return self._device

        def is_contiguous(self):
            return self._contiguous

        def data_ptr(self):
            return self.ptr

        def stride(self):
            step = 1 if self._contiguous else 2
            strides, size = [], step
            for extent in reversed(self.shape):
                strides.insert(0, size)
                size *= extent
            return tuple(strides)

        def __dlpack_device__(self):
            return (2, self._device)

    Tensor.__module__ = "torch"
    torch.Tensor, torch.float32, torch.float64 = Tensor, "float32", "float64"  # as_dtype reads the names
    torch.allocated = []

    def empty(*shape, dtype, device):
        if len(shape) == 1 and isinstance(shape[0], tuple):  # torch.empty((n,)) and torch.empty(n) alike
            shape = shape[0]
        torch.allocated.append(("empty", shape, device))
        return Tensor(0xC000, shape, dtype)

    def empty_like(like):
        torch.allocated.append(("empty_like", like.shape))
        return Tensor(0xC000, like.shape, like.dtype)

    torch.empty, torch.empty_like = empty, empty_like
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0x77 + device)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(launch_module, "_torch_stream", [])
    return torch


def _kernel(cache, out_idx=(2,), widened_grid=False):
    backend = NvccExecutionBackend(NVCC, cache)
    artifact = add_artifact(binaries={"cubin": b"\x7fELF fake cubin"}, widened_grid=widened_grid)
    built = backend.build(artifact, FakeContext())
    return Kernel(backend.load(built), FakeContext(backend), out_idx)


@pytest.fixture
def compiled():
    with settings.override(TILECRAFT_LAUNCHER="compiled"):
        yield


def _python_launcher_refused(kernel):
    def refuse(*args, **kwargs):
        raise AssertionError("the Python launcher ran a call the compiled one accepts")

    kernel._launch = refuse


def test_the_compiled_launcher_calls_the_drivers_launch(cache, fake_driver, torch, compiled):
    kernel = _kernel(cache)
    fake_driver.set("fake_param_count", 5)
    a, b = torch.Tensor(0xA000, (1000,)), torch.Tensor(0xB000, (1000,))
    kernel(a, b, 1.5)  # the first call builds the plan
    assert type(kernel._plan).__name__ == "Plan"
    _python_launcher_refused(kernel)
    kernel._fast = False
    out = kernel(a, b, 2.5)
    assert out.shape == (1000,) and torch.allocated[-1] == ("empty_like", (1000,))
    assert fake_driver.dims() == (8, 1, 1, 128, 1, 1, 0) and fake_driver.stream() == 0x77
    slots = fake_driver.params(5)
    assert [struct.unpack("<Q", s)[0] for s in slots[:3]] == [0xA000, 0xB000, 0xC000]
    assert struct.unpack("<f", slots[3][:4])[0] == 2.5 and struct.unpack("<i", slots[4][:4])[0] == 1000
    assert slots[3][4:] == slots[4][4:] == b"\0" * 4


@pytest.mark.parametrize("widened", [False, True], ids=["int32", "int64-cast-back"])
@pytest.mark.parametrize("n, grid", [(1, 1), (128, 1), (129, 2), (2**31 - 1, 16777216)])
def test_the_grid_bytecode_matches_the_ir(cache, fake_driver, torch, compiled, n, grid, widened):
    """Also with the grid as real CUDA kernels have it after widen-index-arithmetic (int64, cast back to
    int32): on an H200 the compiled launcher declined every such kernel before narrowing casts compiled."""
    kernel = _kernel(cache, out_idx=(), widened_grid=widened)
    fake_driver.set("fake_param_count", 5)
    args = [torch.Tensor(0xA000 + 0x1000 * i, (n,)) for i in range(3)]
    _python_launcher_refused(kernel)
    kernel._fast = False
    kernel._plan = None
    kernel(*args, -1.0)
    assert fake_driver.dims()[0] == grid and struct.unpack("<i", fake_driver.params(5)[4][:4])[0] == n


def test_a_zero_grid_launches_nothing(cache, fake_driver, torch, compiled):
    kernel = _kernel(cache, out_idx=())
    before = fake_driver.get("fake_launch_count")
    assert kernel(*[torch.Tensor(0xA000, (0,)) for _ in range(3)], 1.0) is None
    assert fake_driver.get("fake_launch_count") == before


@pytest.mark.parametrize("case, message", [
    ("dtype", "expected dtype float32"), ("device", "built for CUDA device 0"),
    ("contiguous", "must be contiguous"), ("rank", "expected 1 dims"), ("dims", "but n = 1000"),
    ("aligned", "not 16-byte aligned"), ("scalar", "takes an int or a float"),
])  # fmt: skip
def test_what_it_does_not_accept_gets_the_python_paths_error(cache, fake_driver, torch, compiled, case, message):
    kernel = _kernel(cache)
    a, b = torch.Tensor(0xA000, (1000,)), torch.Tensor(0xB000, (1000,))
    kernel(a, b, 1.0)
    bad = {
        "dtype": (torch.Tensor(0xB000, (1000,), torch.float64), 1.0),
        "device": (torch.Tensor(0xB000, (1000,), device=1), 1.0),
        "contiguous": (torch.Tensor(0xB000, (1000,), contiguous=False), 1.0),
        "rank": (torch.Tensor(0xB000, (1000, 1)), 1.0),
        "dims": (torch.Tensor(0xB000, (999,)), 1.0),
        "aligned": (torch.Tensor(0xB004, (1000,)), 1.0),
        "scalar": (b, "1.0"),
    }[case]
    with pytest.raises(ArgumentError, match=message):
        kernel(a, *bad)


def test_a_failed_launch_is_reported_by_the_python_handler(cache, fake_driver, torch, compiled):
    kernel = _kernel(cache)
    a, b = torch.Tensor(0xA000, (300,)), torch.Tensor(0xB000, (300,))
    kernel(a, b, 1.0)
    fake_driver.fail_next_launches(1)
    with pytest.raises(Exception, match=r"cuLaunchKernel failed.*kernel add_kernel, grid \(3, 1, 1\), block "
                                         r"\(128, 1, 1\).*stream 0x77"):  # fmt: skip
        kernel(a, b, 1.0)


def test_grid_programs_follow_c_and_floor_semantics():
    from tilecraft.ir import dtype as dt
    from tilecraft.ir import expr as E
    from tilecraft.ir.eval import evaluate

    n, m = E.Var(dt.int32, "n"), E.Var(dt.int32, "m")
    exprs = [E.floordiv(n + 127, 128), E.floormod(n - 300, 7), E.truncdiv(n - 300, m), E.truncmod(n - 300, m),
             E.max_(n, m) * 2 - E.min_(n, m), E.select(n < m, n, m)]  # fmt: skip
    assert all(native.program(e, {"n": 0, "m": 1}) for e in exprs)
    exprs.append(E.Cast(dt.int32, E.floordiv(E.Cast(dt.int64, n) + 127, 128)))  # widened, cast back
    with pytest.raises(native.NotCompilable):
        native.program(E.Var(dt.float32, "x") + 1.0, {"x": 0})
    for e in exprs:
        for values in ((5, 3), (1000, 7), (-4, 9)):
            assert int(evaluate(e, {n: values[0], m: values[1]})) == _run(native.program(e, {"n": 0, "m": 1}), values)


def _run(code, values):
    """The bytecode's meaning, spelled out (the C interpreter is checked against the IR above through
    launches; this pins the encoding)."""
    stack, pc, ops = [], 0, {v: k for k, v in native.OPS.items()}
    trunc = lambda a, b: abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # noqa: E731
    while pc < len(code):
        op = ops[code[pc]]
        if op in ("const", "load"):
            stack.append(code[pc + 1] if op == "const" else values[code[pc + 1]])
            pc += 2
            continue
        pc += 1
        if op == "select":
            no, yes, cond = stack.pop(), stack.pop(), stack.pop()
            stack.append(yes if cond else no)
            continue
        if op == "inrange":
            hi, lo = stack.pop(), stack.pop()
            assert lo <= stack[-1] <= hi
            continue
        b, a = stack.pop(), stack.pop()
        stack.append({"add": a + b, "sub": a - b, "mul": a * b, "floordiv": a // b if b else None,
                      "floormod": a % b if b else None, "tdiv": trunc(a, b), "tmod": a - b * trunc(a, b),
                      "min": min(a, b), "max": max(a, b), "lt": int(a < b)}[op])  # fmt: skip
    return stack[0]
