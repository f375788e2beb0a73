"""tilecraft.torch.custom_op on the CPU target: the op runs the kernel, its fake implementation gives
torch.compile the outputs' shapes and dtypes, and a model calling it compiles with fullgraph=True."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ArgumentError

torch = pytest.importorskip("torch", reason="tilecraft.torch needs PyTorch")
import tilecraft.torch as tctorch  # noqa: E402

BLOCK = 64


def _scale_add():
    n = T.dynamic("n")

    @T.prim_func
    def scale_add(X: T.Tensor((n, 3), "float32"), B: T.Tensor((3,), "float32"), alpha: T.float32,
                  Y: T.Tensor((n, 3), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(n, BLOCK), threads=1) as bx:
            for i, j in T.Parallel(BLOCK, 3):
                if bx * BLOCK + i < n:
                    Y[bx * BLOCK + i, j] = X[bx * BLOCK + i, j] * alpha + B[j]

    return scale_add


def _split():
    n = T.dynamic("n")

    @T.prim_func
    def split(X: T.Tensor((n,), "float32"), Lo: T.Tensor((n,), "float32"), Hi: T.Tensor((n,), "int32")):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=1) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    Lo[bx * BLOCK + i] = X[bx * BLOCK + i] - 1.0
                    Hi[bx * BLOCK + i] = T.cast(X[bx * BLOCK + i] * 10.0, "int32")

    return split


def _accumulate():
    n = T.dynamic("n")

    @T.prim_func
    def accumulate(Acc: T.Tensor((n,), "float32"), X: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=1) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    Acc[bx * BLOCK + i] = Acc[bx * BLOCK + i] + X[bx * BLOCK + i]

    return accumulate


@pytest.fixture(scope="module")
def scale_add_op():
    kernel = tilecraft.compile(_scale_add(), out_idx=[-1], target="c")
    return tctorch.custom_op(kernel, name="tilecraft_test::scale_add")


def reference(x, b, alpha):
    return x.double().numpy() * alpha + b.double().numpy()


def test_the_op_runs_the_kernel(scale_add_op):
    x, b = torch.randn(203, 3), torch.randn(3)
    y = scale_add_op(x, b, 1.5)
    assert y.shape == (203, 3) and y.dtype == torch.float32
    np.testing.assert_allclose(y.numpy(), reference(x, b, 1.5), rtol=1e-6, atol=1e-6)


def test_the_schema_comes_from_the_kernel(scale_add_op):
    schema = str(scale_add_op._opoverload._schema)
    assert schema == "tilecraft_test::scale_add(Tensor X, Tensor B, float alpha) -> Tensor"


def test_the_fake_implementation_gives_shapes_without_running(scale_add_op):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        x = mode.from_tensor(torch.empty(77, 3))
        b = mode.from_tensor(torch.empty(3))
        y = scale_add_op(x, b, 2.0)
    assert tuple(y.shape) == (77, 3) and y.dtype == torch.float32


class Model(torch.nn.Module):
    def __init__(self, op) -> None:
        super().__init__()
        self.op = op
        self.bias = torch.nn.Parameter(torch.randn(3), requires_grad=False)

    def forward(self, x):
        return torch.relu(self.op(x * 2.0, self.bias, 0.5)) + 1.0


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_traces_the_op_with_no_graph_break(scale_add_op, backend):
    torch._dynamo.reset()
    model = Model(scale_add_op)
    compiled = torch.compile(model, fullgraph=True, backend=backend)  # a graph break raises
    x = torch.randn(131, 3)
    expected = np.maximum(reference(x * 2.0, model.bias, 0.5), 0.0) + 1.0
    np.testing.assert_allclose(compiled(x).numpy(), expected, rtol=1e-5, atol=1e-5)
    explained = torch._dynamo.explain(model)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1


def test_dynamic_shapes_bind_symbolic_dims(scale_add_op):
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, b: scale_add_op(x, b, 3.0), fullgraph=True, dynamic=True,
                             backend="aot_eager")  # fmt: skip
    for rows in (5, 64, 200):
        x, b = torch.randn(rows, 3), torch.randn(3)
        np.testing.assert_allclose(compiled(x, b).numpy(), reference(x, b, 3.0), rtol=1e-6, atol=1e-6)


def test_several_outputs_come_back_as_a_tuple():
    op = tctorch.custom_op(tilecraft.compile(_split(), out_idx=[1, 2], target="c"), name="split_test")
    assert "-> (Tensor, Tensor)" in str(op._opoverload._schema)
    x = torch.rand(100)
    lo, hi = torch.compile(op, fullgraph=True, backend="aot_eager")(x)
    np.testing.assert_allclose(lo.numpy(), x.numpy() - 1.0, rtol=1e-6)
    assert hi.dtype == torch.int32
    np.testing.assert_array_equal(hi.numpy(), (x.numpy().astype(np.float32) * np.float32(10.0)).astype(np.int32))


def test_an_input_the_kernel_writes_is_declared_mutated():
    op = tctorch.custom_op(tilecraft.compile(_accumulate(), target="c"), name="accumulate_test")
    assert str(op._opoverload._schema).endswith("(Tensor(a!) Acc, Tensor X) -> ()")
    acc, x = torch.randn(70), torch.randn(70)
    expected = acc.double().numpy() + x.double().numpy()

    def step(acc, x):
        op(acc, x)
        return acc * 1.0

    out = torch.compile(step, fullgraph=True, backend="aot_eager")(acc, x)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(acc.numpy(), expected, rtol=1e-6)


def test_an_eager_jit_function_is_specialized_per_shape():
    @tilecraft.jit(out_idx=[-1], target="c")
    def twice(X: T.Tensor((T.const("N"),), "float32"), Y: T.Tensor((T.const("N"),), "float32")):
        with T.Kernel(1, threads=1) as _:
            for i in T.Parallel(T.const("N")):
                Y[i] = X[i] * 2.0

    op = tctorch.custom_op(twice, name="twice_test")
    compiled = torch.compile(op, fullgraph=True, backend="aot_eager")
    for n in (7, 33):
        x = torch.randn(n)
        np.testing.assert_allclose(compiled(x).numpy(), x.numpy() * 2.0, rtol=1e-6)


def test_a_lazy_factory_is_refused_with_what_to_pass():
    @tilecraft.jit(out_idx=[-1], target="c")
    def factory(n):
        return _scale_add()

    with pytest.raises(ArgumentError, match=r"pass the Kernel it returns.*factory\(\.\.\.\)"):
        tctorch.custom_op(factory, name="factory_test")


def test_something_else_is_refused():
    with pytest.raises(ArgumentError, match="takes a compiled Kernel"):
        tctorch.custom_op(lambda x: x, name="lambda_test")


def test_the_kernel_still_checks_what_the_op_is_given(scale_add_op):
    with pytest.raises(ArgumentError, match="expected dtype float32, got float64"):
        scale_add_op(torch.randn(4, 3, dtype=torch.float64), torch.randn(3), 1.0)
