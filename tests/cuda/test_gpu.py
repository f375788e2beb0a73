"""On a real GPU: hand-written kernels built, loaded and launched by both CUDA execution backends, on
torch tensors. Every test is marked `gpu` and skips, with the reason, without a CUDA device or torch."""

from __future__ import annotations

import numpy as np
import pytest

from tests.cuda.helpers import ADD_SOURCE, FakeContext, add_artifact
from tilecraft.backend import Target
from tilecraft.errors import ArgumentError
from tilecraft.execution.cuda_driver import driver as cuda_driver
from tilecraft.execution.cuda_driver import launch as launch_module
from tilecraft.execution.cuda_driver import toolkit
from tilecraft.execution.nvcc import toolchain
from tilecraft.execution.nvcc.backend import NvccExecutionBackend
from tilecraft.execution.nvcc.spec import NVCC
from tilecraft.execution.nvrtc import compiler
from tilecraft.execution.nvrtc.backend import NvrtcExecutionBackend
from tilecraft.execution.nvrtc.spec import NVRTC
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.jit.kernel import Kernel
from tilecraft.runtime import CompiledArtifact, KernelInfo, ParamInfo

pytestmark = pytest.mark.gpu

SMEM_FLOATS = 16384  # 64 KiB of dynamic shared memory: above the 48 KiB default
REVERSE_SOURCE = f"""
extern "C" __global__ void reverse_through_smem(const float* x, float* y) {{
    extern __shared__ float buffer[];
    for (int j = threadIdx.x; j < {SMEM_FLOATS}; j += blockDim.x) buffer[j] = x[j];
    __syncthreads();
    for (int j = threadIdx.x; j < {SMEM_FLOATS}; j += blockDim.x) y[j] = buffer[{SMEM_FLOATS} - 1 - j];
}}
"""
TWO_STEP_SOURCE = """
extern "C" __global__ void add_one(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}
extern "C" __global__ void twice(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * y[i];
}
"""


@pytest.fixture
def torch():
    status = cuda_driver.device_status(0)
    if isinstance(status, Exception):
        pytest.skip(f"no CUDA device: {status.reason}")
    torch = pytest.importorskip("torch", reason="the GPU tests use torch tensors; pip install torch")
    if not torch.cuda.is_available():
        pytest.skip("torch was built without CUDA or sees no device")
    return torch


@pytest.fixture
def device_target(torch) -> Target:
    """The target of device 0, its arch read from the device."""
    return Target.parse("cuda")


def _backend(name: str, cache):
    if name == "nvrtc":
        try:
            compiler.nvrtc_version()
        except compiler.NvrtcUnavailable as err:
            pytest.skip(f"NVRTC is not available: {err.reason}")
        return NvrtcExecutionBackend(NVRTC, cache)
    if toolkit.find_nvcc() is None:
        pytest.skip(f"nvcc not found (looked in {toolkit.describe_search()})")
    return NvccExecutionBackend(NVCC, cache)


def _with_cubin(backend, artifact: CompiledArtifact) -> CompiledArtifact:
    """What the CUDA target's compiled codegen entry does for the eager nvcc backend."""
    if backend.spec.eager_device_compile:
        arch = artifact.target.attr("arch")
        cubin = toolchain.compile_cubin(artifact.source("cuda-source"), arch)
        return CompiledArtifact(**{**_fields(artifact), "device_binaries": {"cubin": cubin}})
    return artifact


def _fields(artifact: CompiledArtifact) -> dict:
    from dataclasses import fields

    return {f.name: getattr(artifact, f.name) for f in fields(artifact)}


def _kernel(backend, artifact: CompiledArtifact, out_idx=()) -> Kernel:
    built = backend.build(_with_cubin(backend, artifact), FakeContext())
    return Kernel(backend.load(built), FakeContext(backend), out_idx)


def _add(device_target: Target, backend_name: str, cache, out_idx=(2,)):
    backend = _backend(backend_name, cache)
    arch = device_target.attr("arch")
    artifact = add_artifact(arch)
    return backend, _kernel(backend, artifact, out_idx)


@pytest.mark.parametrize("backend_name", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("launch_via", ["cuda-python", "ctypes"])
def test_add_kernel_on_torch_tensors(torch, device_target, cache, backend_name, launch_via, monkeypatch):
    if launch_via == "ctypes":
        monkeypatch.setattr(cuda_driver, "_bindings_launch_entry", lambda: None)
    backend, kernel = _add(device_target, backend_name, cache)
    n = 100_003
    a, b = (torch.randn(n, device="cuda") for _ in range(2))
    c = kernel(a, b, 0.5)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a + 0.5 * b)
    entry = cuda_driver.get_driver().launch_entry().via
    assert entry == launch_via or (launch_via == "cuda-python" and entry == "ctypes")


