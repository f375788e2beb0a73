"""Build without a GPU: NVRTC and nvcc compile CUDA source to cubins, failures show the log and the
kept source, and the execution backends keep `kernel.cubin` + `kernel.cu` in the cache."""

from __future__ import annotations

import pytest

from tests.cuda.helpers import ADD_SOURCE, FakeContext, add_artifact
from tilecraft.errors import ToolchainError
from tilecraft.execution.cuda_driver import toolkit
from tilecraft.execution.nvcc import toolchain
from tilecraft.execution.nvcc.backend import NvccExecutionBackend
from tilecraft.execution.nvcc.spec import NVCC
from tilecraft.execution.nvrtc import compiler
from tilecraft.execution.nvrtc.backend import NvrtcExecutionBackend
from tilecraft.execution.nvrtc.spec import NVRTC

ELF = b"\x7fELF"
BROKEN = ADD_SOURCE + "\nint broken = ;\n"
HALF_SOURCE = """
#include <cuda_fp16.h>
extern "C" __global__ void to_half(const float* x, half* y) { y[threadIdx.x] = __float2half(x[threadIdx.x]); }
"""


def _nvrtc_or_skip() -> str:
    try:
        compiler.nvrtc_module()
        return compiler.nvrtc_version()
    except compiler.NvrtcUnavailable as err:
        pytest.skip(f"NVRTC is not available: {err.reason}")


def _nvcc_or_skip() -> str:
    path = toolkit.find_nvcc()
    if path is None:
        pytest.skip(f"nvcc not found (looked in {toolkit.describe_search()})")
    return path


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_nvrtc_compiles_to_a_cubin(arch):
    _nvrtc_or_skip()
    cubin = compiler.nvrtc_compile(ADD_SOURCE, arch)
    assert cubin.startswith(ELF) and b"add_kernel" in cubin


def test_nvrtc_finds_the_cuda_headers():
    _nvrtc_or_skip()
    if not compiler.cuda_include_dirs():
        pytest.skip("no CUDA headers on this machine")
    assert compiler.nvrtc_compile(HALF_SOURCE, "sm_80").startswith(ELF)


def test_nvrtc_options_and_user_flags():
    options = compiler.nvrtc_options("sm_90a", ["--use_fast_math"], include_dirs=["/opt/cuda/include"])
    assert options == ("--gpu-architecture=sm_90a", "-std=c++17", "-default-device", "--generate-line-info",
                       "--include-path=/opt/cuda/include", "--use_fast_math")  # fmt: skip


def test_nvrtc_failure_shows_the_log_and_keeps_the_source(tmp_path):
    _nvrtc_or_skip()
    with pytest.raises(ToolchainError) as info:
        compiler.nvrtc_compile(BROKEN, "sm_80", keep_dir=tmp_path / "kept")
    message = str(info.value)
    assert "NVRTC" in message and "failed to compile the kernel for sm_80" in message
    assert "expected an expression" in message and "int broken = ;" in message  # the full log
    assert f"generated source: {tmp_path / 'kept' / 'kernel.cu'}" in message
    assert (tmp_path / "kept" / "kernel.cu").read_text() == BROKEN


def test_nvrtc_refuses_a_virtual_arch():
    with pytest.raises(ToolchainError, match="only for a real arch such as sm_90a, not 'compute_90a'"):
        compiler.nvrtc_compile(ADD_SOURCE, "compute_90a")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_nvcc_compiles_to_a_cubin(arch):
    _nvcc_or_skip()
    cubin = toolchain.compile_cubin(ADD_SOURCE, arch)
    assert cubin.startswith(ELF) and b"add_kernel" in cubin


def test_nvcc_failure_shows_the_command_the_source_and_the_errors(tmp_path):
    nvcc = _nvcc_or_skip()
    with pytest.raises(ToolchainError) as info:
        toolchain.compile_cubin(BROKEN, "sm_90a", ["--use_fast_math"], keep_dir=tmp_path)
    message = str(info.value)
    kept = tmp_path / "kernel.cu"
    assert f"command: {nvcc} -cubin -arch=sm_90a -O3 -std=c++17 -lineinfo --use_fast_math -o" in message
    assert f"generated source: {kept}" in message and kept.read_text() == BROKEN
    assert "expected an expression" in message


