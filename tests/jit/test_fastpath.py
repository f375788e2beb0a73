"""The generated fast path checks what the full validation checks, against a stand-in torch module."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import pytest

import tilecraft.language as T
from tilecraft.backend.target import Target
from tilecraft.jit.fastpath import MISS, build_fast_path
from tilecraft.runtime.artifact import ArtifactError, CompiledArtifact, ParamInfo
from tilecraft.runtime.plan import LaunchPlan


class FakeTensor:
    def __init__(self, shape, dtype, device=0, contiguous=True, ptr=1024):
        self.shape, self.dtype, self._device, self._contiguous, self._ptr = (
            tuple(shape),
            dtype,
            device,
            contiguous,
            ptr,
        )
        self.device = ("dev", device)

    def get_device(self):
        return self._device

    def is_contiguous(self):
        return self._contiguous

    def data_ptr(self):
        return self._ptr


@pytest.fixture
def fake_torch(monkeypatch):
    torch = types.ModuleType("torch")
    torch.Tensor = FakeTensor
    torch.float32, torch.float16 = object(), object()

    def empty(*size, dtype, device):  # torch.empty takes the dims as ints, or one tuple of them
        shape = size[0] if len(size) == 1 and isinstance(size[0], tuple) else size
        return FakeTensor(shape, dtype, device[1], ptr=2048)

    torch.empty = empty
    torch.empty_like = lambda t: FakeTensor(t.shape, t.dtype, t.get_device(), ptr=4096)
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch


@dataclass
class FakeFast:
    device: int = 0
    alignment: int = 1

    def __post_init__(self):
        self.calls = []
        self.launch = lambda values, dims, stream: self.calls.append((values, dims, stream))
        self.stream = lambda device: 77


def artifact(buffer_alignment=16):
    n = T.dynamic("n")

    @T.prim_func
    def scale(X: T.Tensor((n, 4), "float32"), alpha: T.float32, Y: T.Tensor((n, 4), "float32")):
        with T.Kernel(n, threads=32) as bx:
            for j in T.Parallel(4):
                Y[bx, j] = X[bx, j] * alpha

    params = tuple(ParamInfo.from_param(p) for p in scale.params)
    return CompiledArtifact(
        "scale", Target("c", ()), params, scale.symbolic_dims, (), buffer_alignment=buffer_alignment
    )


def test_fast_path_launches_with_bound_dims_and_allocates_outputs(fake_torch):
    fast = FakeFast()
    fn = build_fast_path(LaunchPlan.build(artifact(), (2,)), fast)
    out = fn(FakeTensor((5, 4), fake_torch.float32), 2.0)
    assert out.shape == (5, 4) and out.dtype is fake_torch.float32
    assert fast.calls == [((1024, 2.0, 4096), (5,), 77)]  # allocated like X: same shape and dtype
    assert "_empty_like(a0)" in fn.__source__


@pytest.mark.parametrize("alignment, hits", [(16, [1024, 1040]), (64, [1024]), (1, [1024, 1040, 1028])])
def test_the_alignment_a_buffer_needs_is_the_artifacts(fake_torch, alignment, hits):
    """Addresses that break the alignment codegen assumed miss (the full path reports them); 1 checks none."""
    fast = FakeFast()
    fn = build_fast_path(LaunchPlan.build(artifact(alignment), (2,)), fast)
    for ptr in (1024, 1040, 1028):
        fn(FakeTensor((5, 4), fake_torch.float32, ptr=ptr), 2.0)
    assert [values[0] for values, _, _ in fast.calls] == hits
    assert ("& " in fn.__source__) == (alignment > 1)


@pytest.mark.parametrize("alignment", [0, 24, True])
def test_an_alignment_that_is_not_a_power_of_two_is_refused(alignment):
    with pytest.raises(ArtifactError, match="power of two"):
        artifact(alignment)


def row_sum_artifact():
    n = T.dynamic("n")

    @T.prim_func
    def row_sum(X: T.Tensor((n, 4), "float32"), Y: T.Tensor((n,), "float16")):
        with T.Kernel(n, threads=32) as bx:
            Y[bx] = X[bx, 0]

    params = tuple(ParamInfo.from_param(p) for p in row_sum.params)
    return CompiledArtifact("row_sum", Target("c", ()), params, row_sum.symbolic_dims, ())


def test_an_output_unlike_every_input_is_allocated_from_its_dims(fake_torch):
    fast = FakeFast()
    fn = build_fast_path(LaunchPlan.build(row_sum_artifact(), (1,)), fast)
    out = fn(FakeTensor((6, 4), fake_torch.float32))
    assert out.shape == (6,) and out.dtype is fake_torch.float16 and out.get_device() == 0
    assert fast.calls == [((1024, 2048), (6,), 77)]
    assert "_empty(v0, dtype=_dt1" in fn.__source__


@pytest.mark.parametrize(
    "args",
    [
        (FakeTensor((5, 4), "wrong-dtype"), 2.0),
        (FakeTensor((5, 3), None), 2.0),
        (FakeTensor((5, 4, 1), None), 2.0),
        (FakeTensor((5, 4), None, device=1), 2.0),
        (FakeTensor((5, 4), None, contiguous=False), 2.0),
        (FakeTensor((5, 4), None), "2.0"),
        (object(), 2.0),
        (FakeTensor((5, 4), None),),
    ],
)
def test_anything_unusual_misses(fake_torch, args):
    args = tuple(FakeTensor(a.shape, fake_torch.float32 if a.dtype is None else a.dtype, a._device, a._contiguous)
                 if isinstance(a, FakeTensor) else a for a in args)  # fmt: skip
    fast = FakeFast()
    fn = build_fast_path(LaunchPlan.build(artifact(), (2,)), fast)
    assert fn(*args) is MISS
    assert fast.calls == []


def test_a_0_d_output_is_allocated_with_an_empty_shape(fake_torch):
    @T.prim_func
    def total(X: T.Tensor((8,), "float32"), Y: T.Tensor((), "float16")):
        with T.Kernel(1, threads=32) as _:
            Y[()] = X[0]

    params = tuple(ParamInfo.from_param(p) for p in total.params)
    art = CompiledArtifact("total", Target("c", ()), params, (), ())
    fast = FakeFast()
    fn = build_fast_path(LaunchPlan.build(art, (1,)), fast)
    assert "_empty((), dtype=_dt1" in fn.__source__
    out = fn(FakeTensor((8,), fake_torch.float32))
    assert out.shape == () and out.dtype is fake_torch.float16


def ranged_artifact(dim_dtype="int32"):
    n = T.dynamic("n", dim_dtype)

    @T.prim_func
    def ranged(X: T.Tensor((n,), "float32"), k: T.int32, u: T.uint8, Y: T.Tensor((n,), "float32")):
        with T.Kernel(n, threads=32) as bx:
            Y[bx] = X[bx] + k + u

    params = tuple(ParamInfo.from_param(p) for p in ranged.params)
    return CompiledArtifact("ranged", Target("c", ()), params, ranged.symbolic_dims, ())


@pytest.mark.parametrize("k, u", [(2**31, 0), (-(2**31) - 1, 0), (2**32 + 5, 0), (0, 256), (0, -1)])
def test_an_integer_scalar_out_of_range_misses(fake_torch, k, u):
    """The full path names the parameter and its range; the fast path must not pack a wrapped value."""
    fast = FakeFast()
    fn = build_fast_path(LaunchPlan.build(ranged_artifact(), (3,)), fast)
    assert fn(FakeTensor((5,), fake_torch.float32), k, u) is MISS
    assert fast.calls == []


def test_integer_scalars_at_their_limits_launch(fake_torch):
    fast = FakeFast()
    fn = build_fast_path(LaunchPlan.build(ranged_artifact(), (3,)), fast)
    for k, u in [(2**31 - 1, 255), (-(2**31), 0)]:
        fn(FakeTensor((5,), fake_torch.float32), k, u)
    assert [call[0][1:3] for call in fast.calls] == [(2**31 - 1, 255), (-(2**31), 0)]


def test_a_dim_beyond_its_dtype_misses(fake_torch):
    fast = FakeFast()
    fn = build_fast_path(LaunchPlan.build(ranged_artifact(), (3,)), fast)
    assert fn(FakeTensor((2**31 + 8,), fake_torch.float32), 1, 1) is MISS
    fn(FakeTensor((2**31 - 1,), fake_torch.float32), 1, 1)
    assert fast.calls[0][1] == (2**31 - 1,)


def test_an_int64_dim_needs_no_range_check(fake_torch):
    fast = FakeFast()
    fn = build_fast_path(LaunchPlan.build(ranged_artifact("int64"), (3,)), fast)
    fn(FakeTensor((2**31 + 8,), fake_torch.float32), 1, 1)
    assert fast.calls[0][1] == (2**31 + 8,)
    assert "> 9223372036854775807" not in fn.__source__