def test_kernels_of_one_artifact_run_in_order(torch, device_target, cache):
    backend = _backend("nvrtc", cache)
    n = E.Var(dt.int32, "n")
    x, y = (ParamInfo(name, "buffer", dt.float32, (n,)) for name in "xy")
    n_param = ParamInfo("n", "scalar", dt.int32)
    grid = (E.floordiv(n + 255, 256),)
    kernels = (
        KernelInfo("add_one", (x, y, n_param), grid, (256,)),
        KernelInfo("twice", (y, n_param), grid, (256,)),
    )
    artifact = CompiledArtifact("two_step", device_target, (x, y), (n,), kernels, {"cuda-source": TWO_STEP_SOURCE},
                                ir_hash="two-step-" + device_target.attr("arch"))  # fmt: skip
    kernel = _kernel(backend, artifact, out_idx=(1,))
    data = torch.randn(5000, device="cuda")
    torch.testing.assert_close(kernel(data), 2 * (data + 1))


def test_dynamic_shared_memory_above_48_kib(torch, device_target, cache):
    if device_target.attr("max_shared_memory_per_block_optin", 0) < SMEM_FLOATS * 4:
        pytest.skip("the device cannot give a block 64 KiB of shared memory")
    backend = _backend("nvrtc", cache)
    x, y = (ParamInfo(name, "buffer", dt.float32, (SMEM_FLOATS,)) for name in "xy")
    info = KernelInfo("reverse_through_smem", (x, y), (1,), (256,), dynamic_smem=SMEM_FLOATS * 4)
    artifact = CompiledArtifact("reverse", device_target, (x, y), (), (info,), {"cuda-source": REVERSE_SOURCE},
                                ir_hash="reverse-" + device_target.attr("arch"))  # fmt: skip
    kernel = _kernel(backend, artifact, out_idx=(1,))
    data = torch.randn(SMEM_FLOATS, device="cuda")
    torch.testing.assert_close(kernel(data), data.flip(0))


def test_stream_selection(torch, device_target, cache, monkeypatch):
    """No stream: torch's current stream of the tensors' device; `stream=` wins; results are ordered."""
    backend, kernel = _add(device_target, "nvrtc", cache)
    seen = []
    real_handle = launch_module.stream_handle
    monkeypatch.setattr(launch_module, "_torch_stream", [lambda device: seen.append(("current", device)) or
                                                         torch.cuda.current_stream(device).cuda_stream])  # fmt: skip
    monkeypatch.setattr(launch_module, "stream_handle", lambda s: seen.append(("given", s)) or real_handle(s))
    side = torch.cuda.Stream()
    a, b = (torch.randn(1 << 20, device="cuda") for _ in range(2))
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(1_000_000)  # keeps the side stream busy: a kernel on another stream would not wait
        a2 = a * 3  # written on the side stream
        c = kernel(a2, b, 1.0)
        assert seen[-1] == ("current", 0)
    side.synchronize()
    torch.testing.assert_close(c, a * 3 + b)
    other = torch.cuda.Stream()
    out = torch.empty_like(a)
    other.wait_stream(torch.cuda.current_stream())
    kernel(a, b, out, 2.0, stream=other)
    assert seen[-1] == ("given", other)
    other.synchronize()
    torch.testing.assert_close(out, a + 2 * b)


def test_host_arrays_and_other_devices_are_refused(torch, device_target, cache):
    backend, kernel = _add(device_target, "nvrtc", cache)
    a = torch.randn(64)
    with pytest.raises(
        ArgumentError, match=r"parameter 'A' is a torch array in host memory.*tensor\.cuda\(\)"
    ):
        kernel(a, a, 1.0)
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU: the wrong-device case needs two")
    x = torch.randn(64, device="cuda:1")
    with pytest.raises(ArgumentError, match=r"built for CUDA device 0 .* 'A' is on cuda:1, 'B' is on cuda:1"):
        kernel(x, x, 1.0)


def test_to_device_and_back(torch, cache):
    import ml_dtypes

    backend = NvrtcExecutionBackend(NVRTC, cache)
    for array in (np.arange(10, dtype=np.float32), np.arange(6, dtype=np.int64).reshape(2, 3),
                  np.linspace(-2, 2, 9).astype(ml_dtypes.bfloat16)):  # fmt: skip
        on_device = backend.to_device(array)
        assert on_device.is_cuda
        back = backend.to_host(on_device)
        assert back.dtype == array.dtype and np.array_equal(back, array)


def test_source_of_the_add_kernel_compiles_for_the_device(torch, device_target):
    """NVRTC's cubin for the device's own arch loads (the driver accepts the compiler's output)."""
    try:
        cubin = compiler.nvrtc_compile(ADD_SOURCE, device_target.attr("arch"))
    except compiler.NvrtcUnavailable as err:
        pytest.skip(f"NVRTC is not available: {err.reason}")
    driver = cuda_driver.get_driver()
    with driver.using_context(driver.primary_context(0)):
        module = driver.load_module(cubin)
        assert driver.function(module, "add_kernel")
        driver.unload_module(module)
