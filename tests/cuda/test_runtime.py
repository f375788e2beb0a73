"""Load and Launch through tilecraft's real ctypes driver binding over a fake driver library: module
loading, dynamic shared memory, contexts, the launch ABI, errors, array checks, export and import."""

from __future__ import annotations

import gc
import struct
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from tests.cuda.helpers import ADD_SOURCE, FakeContext, add_artifact
from tilecraft import settings
from tilecraft.errors import ArgumentError, TilecraftError, ToolchainError
from tilecraft.execution.cuda_driver import driver as cuda_driver
from tilecraft.execution.cuda_driver import toolkit
from tilecraft.execution.nvcc import toolchain
from tilecraft.execution.nvcc.backend import NvccExecutionBackend
from tilecraft.execution.nvcc.spec import NVCC
from tilecraft.jit.kernel import Kernel

FAKE_CUBIN = b"\x7fELF fake cubin"
PRIMARY_CONTEXT_0 = 0x1000  # what the fake driver hands out for device 0


class DeviceArray:
    """A GPU array as CuPy or Numba present one: only `__cuda_array_interface__`."""

    def __init__(self, ptr: int, shape: tuple[int, ...], typestr: str = "<f4") -> None:
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape, "typestr": typestr,
                                         "strides": None, "version": 3}  # fmt: skip


def _loaded(cache, **kw):
    backend = NvccExecutionBackend(NVCC, cache)
    artifact = add_artifact(binaries={"cubin": kw.pop("cubin", FAKE_CUBIN)}, **kw)
    built = backend.build(artifact, FakeContext())
    return backend, built, backend.load(built)


def test_load_makes_the_primary_context_current_and_finds_the_kernels(cache, fake_driver):
    _, _, loaded = _loaded(cache)
    assert loaded.handle.context == PRIMARY_CONTEXT_0 and fake_driver.current() == PRIMARY_CONTEXT_0
    assert len(loaded.handle.functions) == 1 and loaded.handle.device == 0
    assert fake_driver.get("fake_max_dynamic_smem") == 0  # 48 KiB or less needs no attribute


def test_large_dynamic_shared_memory_is_allowed_once_at_load(cache, fake_driver):
    _loaded(cache, dynamic_smem=100 * 1024)
    assert fake_driver.get("fake_max_dynamic_smem") == 100 * 1024


def test_48_kib_of_dynamic_and_some_static_shared_memory_needs_the_attribute(cache, fake_driver):
    """The H200 refused a 48 KiB TMA gemm at launch: its mbarriers add static shared memory, and without
    the attribute a kernel gets 48 KiB minus its static part."""
    fake_driver.set("fake_static_smem", 1024)
    _loaded(cache, dynamic_smem=48 * 1024)
    assert fake_driver.get("fake_max_dynamic_smem") == 48 * 1024


def test_dynamic_shared_memory_beyond_the_device_is_an_error(cache, fake_driver):
    fake_driver.set("fake_static_smem", 8 * 1024)
    with pytest.raises(TilecraftError, match=r"needs 230400 bytes of dynamic shared memory \(\+8192 static\); "
                                             r"CUDA device 0 allows 232448 bytes per block"):  # fmt: skip
        _loaded(cache, dynamic_smem=225 * 1024)


def test_a_cubin_the_device_cannot_run_names_both_archs(cache, fake_driver):
    with pytest.raises(TilecraftError) as info:
        _loaded(cache, cubin=b"not an ELF image")
    message = str(info.value)
    assert (
        "CUDA device 0 (Fake H200, compute capability 9.0, driver CUDA 13.0) cannot load the cubin" in message
    )
    assert "built for sm_90a" in message
    assert "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE" in message


