"""Load and Launch of the `hip` execution backend through tilecraft's real ctypes binding over a fake
HIP runtime library (fake_libamdhip64.c): availability, module loading, the launch ABI, streams,
errors, array checks, export and import. No AMD GPU is needed; tests/hip/gpu_session.sh runs the
conformance kit on one."""

from __future__ import annotations

import gc
import hashlib
import struct

import pytest

from tilecraft.backend import Target
from tilecraft.errors import ArgumentError, TilecraftError
from tilecraft.execution.hip import DLPACK_ROCM
from tilecraft.execution.hip import runtime as hip_runtime
from tilecraft.execution.hip.backend import HipExecutionBackend
from tilecraft.execution.hip.spec import HIP
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.runtime import CompiledArtifact, KernelInfo, ParamInfo
from tilecraft.runtime.arrays import ArrayArg

FAKE_HSACO = b"\x7fELF fake code object"


class FakeContext:
    target_host = None


def add_artifact(symbol: str = "add_kernel", binaries: dict | None = None, dynamic_smem: int = 0,
                 device: int = 0) -> CompiledArtifact:  # fmt: skip
    """A hand-made artifact of `C = A + alpha * B` over a symbolic length n, as HIP codegen makes one."""
    n = E.Var(dt.int32, "n")
    a, b, c = (ParamInfo(name, "buffer", dt.float32, (n,)) for name in "ABC")
    alpha = ParamInfo("alpha", "scalar", dt.float32)
    kernel = KernelInfo(symbol, (a, b, c, alpha, ParamInfo("n", "scalar", dt.int32)),
                        (E.floordiv(n + 255, 256),), (256,), dynamic_smem=dynamic_smem)  # fmt: skip
    binaries = {"hsaco": FAKE_HSACO} if binaries is None else binaries
    digest = hashlib.sha256(repr((symbol, dynamic_smem, device, binaries)).encode()).hexdigest()[:16]
    return CompiledArtifact(
        "add", Target.parse(f"hip -arch=gfx942 -device={device}"), (a, b, c, alpha), (n,), (kernel,),
        {"hip-source": "// source"}, binaries, ir_hash=digest,
    )  # fmt: skip


def gpu_array(ptr: int, n: int, device_type: int = DLPACK_ROCM, device: int = 0) -> ArrayArg:
    return ArrayArg(object(), ptr, (n,), (1,), dt.float32, device_type, device, "dlpack")


def loaded(cache, **kw):
    backend = HipExecutionBackend(HIP, cache)
    built = backend.build(add_artifact(**kw), FakeContext())
    return backend, built, backend.load(built)


# ---------------------------------------------------------------- availability


def test_unavailable_without_the_runtime_library(no_runtime):
    found = HIP.availability()
    assert not found.ok and "libamdhip64" in found.reason and "rocm-hip-runtime" in found.fix


def test_unavailable_when_the_runtime_finds_no_gpu(fake_runtime):
    fake_runtime.set("fake_init_result", hip_runtime.HIP_ERROR_NO_DEVICE)
    found = HIP.availability()
    assert not found.ok and "no AMD GPU" in found.reason and "rocminfo" in found.fix


def test_unavailable_with_zero_devices(fake_runtime):
    fake_runtime.set("fake_device_count", 0)
    assert HIP.availability().reason == "the HIP runtime reports no AMD GPU"


def test_available_with_a_device(fake_runtime):
    found = HIP.availability()
    assert found.ok and found.reason == "1 AMD GPU(s), HIP runtime 6.2.41134"


def test_a_library_that_is_not_the_hip_runtime_is_named(monkeypatch):
    import ctypes

    monkeypatch.setattr(hip_runtime, "_load_library", lambda: ctypes.CDLL(None))
    found = HIP.availability()
    assert not found.ok and "not the HIP runtime" in found.reason


# ---------------------------------------------------------------- build and load


def test_build_keeps_the_code_object_and_the_source(cache, fake_runtime):
    _, built, _ = loaded(cache)
    assert built.read("kernel.hsaco") == FAKE_HSACO and built.read("kernel.hip") == b"// source"


def test_build_without_a_code_object_says_how_to_get_one(cache):
    backend = HipExecutionBackend(HIP, cache)
    with pytest.raises(TilecraftError, match="no hsaco code object.*execution_backend='hip'"):
        backend.build(add_artifact(binaries={}), FakeContext())


def test_load_sets_the_device_and_finds_the_kernels(cache, fake_runtime):
    fake_runtime.set("fake_device_count", 2)
    _, _, mod = loaded(cache, device=1)
    assert fake_runtime.get("fake_device") == 1 and fake_runtime.get("fake_loads") == 1
    assert fake_runtime.get("fake_image_size") == 1  # the code object's bytes reached hipModuleLoadData
    assert mod.handle.device == 1 and len(mod.handle.functions) == 1


def test_a_missing_kernel_is_named_and_the_module_unloaded(cache, fake_runtime):
    with pytest.raises(hip_runtime.HipError, match="hipModuleGetFunction failed \\(kernel missing_kernel\\): "
                       "hipErrorNotFound"):  # fmt: skip
        loaded(cache, symbol="missing_kernel")
    assert fake_runtime.get("fake_unloads") == 1


