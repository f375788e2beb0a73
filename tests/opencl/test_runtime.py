"""Build, Load and Launch of hand-written OpenCL C kernels on a real OpenCL device (PoCL on the CPU
here): the cache, the launch ABI, local memory, several kernels, 2-D NDRanges, errors, and the
reuse of a cached program binary in a second process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from tests.opencl.helpers import (
    ADD_SOURCE,
    FakeContext,
    add_artifact,
    iota_artifact,
    reverse_artifact,
    scalars_artifact,
    transpose_artifact,
    two_kernels_artifact,
)
from tilecraft.errors import ArgumentError, TilecraftError, ToolchainError
from tilecraft.execution.opencl.backend import BINARY_FILE, SOURCE_FILE, OpenCLExecutionBackend
from tilecraft.execution.opencl.device import OpenCLUnavailable
from tilecraft.execution.opencl.memory import host_region
from tilecraft.execution.opencl.spec import OPENCL
from tilecraft.jit.kernel import Kernel
from tilecraft.runtime.arrays import ArrayArg, as_array_arg
from tilecraft.runtime.launch import Built

ROOT = Path(__file__).resolve().parents[2]


def rolled() -> list[str]:
    """The option a CPU device's build adds (the suite's PoCL device is one): loops stay rolled."""
    from tilecraft.execution.opencl.backend import artifact_device
    from tilecraft.execution.opencl.device import find_device
    from tilecraft.execution.opencl.spec import NO_UNROLL

    return [f"-D{NO_UNROLL}"] if find_device(*artifact_device(add_artifact())).cpu else []


def rng() -> np.random.Generator:
    return np.random.default_rng()


def randn(*shape, dtype=np.float32) -> np.ndarray:
    """Fresh inputs in [1, 2): never zero, and sums of them never cancel (float32 vs a float64 reference)."""
    return (rng().random(shape) + 1.0).astype(dtype)


def kernel_of(backend, artifact, out_idx=()):
    built = backend.build(artifact, FakeContext())
    loaded = backend.load(built)
    return Kernel(loaded, FakeContext(backend), out_idx), loaded


def count_compiles(monkeypatch) -> list:
    calls = []
    original = OpenCLExecutionBackend.compile

    def counting(self, artifact, ctx):
        calls.append(artifact.function_name)
        return original(self, artifact, ctx)

    monkeypatch.setattr(OpenCLExecutionBackend, "compile", counting)
    return calls


def test_add_builds_caches_loads_the_binary_and_launches(backend, cache, monkeypatch):
    compiles = count_compiles(monkeypatch)
    artifact = add_artifact()
    built = backend.build(artifact, FakeContext())
    assert compiles == ["add"]
    assert set(built.entry.files) == {BINARY_FILE, SOURCE_FILE}
    assert built.read(SOURCE_FILE).decode() == ADD_SOURCE
    assert built.entry.meta["options"] == ["-cl-std=CL1.2", *rolled()] and built.entry.meta["kernels"] == ["add_kernel"]
    assert backend.build(add_artifact(), FakeContext()).key == built.key and compiles == ["add"]
    loaded = backend.load(built)
    assert loaded.handle.from_binary and loaded.handle.binary_error == ""
    kernel = Kernel(loaded, FakeContext(backend), (2,))
    for n in (1000, 128, 1, 4099):  # symbolic n: one build serves every length
        a, b = randn(n), randn(n)
        c = kernel(a, b, 0.5)
        assert isinstance(c, np.ndarray) and c.shape == (n,) and c.dtype == np.float32
        np.testing.assert_allclose(c, a.astype(np.float64) + 0.5 * b, rtol=1e-6)


def test_outputs_given_by_the_caller_are_written_in_place(backend):
    kernel, _ = kernel_of(backend, add_artifact())
    a, b = randn(777), randn(777)
    c = np.full(777, -1.0, np.float32)
    assert kernel(a, b, c, 2.0) is None
    np.testing.assert_allclose(c, a + 2.0 * b, rtol=1e-6)


def test_scalars_of_many_dtypes_reach_the_kernel_by_name(backend, opencl_device):
    if not opencl_device.fp64:
        pytest.skip(f"{opencl_device.describe()} has no cl_khr_fp64")
    kernel, _ = kernel_of(backend, scalars_artifact(), out_idx=(8,))
    x = randn(300)
    values = {"g": 2**33 + 7, "f": 1.5, "e": True, "d": -(2**40) + 3, "c": 0.25, "b": 65000, "a": -3}
    y = kernel(x, *values.values())
    expected = x.astype(np.float64) * 0.25 - 3 + 65000 - 2**40 + 3 + 1000.0 + 1.5 + 2**33 + 7
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, expected, rtol=1e-13)
    y = kernel(x, *{**values, "e": False}.values())
    np.testing.assert_allclose(y, expected - 1000.0, rtol=1e-13)


def test_a_scalar_out_of_range_names_the_parameter(backend, opencl_device):
    if not opencl_device.fp64:
        pytest.skip(f"{opencl_device.describe()} has no cl_khr_fp64")
    kernel, loaded = kernel_of(backend, scalars_artifact(), out_idx=(8,))
    with pytest.raises(
        ArgumentError, match=r"parameter 'a' \(int8 scalar\) must be from -128 to 127; got 300"
    ):
        kernel(randn(10), 1, 1.0, True, 1, 1.0, 1, 300)
    # The launcher checks too, for callers that bypass Kernel's validation.
    x, y = as_array_arg(randn(10), "X"), as_array_arg(np.zeros(10), "Y")
    with pytest.raises(ArgumentError, match=r"kernel scalars_kernel: parameter 'a' \(int8\) cannot take 300"):
        backend.launcher(loaded)([x, 1, 1.0, True, 1, 1.0, 1, 300, y], [10])


def test_local_memory_is_the_last_argument(backend):
    kernel, loaded = kernel_of(backend, reverse_artifact(), out_idx=(1,))
    assert loaded.handle.plans[0].kernel.num_args == 4  # A, B, n, tc_smem
    for n in (1000, 256):
        a = randn(n)
        padded = np.concatenate([a, np.zeros(-n % 128, np.float32)])
        expected = padded.reshape(-1, 128)[:, ::-1].ravel()[:n]
        np.testing.assert_array_equal(kernel(a), expected)


def test_two_kernels_run_in_order_and_share_buffers(backend):
    kernel, loaded = kernel_of(backend, two_kernels_artifact(), out_idx=(1, 2))
    assert [p.info.symbol for p in loaded.handle.plans] == ["double_kernel", "inc_kernel"]
    a = randn(1000)
    t, c = kernel(a)
    np.testing.assert_array_equal(t, 2.0 * a)
    np.testing.assert_array_equal(c, 2.0 * a + 1.0)


def test_a_two_dimensional_ndrange(backend):
    kernel, loaded = kernel_of(backend, transpose_artifact(), out_idx=(1,))
    a = rng().integers(-1000, 1000, (37, 50), dtype=np.int32)
    np.testing.assert_array_equal(kernel(a), a.T)
    assert loaded.handle.plans[0].work_groups([], [37, 50]) == (4, 5)


def test_a_grid_over_a_scalar_parameter(backend):
    kernel, loaded = kernel_of(backend, iota_artifact())
    c = np.full(1000, -1, np.int64)
    kernel(c, 130, 2**40)
    np.testing.assert_array_equal(c[:130], 2**40 + np.arange(130))
    assert (c[130:] == -1).all()  # only ceil(130 / 64) = 3 work-groups ran, and they stopped at count
    assert loaded.handle.plans[0].work_groups([130, 2**40], [1000]) == (3,)


def test_a_target_naming_a_missing_platform_fails_before_building(backend):
    with pytest.raises(OpenCLUnavailable, match=r"OpenCL platform 7 does not exist; platforms: 0: "):
        backend.build(iota_artifact("opencl -platform=7"), FakeContext())


def test_an_empty_grid_launches_nothing(backend):
    kernel, _ = kernel_of(backend, add_artifact(), out_idx=(2,))
    empty = np.zeros(0, np.float32)
    assert kernel(empty, empty, 1.0).shape == (0,)


def test_the_same_array_twice_shares_one_buffer(backend):
    kernel, _ = kernel_of(backend, add_artifact())
    a, b = randn(500), randn(500)
    expected = a + 3.0 * b
    kernel(a, b, a, 3.0)  # C is A: in place
    np.testing.assert_allclose(a, expected, rtol=1e-6)


def test_partially_overlapping_arrays_are_refused(backend):
    kernel, _ = kernel_of(backend, add_artifact())
    base = randn(300)
    with pytest.raises(ArgumentError, match="parameters 'A' and 'C' overlap in memory"):
        kernel(base[:200], randn(200), base[100:], 1.0)


def test_read_only_inputs_are_not_written_back(backend):
    kernel, _ = kernel_of(backend, add_artifact(), out_idx=(2,))
    a, b = randn(64), randn(64)
    a.flags.writeable = False
    np.testing.assert_allclose(kernel(a, b, 1.0), a + b, rtol=1e-6)


def test_host_regions_span_strided_views():
    base = np.arange(40, dtype=np.float32).reshape(4, 10)
    view = base[:, ::3]  # 4 x 4, strides (10, 3)
    region = host_region(as_array_arg(view, "v"), "v")
    assert region.address == base.ctypes.data and region.nbytes == (3 * 10 + 3 * 3 + 1) * 4
    np.testing.assert_array_equal(region.view().view(np.float32), base.ravel()[:40])
    with pytest.raises(ArgumentError, match="negative strides"):
        host_region(as_array_arg(base[:, ::-1], "r"), "r")


def test_device_arrays_are_refused(backend):
    kernel, _ = kernel_of(backend, add_artifact())

    class GpuArray:
        __cuda_array_interface__ = {"data": (0x1000, False), "shape": (8,), "typestr": "<f4", "version": 3}

    gpu = ArrayArg(GpuArray(), 0x1000, (8,), (1,), as_array_arg(randn(1), "x").dtype, 2, 0, "interface")
    with pytest.raises(ArgumentError, match=r"parameter 'A' is on DLPack device 2:0.*pass a numpy array"):
        backend.check_device(gpu, "A")
    with pytest.raises(ArgumentError, match="expects an array"):
        kernel([1.0] * 8, randn(8), randn(8), 1.0)


def test_a_stream_is_refused(backend):
    kernel, _ = kernel_of(backend, add_artifact(), out_idx=(2,))
    with pytest.raises(ArgumentError, match="stream= is not supported by the opencl execution backend"):
        kernel(randn(8), randn(8), 1.0, stream=object())


def test_concurrent_calls_from_threads(backend):
    kernel, _ = kernel_of(backend, add_artifact(), out_idx=(2,))
    failures = []

    def work(n: int) -> None:
        for _ in range(20):
            a, b = randn(n), randn(n)
            if not np.allclose(kernel(a, b, 1.5), a + 1.5 * b, rtol=1e-6):
                failures.append(n)

    threads = [threading.Thread(target=work, args=(n,)) for n in (100, 1000, 5000, 333)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_torch_cpu_tensors(backend):
    torch = pytest.importorskip("torch")
    kernel, _ = kernel_of(backend, add_artifact(), out_idx=(2,))
    a, b = torch.rand(300) + 1, torch.rand(300) + 1
    c = kernel(a, b, 2.0)
    assert isinstance(c, torch.Tensor) and c.device.type == "cpu"
    torch.testing.assert_close(c, a + 2.0 * b)


def test_user_compile_flags_reach_the_compiler(backend):
    source = ADD_SOURCE.replace("alpha * B[i]", "SCALE * alpha * B[i]")
    artifact = add_artifact(source=source, compile_flags=("-DSCALE=3.0f",))
    kernel, loaded = kernel_of(backend, artifact, out_idx=(2,))
    assert loaded.built.entry.meta["options"] == ["-cl-std=CL1.2", *rolled(), "-DSCALE=3.0f"]
    a, b = randn(100), randn(100)
    np.testing.assert_allclose(kernel(a, b, 2.0), a + 6.0 * b, rtol=1e-6)


def test_a_build_failure_shows_the_log_the_options_and_the_kept_source(backend, cache):
    source = ADD_SOURCE.replace("alpha * B[i]", "alpha * undefined_name_here")
    with pytest.raises(ToolchainError) as info:
        backend.build(add_artifact(source=source, compile_flags=("-DUNUSED=1",)), FakeContext())
    message = str(info.value)
    assert message.startswith("the OpenCL C build failed on OpenCL device ")
    assert f"  options: {' '.join(['-cl-std=CL1.2', *rolled()])} -DUNUSED=1\n" in message
    assert "undefined_name_here" in message.split("build log:", 1)[1]
    kept = Path(message.split("source kept at: ", 1)[1].splitlines()[0])
    assert kept.is_file() and kept.read_text() == source
    assert kept.is_relative_to(cache.root / "failed")


def test_a_corrupted_cached_binary_is_rebuilt(backend, monkeypatch):
    compiles = count_compiles(monkeypatch)
    built = backend.build(add_artifact(), FakeContext())
    path = built.path(BINARY_FILE)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    rebuilt = backend.build(add_artifact(), FakeContext())  # the checksum no longer matches: a miss
    assert compiles == ["add", "add"] and rebuilt.read(BINARY_FILE) != bytes(data)
    kernel = Kernel(backend.load(rebuilt), FakeContext(backend), (2,))
    a, b = randn(50), randn(50)
    np.testing.assert_allclose(kernel(a, b, 1.0), a + b, rtol=1e-6)


def test_a_binary_the_platform_rejects_falls_back_to_the_source(backend, cache):
    good = backend.build(add_artifact(), FakeContext())
    files = {BINARY_FILE: b"not a program binary", SOURCE_FILE: good.read(SOURCE_FILE)}
    entry = cache.put("ab" * 32, files, dict(good.entry.meta))
    loaded = backend.load(Built(OPENCL.name, entry.key, good.artifact, entry))
    assert not loaded.handle.from_binary and "INVALID_BINARY" in loaded.handle.binary_error
    kernel = Kernel(loaded, FakeContext(backend), (2,))
    a, b = randn(50), randn(50)
    np.testing.assert_allclose(kernel(a, b, 0.25), a + 0.25 * b, rtol=1e-6)


def test_export_and_import_load_the_binary(backend, tmp_path):
    built = backend.build(add_artifact(), FakeContext())
    imported = backend.import_built(backend.export(built, tmp_path / "export"))
    assert imported.key == built.key and imported.read(BINARY_FILE) == built.read(BINARY_FILE)
    assert backend.load(imported).handle.from_binary


SECOND_PROCESS = """
import sys
import numpy as np
from tests.opencl.helpers import FakeContext, add_artifact
from tilecraft.execution.cache import KernelCache
from tilecraft.execution.opencl.backend import OpenCLExecutionBackend
from tilecraft.execution.opencl.spec import OPENCL
from tilecraft.jit.kernel import Kernel