def test_a_missing_symbol_names_the_call(cache, fake_driver):
    backend = NvccExecutionBackend(NVCC, cache)
    artifact = add_artifact(binaries={"cubin": FAKE_CUBIN})
    object.__setattr__(artifact.kernels[0], "symbol", "missing_kernel")
    gc.collect()
    before = fake_driver.get("fake_unloads")
    with pytest.raises(cuda_driver.DriverError, match="cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND"):
        backend.load(backend.build(artifact, FakeContext()))
    assert fake_driver.get("fake_unloads") == before + 1  # the half-loaded module was unloaded


def test_load_without_a_driver_says_what_to_install(cache, no_driver):
    backend = NvccExecutionBackend(NVCC, cache)
    built = backend.build(add_artifact(binaries={"cubin": FAKE_CUBIN}), FakeContext())
    with pytest.raises(cuda_driver.DriverUnavailable, match="install the NVIDIA driver"):
        backend.load(built)


def _args(n=1000):
    a, b, c = (DeviceArray(ptr, (n,)) for ptr in (0xA000, 0xB000, 0xC000))
    return a, b, c


def test_launch_passes_pointers_and_scalars_through_the_real_abi(cache, fake_driver):
    backend, built, loaded = _loaded(cache)
    launch = backend.launcher(loaded)
    fake_driver.set("fake_param_count", 5)
    args = [backend.array_readers[0](x) for x in _args()] + [2.5]
    launch(args, [1000], 0x5000)
    slots = fake_driver.params(5)
    assert [struct.unpack("<Q", s)[0] for s in slots[:3]] == [0xA000, 0xB000, 0xC000]
    assert struct.unpack("<f", slots[3][:4])[0] == 2.5 and struct.unpack("<i", slots[4][:4])[0] == 1000
    assert fake_driver.dims() == (8, 1, 1, 128, 1, 1, 0)
    assert fake_driver.stream() == 0x5000


def test_the_kernel_object_validates_and_launches(cache, fake_driver):
    backend, built, loaded = _loaded(cache)
    kernel = Kernel(loaded, FakeContext(backend))
    fake_driver.set("fake_param_count", 5)
    kernel(*_args(300), 1.0)
    assert fake_driver.dims()[0] == 3 and fake_driver.stream() == 0
    with pytest.raises(
        ArgumentError, match=r"parameter 'A' is a numpy array in host memory.*tensor\.cuda\(\)"
    ):
        kernel(np.zeros(300, np.float32), *_args(300)[1:], 1.0)
    with pytest.raises(ArgumentError, match="expected dtype float32, got float64"):
        kernel(DeviceArray(1, (300,), "<f8"), *_args(300)[1:], 1.0)


def test_outputs_need_torch_or_cupy_inputs(cache, fake_driver):
    backend, built, loaded = _loaded(cache)
    kernel = Kernel(loaded, FakeContext(backend), (2,))
    with pytest.raises(ArgumentError, match="allocate with torch or CuPy"):
        kernel(*_args(300)[:2], 1.0)


def test_launch_in_a_thread_without_a_current_context_retries_in_ours(cache, fake_driver):
    backend, built, loaded = _loaded(cache)
    launch = backend.launcher(loaded)
    fake_driver.set("fake_param_count", 5)
    fake_driver.set("fake_current", 0)  # as in a fresh thread
    fake_driver.fail_next_launches(cuda_driver.CUDA_ERROR_INVALID_CONTEXT)
    launch([backend.array_readers[0](x) for x in _args()] + [1.0], [1000])
    assert fake_driver.get("fake_launch_count") == 2 and fake_driver.get("fake_current_at_launch") == 1


def test_a_failed_launch_names_the_kernel_and_its_configuration(cache, fake_driver):
    backend, built, loaded = _loaded(cache)
    launch = backend.launcher(loaded)
    fake_driver.fail_next_launches(1)
    with pytest.raises(cuda_driver.DriverError) as info:
        launch([backend.array_readers[0](x) for x in _args()] + [1.0], [1000], 0x42)
    assert str(info.value) == (
        "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (1): fake failure; kernel add_kernel, grid (8, 1, 1), "
        "block (128, 1, 1), dynamic shared memory 0 bytes, stream 0x42, device 0"
    )