def test_nvcc_version():
    _nvcc_or_skip()
    version = toolchain.nvcc_version()
    assert version[0].isdigit() and version.count(".") >= 1


def test_nvrtc_build_is_cached_with_cubin_and_source(cache, monkeypatch, no_driver):
    _nvrtc_or_skip()
    backend = NvrtcExecutionBackend(NVRTC, cache)
    calls = []
    real = compiler.nvrtc_compile
    monkeypatch.setattr(compiler, "nvrtc_compile", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    artifact = add_artifact("sm_90a", compile_flags=("--use_fast_math",))
    built = backend.build(artifact, FakeContext())
    assert set(built.entry.files) == {"kernel.cubin", "kernel.cu"}
    assert built.read("kernel.cubin").startswith(ELF) and built.read("kernel.cu").decode() == ADD_SOURCE
    assert built.entry.meta["arch"] == "sm_90a" and "--use_fast_math" in built.entry.meta["options"]
    assert built.entry.meta["kernels"] == ["add_kernel"]
    again = backend.build(add_artifact("sm_90a", compile_flags=("--use_fast_math",)), FakeContext())
    assert calls == ["sm_90a"] and again.key == built.key  # the second build is a cache hit
    assert backend.build(add_artifact("sm_80"), FakeContext()).key != built.key  # arch and flags key it


def test_nvrtc_build_failure_keeps_the_source_under_the_cache(cache, no_driver):
    _nvrtc_or_skip()
    with pytest.raises(ToolchainError) as info:
        NvrtcExecutionBackend(NVRTC, cache).build(add_artifact(source=BROKEN), FakeContext())
    assert str(cache.root / "failed") in str(info.value)


def test_build_needs_an_arch(cache, no_driver):
    from tilecraft.backend import Target
    from tilecraft.runtime import CompiledArtifact

    _nvrtc_or_skip()  # without cuda-python the build stops earlier, at NVRTC's version for the cache key

    artifact = add_artifact()
    no_arch = CompiledArtifact(artifact.function_name, Target("cuda", {"device": 0}), artifact.params,
                               artifact.symbolic_dims, artifact.kernels, artifact.device_sources)  # fmt: skip
    with pytest.raises(Exception, match="has no arch such as sm_90a"):
        NvrtcExecutionBackend(NVRTC, cache).build(no_arch, FakeContext())


def test_nvcc_backend_keeps_the_artifacts_cubin(cache, monkeypatch, no_driver):
    monkeypatch.setattr(toolchain, "compile_cubin", lambda *a, **k: pytest.fail("must not compile"))
    cubin = ELF + b"pretend cubin"
    built = NvccExecutionBackend(NVCC, cache).build(add_artifact(binaries={"cubin": cubin}), FakeContext())
    assert built.read("kernel.cubin") == cubin and built.read("kernel.cu").decode() == ADD_SOURCE
    other = NvccExecutionBackend(NVCC, cache).build(
        add_artifact(binaries={"cubin": cubin + b"!"}), FakeContext()
    )
    assert other.key != built.key  # keyed on the cubin's content


def test_nvcc_backend_compiles_when_codegen_did_not(cache, no_driver):
    _nvcc_or_skip()
    built = NvccExecutionBackend(NVCC, cache).build(add_artifact("sm_80"), FakeContext())
    assert built.read("kernel.cubin").startswith(ELF) and built.entry.meta["compiled_by"] == "nvcc"


def test_launch_metadata_is_checked_at_build(cache, no_driver):
    """Parameters the function does not have fail before any compiler or GPU runs."""
    from dataclasses import replace

    from tilecraft.errors import TilecraftError
    from tilecraft.ir import dtype as dt
    from tilecraft.runtime import ParamInfo

    backend = NvccExecutionBackend(NVCC, cache)
    artifact = add_artifact(binaries={"cubin": ELF})
    stray = replace(
        artifact.kernels[0], params=(*artifact.kernels[0].params, ParamInfo("Z", "scalar", dt.int32))
    )
    with pytest.raises(
        TilecraftError, match="parameter 'Z' is neither a parameter nor a symbolic dim of add"
    ):
        backend.build(replace(artifact, kernels=(stray,)), FakeContext())
