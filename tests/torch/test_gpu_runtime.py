"""On a real GPU: the custom op on CUDA tensors under torch.compile, launches on torch's current
stream, CUDA-graph capture and replay, and DLPack arrays. Marked `gpu`; skips without a CUDA device,
torch with CUDA, or (for the CuPy case) CuPy."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.execution.cuda_driver import driver as cuda_driver

pytestmark = pytest.mark.gpu
BLOCK = 128


@pytest.fixture(scope="module")
def torch():
    status = cuda_driver.device_status(0)
    if isinstance(status, Exception):
        pytest.skip(f"no CUDA device: {status.reason}")
    torch = pytest.importorskip("torch", reason="these tests use torch tensors; pip install torch")
    if not torch.cuda.is_available():
        pytest.skip("torch was built without CUDA or sees no device")
    return torch


def _axpb():
    n = T.dynamic("n")

    @T.prim_func
    def axpb(X: T.Tensor((n,), "float32"), alpha: T.float32, Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    Y[bx * BLOCK + i] = X[bx * BLOCK + i] * alpha + 1.0

    return axpb


@pytest.fixture(scope="module")
def kernel(torch):
    return tilecraft.compile(_axpb(), out_idx=[-1])


def expected(x, alpha):
    return x.double().cpu().numpy() * alpha + 1.0


def test_custom_op_on_cuda_tensors_compiles_with_fullgraph(torch, kernel):
    import tilecraft.torch as tctorch

    op = tctorch.custom_op(kernel, name="tilecraft_gpu_test::axpb")
    torch._dynamo.reset()
    model = torch.compile(lambda x: torch.sigmoid(op(x * 2.0, 0.25)), fullgraph=True)
    x = torch.randn(1000, device="cuda")
    ref = 1.0 / (1.0 + np.exp(-expected(x * 2.0, 0.25)))
    np.testing.assert_allclose(model(x).cpu().numpy(), ref, rtol=1e-5, atol=1e-6)
    assert torch._dynamo.explain(lambda x: op(x, 1.0))(x).graph_break_count == 0


def test_a_launch_goes_on_torchs_current_stream(torch, kernel):
    x = torch.randn(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # the side stream is busy: a launch there waits behind it
        y = kernel(x, 3.0)
        done = torch.cuda.Event()
        done.record(side)
    assert not done.query(), "the launch did not wait behind the side stream's work"
    side.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), expected(x, 3.0), rtol=1e-6)


def test_stream_argument_picks_the_stream(torch, kernel):
    x = torch.randn(4096, device="cuda")
    y = torch.full_like(x, float("nan"))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    kernel(x, 2.0, y, stream=side)
    side.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), expected(x, 2.0), rtol=1e-6)


def test_cuda_graph_capture_records_and_replays(torch, kernel):
    x = torch.randn(3000, device="cuda")
    kernel(x, 1.0)  # warm: load and build the launch paths outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = kernel(x, 0.5)  # allocated from the graph's pool
        z = kernel(y, 2.0)
    for trial in range(3):
        x.copy_(torch.randn(3000, device="cuda"))
        z.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        np.testing.assert_allclose(z.cpu().numpy(), expected(torch.from_numpy(expected(x, 0.5)), 2.0),
                                   rtol=1e-5, err_msg=f"replay {trial}")  # fmt: skip


def test_capture_does_no_synchronization(torch, kernel):
    x = torch.randn(256, device="cuda")
    kernel(x, 1.0)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    # A synchronizing call inside capture is an error in torch's "global" capture mode.
    with torch.cuda.graph(graph, capture_error_mode="global"):
        for _ in range(10):
            y = kernel(x, 4.0)
    graph.replay()
    torch.cuda.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), expected(x, 4.0), rtol=1e-6)


def test_a_cupy_array_is_read_in_place_and_outputs_are_cupy(torch, kernel):
    cupy = pytest.importorskip("cupy", reason="pip install cupy-cuda12x")
    x = cupy.random.standard_normal(5000, dtype=cupy.float32)
    y = kernel(x, 2.0)
    assert type(y) is cupy.ndarray
    np.testing.assert_allclose(cupy.asnumpy(y), cupy.asnumpy(x).astype(np.float64) * 2.0 + 1.0, rtol=1e-6)


def test_a_dlpack_only_cuda_array_is_read_without_a_copy(torch, kernel):
    x = torch.randn(777, device="cuda")

    class OnlyDLPack:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, **kwargs):
            return self.t.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    y = torch.empty_like(x)
    kernel(OnlyDLPack(x), 3.0, OnlyDLPack(y))  # written in place: y is the same memory
    np.testing.assert_allclose(y.cpu().numpy(), expected(x, 3.0), rtol=1e-6)


def test_the_compiled_launcher_runs_cuda_tensors(torch, kernel):
    from tilecraft import settings

    with settings.override(TILECRAFT_LAUNCHER="compiled"):
        fresh = tilecraft.compile(_axpb(), out_idx=[-1])
        x = torch.randn(5000, device="cuda")
        fresh(x, 1.0)
    assert type(fresh._plan).__name__ == "Plan"

    def refuse(*args, **kwargs):
        raise AssertionError("the Python launcher ran a call the compiled one accepts")

    fresh._launch, fresh._fast = refuse, False
    y = fresh(x, -2.0)
    out = torch.full_like(x, float("nan"))
    assert fresh(x, 0.5, out) is None
    torch.cuda.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), expected(x, -2.0), rtol=1e-6)
    np.testing.assert_allclose(out.cpu().numpy(), expected(x, 0.5), rtol=1e-6)