def no_compile(self, artifact, ctx):
    raise AssertionError("compiled again")

OpenCLExecutionBackend.compile = no_compile
backend = OpenCLExecutionBackend(OPENCL, KernelCache(sys.argv[1], enabled=True))
built = backend.build(add_artifact(), FakeContext())
loaded = backend.load(built)
assert loaded.handle.from_binary, loaded.handle.binary_error
kernel = Kernel(loaded, FakeContext(backend), (2,))
a, b = np.arange(300, dtype=np.float32), np.ones(300, np.float32)
np.testing.assert_array_equal(kernel(a, b, 2.0), a + 2.0)
print(built.key)
"""


def test_a_second_process_loads_the_cached_binary_without_rebuilding(backend, cache):
    built = backend.build(add_artifact(), FakeContext())
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(SECOND_PROCESS), str(cache.root)],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == built.key


def test_the_cache_key_holds_the_device_identity(backend, opencl_device):
    options = backend.build_options(add_artifact(), FakeContext())
    assert options["device"] == opencl_device.identity()
    assert (
        opencl_device.platform_name in options["device"] and opencl_device.driver_version in options["device"]
    )
    assert backend.toolchain_version().startswith("pyopencl ")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"symbol": "missing_kernel"}, "the OpenCL program defines no __kernel 'missing_kernel'; it defines: add_kernel"),
        ({"dynamic_smem": 64}, "__kernel add_kernel takes 5 arguments, but its KernelInfo describes 6: 5 parameters "
                               "plus the __local uint4\\* tc_smem argument"),
        ({"block": (8192,)}, r"kernel add_kernel: work-group \(8192,\) \(8192 work-items\) exceeds"),
    ],
)  # fmt: skip
def test_load_checks_the_kernels_against_the_program_and_device(backend, change, message):
    artifact = add_artifact(**({"block": change["block"][0]} if "block" in change else {}),
                            **({"dynamic_smem": change["dynamic_smem"]} if "dynamic_smem" in change else {}))  # fmt: skip
    if "symbol" in change:
        object.__setattr__(artifact.kernels[0], "symbol", change["symbol"])
    built = backend.build(artifact, FakeContext())
    with pytest.raises(TilecraftError, match=message):
        backend.load(built)


def test_more_local_memory_than_the_device_has(backend, opencl_device):
    with pytest.raises(TilecraftError, match=f"has {opencl_device.local_mem} bytes per work-group"):
        backend.load(backend.build(reverse_artifact(dynamic_smem=opencl_device.local_mem + 4), FakeContext()))