def test_modules_are_unloaded_when_no_launcher_holds_them(cache, fake_driver):
    backend, built, loaded = _loaded(cache)
    launch = backend.launcher(loaded)
    gc.collect()  # modules of earlier tests go first
    before = fake_driver.get("fake_unloads")
    del loaded
    gc.collect()
    assert fake_driver.get("fake_unloads") == before  # the launcher keeps the module
    del launch
    gc.collect()
    assert fake_driver.get("fake_unloads") == before + 1


def test_driver_memory_and_streams(fake_driver):
    driver = cuda_driver.get_driver()
    data = np.arange(16, dtype=np.float32)
    ptr = driver.mem_alloc(data.nbytes)
    driver.copy_to_device(ptr, data.ctypes.data, data.nbytes)
    back = np.empty_like(data)
    driver.copy_to_host(back.ctypes.data, ptr, data.nbytes)
    assert np.array_equal(back, data)
    driver.memset_d32(ptr, 0, 8)  # the profiler's L2 flush
    driver.copy_to_host(back.ctypes.data, ptr, data.nbytes)
    driver.mem_free(ptr)
    assert np.array_equal(back, np.where(np.arange(16) < 8, 0.0, data))
    stream = driver.stream_create()
    driver.stream_synchronize(stream)
    driver.stream_destroy(stream)
    assert driver.version() == 13000 and driver.device_info(0).sm_count == 132


def test_export_and_import_of_an_nvcc_build_load_without_a_compiler(
    cache, tmp_path, fake_driver, monkeypatch
):
    """A cubin compiled by the local nvcc, built, exported, imported with every compiler disabled, loaded."""
    if toolkit.find_nvcc() is None:
        pytest.skip(f"nvcc not found (looked in {toolkit.describe_search()})")
    cubin = toolchain.compile_cubin(ADD_SOURCE, "sm_90a")
    backend = NvccExecutionBackend(NVCC, cache)
    built = backend.build(add_artifact(binaries={"cubin": cubin}), FakeContext())
    path = backend.export(built, tmp_path / "export")

    def no_compiler(*args, **kw):
        raise ToolchainError("a compiler was called")

    monkeypatch.setattr(toolchain, "compile_cubin", no_compiler)
    monkeypatch.setattr(toolkit, "find_nvcc", lambda: None)
    imported = NvccExecutionBackend(NVCC, cache).import_built(path)
    assert imported.read("kernel.cubin") == cubin and imported.read("kernel.cu").decode() == ADD_SOURCE
    assert imported.key == built.key and imported.artifact.kernels[0].symbol == "add_kernel"
    loaded = backend.load(imported)
    assert loaded.handle.functions and backend.launcher(loaded) is not None


LAUNCH_THROUGH_BINDINGS = """
import ctypes, struct, sys
from tests.cuda.helpers import FakeContext, add_artifact
from tilecraft.execution.cache import KernelCache
from tilecraft.execution.nvcc.backend import NvccExecutionBackend
from tilecraft.execution.nvcc.spec import NVCC
from tilecraft.ir import dtype as dt
from tilecraft.runtime.arrays import ArrayArg

backend = NvccExecutionBackend(NVCC, KernelCache(sys.argv[1], enabled=True))
loaded = backend.load(backend.build(add_artifact(binaries={"cubin": b"\\x7fELF"}), FakeContext()))
launch = backend.launcher(loaded)
fake = ctypes.CDLL("libcuda.so.1")
ctypes.c_int.in_dll(fake, "fake_param_count").value = 5
arrays = [ArrayArg(None, ptr, (1000,), (1,), dt.float32, 2, 0, "interface") for ptr in (0xA0, 0xB0, 0xC0)]
launch(arrays + [2.5], [1000], 0x55)
slots = bytes((ctypes.c_ubyte * 40).in_dll(fake, "fake_params"))
print(loaded.handle.driver.launch_entry().via, struct.unpack("<QQQf4xi4x", slots),
      list((ctypes.c_uint * 7).in_dll(fake, "fake_dims")), ctypes.c_size_t.in_dll(fake, "fake_stream").value)
"""


