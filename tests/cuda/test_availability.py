"""The specs of the `nvrtc` and `nvcc` execution backends, and each missing piece's reason and fix."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tilecraft import settings
from tilecraft.execution.cuda_driver import toolkit
from tilecraft.execution.nvcc.spec import NVCC
from tilecraft.execution.nvrtc import compiler
from tilecraft.execution.nvrtc.spec import NVRTC


def test_spec_declarations():
    assert (NVRTC.name, NVRTC.consumes, NVRTC.eager_device_compile, NVRTC.needs_host_codegen) == (
        "nvrtc", ("cuda-source",), False, False)  # fmt: skip
    assert (NVCC.name, NVCC.consumes, NVCC.eager_device_compile, NVCC.needs_host_codegen) == (
        "nvcc", ("cuda-source", "cubin"), True, False)  # fmt: skip
    assert NVRTC.device_types == NVCC.device_types == (2, 13)  # DLPack kDLCUDA, kDLCUDAManaged


def _missing(error):
    def fail():
        raise error

    return fail


def test_nvrtc_without_cuda_python(monkeypatch, fake_driver):
    monkeypatch.setattr(
        compiler, "nvrtc_module", _missing(compiler.NvrtcUnavailable("no bindings", "pip it"))
    )
    status = NVRTC.availability()
    assert not status.ok and status.reason == "no bindings" and status.fix == "pip it"


def test_missing_cuda_python_is_named_with_its_install_command(monkeypatch):
    for name in ("cuda", "cuda.bindings", "cuda.bindings.nvrtc", "cuda.nvrtc"):
        monkeypatch.setitem(sys.modules, name, None)  # makes `import` fail as if it were not installed
    with pytest.raises(compiler.NvrtcUnavailable) as info:
        compiler.nvrtc_module()
    assert "cuda-python is not installed" in info.value.reason and "pip install cuda-python" in info.value.fix


def test_nvrtc_without_the_nvrtc_library(monkeypatch, fake_driver):
    monkeypatch.setattr(compiler, "nvrtc_module", lambda: object())
    monkeypatch.setattr(compiler, "nvrtc_version", _missing(
        compiler.NvrtcUnavailable("the NVRTC library cannot be loaded: libnvrtc.so.13", compiler.INSTALL_NVRTC)))  # fmt: skip
    status = NVRTC.availability()
    assert not status.ok and "NVRTC library cannot be loaded" in status.reason
    assert "nvidia-cuda-nvrtc" in status.fix


def _with_nvrtc(monkeypatch):
    monkeypatch.setattr(compiler, "nvrtc_module", lambda: object())
    monkeypatch.setattr(compiler, "nvrtc_version", lambda: "13.5")


def test_without_a_driver(monkeypatch, no_driver):
    _with_nvrtc(monkeypatch)
    for spec in (NVRTC, NVCC):
        status = spec.availability()
        if spec is NVCC and toolkit.find_nvcc() is None:
            continue
        assert not status.ok and "NVIDIA driver library" in status.reason
        assert "install the NVIDIA driver" in status.fix


def test_without_a_device(monkeypatch, fake_driver):
    _with_nvrtc(monkeypatch)
    fake_driver.set("fake_init_result", 100)
    status = NVRTC.availability()
    assert not status.ok and "found no CUDA device" in status.reason and "nvidia-smi" in status.fix


def test_with_a_driver_reporting_zero_devices(monkeypatch, fake_driver):
    _with_nvrtc(monkeypatch)
    fake_driver.set("fake_device_count", 0)
    status = NVRTC.availability()
    assert not status.ok and status.reason == "the NVIDIA driver reports no CUDA device"


def test_available_with_driver_and_device(monkeypatch, fake_driver):
    _with_nvrtc(monkeypatch)
    status = NVRTC.availability()
    assert status.ok and status.reason == "NVRTC 13.5; 1 CUDA device(s), driver CUDA 13.0"


def test_nvcc_not_found(monkeypatch, fake_driver):
    monkeypatch.setattr(toolkit, "find_nvcc", lambda: None)
    status = NVCC.availability()
    assert not status.ok and status.reason.startswith(
        "nvcc not found (looked in TILECRAFT_NVCC, $CUDA_HOME/bin"
    )
    assert "install the CUDA toolkit" in status.fix and "TILECRAFT_NVCC" in status.fix


def test_nvcc_setting_that_is_not_an_executable(tmp_path, fake_driver):
    with settings.override(TILECRAFT_NVCC=tmp_path / "no-nvcc"):
        status = NVCC.availability()
    assert (
        not status.ok and f"TILECRAFT_NVCC={tmp_path / 'no-nvcc'} is not an executable nvcc" in status.reason
    )


def test_nvcc_available_with_driver_and_device(tmp_path, fake_driver):
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    with settings.override(TILECRAFT_NVCC=nvcc.parent):  # a directory holding nvcc is accepted too
        status = NVCC.availability()
    assert status.ok and status.reason.startswith(f"nvcc {nvcc}; 1 CUDA device(s)")


def test_no_test_module_puts_benchmarks_on_the_path():
    """benchmarks/cuda.py would shadow cuda-python's `cuda` package, and NVRTC would then look absent to
    every later test of the run (on a GPU machine they skipped): test modules import `benchmarks.X`."""
    benchmarks = (Path(__file__).resolve().parents[2] / "benchmarks").as_posix()
    assert benchmarks not in [Path(p).resolve().as_posix() for p in sys.path if p]