def test_a_code_object_for_another_arch_says_so(cache, fake_runtime):
    fake_runtime.set("fake_load_result", hip_runtime.HIP_ERROR_NO_BINARY_FOR_GPU)
    with pytest.raises(TilecraftError, match="cannot load the code object of add, built for gfx942"):
        loaded(cache)


def test_the_module_is_unloaded_when_collected(cache, fake_runtime):
    _, _, mod = loaded(cache)
    del mod
    gc.collect()
    assert fake_runtime.get("fake_unloads") == 1


# ---------------------------------------------------------------- launch


def test_launch_packs_pointers_and_scalars_and_computes_the_grid(cache, fake_runtime):
    backend, _, mod = loaded(cache)
    fake_runtime.set("fake_param_count", 5)
    launch = backend.launcher(mod)
    launch([gpu_array(0x1000, 1000), gpu_array(0x2000, 1000), gpu_array(0x3000, 1000), 2.5], [1000])
    assert fake_runtime.get("fake_launch_count") == 1
    slots = fake_runtime.params(5)
    assert [struct.unpack("<Q", s)[0] for s in slots[:3]] == [0x1000, 0x2000, 0x3000]
    assert struct.unpack("<f", slots[3][:4])[0] == 2.5 and struct.unpack("<i", slots[4][:4])[0] == 1000
    import ctypes

    dims = (ctypes.c_long * 7).in_dll(fake_runtime.lib, "fake_dims")
    assert list(dims) == [4, 1, 1, 256, 1, 1, 0]  # ceil(1000 / 256) work-groups of 256
    assert fake_runtime.get("fake_stream") == 0 and fake_runtime.get("fake_device_at_launch") == 0


def test_launch_uses_the_given_stream(cache, fake_runtime):
    backend, _, mod = loaded(cache)
    backend.launcher(mod)([gpu_array(0x1000, 8)] * 3 + [1.0], [8], stream=0x7000)
    assert fake_runtime.get("fake_stream") == 0x7000


def test_dynamic_lds_is_passed_to_the_launch(cache, fake_runtime):
    import ctypes

    backend, _, mod = loaded(cache, dynamic_smem=40960)
    backend.launcher(mod)([gpu_array(0x1000, 8)] * 3 + [1.0], [8])
    assert (ctypes.c_long * 7).in_dll(fake_runtime.lib, "fake_dims")[6] == 40960


def test_a_failed_launch_names_the_kernel_and_its_configuration(cache, fake_runtime):
    backend, _, mod = loaded(cache)
    fake_runtime.set("fake_launch_result", 701)
    with pytest.raises(hip_runtime.HipError, match="kernel add_kernel, grid \\(1, 1, 1\\), block \\(256, 1, 1\\).*"
                       "hipErrorLaunchOutOfResources"):  # fmt: skip
        backend.launcher(mod)([gpu_array(0x1000, 8)] * 3 + [1.0], [8])


def test_an_empty_grid_launches_nothing(cache, fake_runtime):
    backend, _, mod = loaded(cache)
    backend.launcher(mod)([gpu_array(0x1000, 0)] * 3 + [1.0], [0])
    assert fake_runtime.get("fake_launch_count") == 0


def test_buffers_on_another_device_are_refused(cache, fake_runtime):
    backend, _, mod = loaded(cache)
    with pytest.raises(ArgumentError, match="loaded on AMD GPU 0.*'B' is on device 1"):
        backend.launcher(mod)(
            [gpu_array(0x1000, 8), gpu_array(0x2000, 8, device=1), gpu_array(0x3000, 8), 1.0], [8]
        )


def test_synchronize_waits_for_the_device(cache, fake_runtime):
    backend, _, mod = loaded(cache)
    backend.synchronize(mod)
    assert fake_runtime.get("fake_syncs") == 1


# ---------------------------------------------------------------- arrays, export


def test_host_arrays_and_misaligned_views_are_refused(cache):
    backend = HipExecutionBackend(HIP, cache)
    with pytest.raises(ArgumentError, match="runs on an AMD GPU through HIP"):
        backend.check_device(gpu_array(0x1000, 8, device_type=1), "A")
    with pytest.raises(ArgumentError, match="not 16-byte aligned"):
        backend.check_device(gpu_array(0x1004, 8), "A")
    backend.check_device(gpu_array(0x1000, 8), "A")


def test_outputs_need_a_torch_input(cache):
    with pytest.raises(ArgumentError, match="allocates them with torch"):
        HipExecutionBackend(HIP, cache).empty(None, (4,), dt.float32)


def test_an_export_loads_without_a_compiler(cache, fake_runtime, tmp_path):
    backend, built, _ = loaded(cache)
    path = backend.export(built, tmp_path / "export")
    again = backend.import_built(path)
    assert again.read("kernel.hsaco") == FAKE_HSACO
    backend.load(again)
    assert fake_runtime.get("fake_loads") == 2
