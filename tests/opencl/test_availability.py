"""Availability of the `opencl` execution backend: each missing piece has its own reason and fix; the
spec is cheap to import and declares what the contract says."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from tilecraft.execution.opencl import device as cl_device
from tilecraft.execution.opencl.spec import OPENCL

ROOT = Path(__file__).resolve().parents[2]


class FakeError(Exception):
    """pyopencl.Error as a fake module raises it."""


class FakePlatform:
    def __init__(self, name: str, devices: list | None) -> None:
        self.name = name
        self.devices = devices

    def get_devices(self):
        if self.devices is None:
            raise FakeError("clGetDeviceIDs failed: DEVICE_NOT_FOUND")
        return self.devices


def fake_pyopencl(platforms) -> types.ModuleType:
    """A stand-in for pyopencl: `platforms` is a list of FakePlatform, or an exception to raise."""
    module = types.ModuleType("pyopencl")
    module.Error = FakeError
    module.VERSION_TEXT = "2099.1"

    def get_platforms():
        if isinstance(platforms, Exception):
            raise platforms
        return platforms

    module.get_platforms = get_platforms
    return module


@pytest.fixture
def with_platforms(monkeypatch):
    def install(platforms) -> None:
        monkeypatch.setattr(cl_device, "import_pyopencl", lambda: fake_pyopencl(platforms))

    return install


def test_the_spec_declares_the_contract():
    assert OPENCL.name == "opencl" and OPENCL.consumes == ("opencl-source",)
    assert OPENCL.needs_host_codegen is False and OPENCL.eager_device_compile is False
    assert OPENCL.device_types == ("cpu",)  # host memory, as the cc backend declares it
    assert OPENCL.implementation == "tilecraft.execution.opencl.backend:OpenCLExecutionBackend"


def test_without_pyopencl(no_pyopencl):
    status = OPENCL.check()
    assert not status.ok and status.reason == "pyopencl is not installed"
    assert "pip install pyopencl" in status.fix and "pip install pocl-binary-distribution" in status.fix


def test_without_a_platform(with_platforms):
    with_platforms(FakeError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR"))
    status = OPENCL.check()
    assert not status.ok
    assert status.reason == "no OpenCL platform found (clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR)"
    assert "install an OpenCL driver (ICD)" in status.fix and "pocl-binary-distribution" in status.fix


def test_with_an_empty_platform_list(with_platforms):
    with_platforms([])
    assert OPENCL.check().reason == "no OpenCL platform found (the ICD loader lists none)"


def test_without_a_device(with_platforms):
    with_platforms([FakePlatform("Empty Platform", None), FakePlatform("Other", [])])
    status = OPENCL.check()
    assert not status.ok and status.reason == "no device on the OpenCL platform(s) 'Empty Platform', 'Other'"
    assert "install a driver for the device" in status.fix


def test_a_device_on_any_platform_is_enough(with_platforms):
    with_platforms([FakePlatform("Empty", None), FakePlatform("Full", ["dev"])])
    status = OPENCL.check()
    assert (
        status.ok and status.reason == "pyopencl 2099.1; platforms 'Empty': 0 device(s), 'Full': 1 device(s)"
    )


def test_a_device_index_that_does_not_exist_lists_the_devices(with_platforms):
    device = types.SimpleNamespace(name="Fake Device ")
    with_platforms([FakePlatform("Full", [device])])
    status = cl_device.device_status(0, 3)
    assert isinstance(status, cl_device.OpenCLUnavailable)
    assert status.reason == "OpenCL platform 0 ('Full') has no device 3; devices: 0: 'Fake Device'"
    assert "-device=N" in status.fix
    with pytest.raises(cl_device.OpenCLUnavailable, match=r"platform 2 does not exist; platforms: 0: 'Full'"):
        cl_device.find_device(2, 0)


def test_the_real_probe(opencl_device):
    status = OPENCL.check()
    assert status.ok and status.reason.startswith("pyopencl ")


def test_importing_the_spec_and_probing_nothing_imports_pyopencl():
    code = (
        "import sys\n"
        "from tilecraft.execution.opencl.spec import OPENCL\n"
        "import tilecraft.execution.opencl.device\n"
        "assert 'pyopencl' not in sys.modules, 'pyopencl was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