def test_launch_through_cuda_python_uses_the_same_abi(fake_library_path, tmp_path):
    """With cuda-python installed, launches go through its cuLaunchKernel with the raw params address.

    Runs in a fresh process whose only `libcuda.so.1` is the fake, so no real driver can be reached.
    """
    pytest.importorskip("cuda.bindings.driver", reason="cuda-python (cuda.bindings) is not installed")
    import os
    import subprocess
    import sys

    libdir = tmp_path / "lib"
    libdir.mkdir()
    (libdir / "libcuda.so.1").write_bytes(fake_library_path.read_bytes())
    env = {**os.environ, "LD_LIBRARY_PATH": f"{libdir}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", LAUNCH_THROUGH_BINDINGS, str(tmp_path / "cache")],
                         capture_output=True, text=True, cwd=root, env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(" ", 1) == [
        "cuda-python",
        "(160, 176, 192, 2.5, 1000) [8, 1, 1, 128, 1, 1, 0] 85\n",
    ]


def test_fast_path_support_builds_a_raw_launcher(cache, fake_driver):
    """The torch fast path gets a launcher over raw pointers and launches through it."""
    backend, built, loaded = _loaded(cache)
    fast = backend.fast_path(loaded)
    fake_driver.set("fake_param_count", 5)
    args = [backend.array_readers[0](x).ptr for x in _args()] + [1.0]
    fast.launch(args, [1000], 0x42)
    assert fake_driver.stream() == 0x42 and fast.device == 0


def test_kernel_calls_with_torch_tensors_take_the_fast_path(cache, fake_driver, monkeypatch):
    """A stand-in torch (tensors whose class lives in a `torch` module) drives the generated fast path."""
    import sys
    import types

    torch = types.ModuleType("torch")

    class Tensor:
        __module__ = "torch"

        def __init__(self, ptr, shape):
            self.ptr, self.shape, self.dtype, self.device = ptr, shape, torch.float32, "device0"

        def get_device(self):
            return 0

        def is_contiguous(self):
            return True

        def data_ptr(self):
            return self.ptr

    torch.Tensor, torch.float32 = Tensor, object()
    torch.empty = lambda *shape, dtype, device: Tensor(0xC000, shape)
    torch.empty_like = lambda like: Tensor(0xC000, like.shape)
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0x77)
    monkeypatch.setitem(sys.modules, "torch", torch)
    from tilecraft.execution.cuda_driver import launch as launch_module

    monkeypatch.setattr(launch_module, "_torch_stream", [])
    backend, built, loaded = _loaded(cache)
    with settings.override(TILECRAFT_LAUNCHER="python"):  # the compiled launcher's are in test_native_launch
        kernel = Kernel(loaded, FakeContext(backend), (2,))
        fake_driver.set("fake_param_count", 5)
        out = kernel(Tensor(0xA000, (1000,)), Tensor(0xB000, (1000,)), 1.5)
    assert callable(kernel._fast) and out.shape == (1000,)
    assert fake_driver.stream() == 0x77 and fake_driver.dims()[0] == 8


def test_a_fast_path_that_cannot_be_built_is_reported(cache, fake_driver, monkeypatch):
    """The fast path is an optimization, but losing it costs several microseconds per call: say so."""
    from tilecraft.jit import fastpath

    def broken(*args):
        raise AttributeError("module 'torch' has no attribute 'empty_like'")

    monkeypatch.setattr(fastpath, "build_fast_path", broken)
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    backend, built, loaded = _loaded(cache)
    kernel = Kernel(loaded, FakeContext(backend), (2,))
    with pytest.warns(RuntimeWarning, match="no fast launch path for .*empty_like.*full validation path"):
        assert kernel._fast_path() is None
