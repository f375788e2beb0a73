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


class FakeDevice:
    """A pyopencl Device as far as discovery reads it; `build_error` makes the probe build fail."""

    def __init__(self, name: str = "Fake Device ", build_error: str | None = None) -> None:
        self.name, self.vendor, self.driver_version, self.extensions = name, "Fake", "1.0", ""
        self.local_mem_size, self.max_work_group_size = 65536, 1024
        self.max_work_item_sizes = (1024, 1024, 64)
        self.type = 2  # CL_DEVICE_TYPE_CPU
        self.build_error = build_error


class FakePlatform:
    def __init__(self, name: str, devices: list | None) -> None:
        self.name = name
        self.version = "OpenCL 3.0 Fake"
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

    class Context:
        def __init__(self, devices) -> None:
            self.devices = devices

    class Program:
        def __init__(self, context, source: str) -> None:
            self.context = context

        def build(self, options, cache_dir=None):
            error = self.context.devices[0].build_error
            if error:
                raise FakeError(f"clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\n{error}\nDevice failed")
            return self

    module.get_platforms = get_platforms
    module.Context, module.Program = Context, Program
    return module


@pytest.fixture
def with_platforms(monkeypatch):
    def install(platforms) -> None:
        monkeypatch.setattr(cl_device, "import_pyopencl", lambda: fake_pyopencl(platforms))

    return install


def test_the_spec_declares_the_contract():
    assert OPENCL.name == "opencl" and OPENCL.consumes == ("opencl-source",)
    assert OPENCL.needs_host_codegen is False and OPENCL.eager_device_compile is False
    assert OPENCL.device_types == (1,)  # DLPack kDLCPU: host memory, as the cc backend declares it
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
    with_platforms([FakePlatform("Empty", None), FakePlatform("Full", [FakeDevice()])])
    status = OPENCL.check()
    assert (
        status.ok and status.reason == "pyopencl 2099.1; platforms 'Empty': 0 device(s), 'Full': 1 device(s)"
    )


def test_a_device_index_that_does_not_exist_lists_the_devices(with_platforms):
    with_platforms([FakePlatform("Full", [FakeDevice()])])
    status = cl_device.device_status(0, 3)
    assert isinstance(status, cl_device.OpenCLUnavailable)
    assert status.reason == "OpenCL platform 0 ('Full') has no device 3; devices: 0: 'Fake Device'"
    assert "-device=N" in status.fix
    with pytest.raises(cl_device.OpenCLUnavailable, match=r"platform 2 does not exist; platforms: 0: 'Full'"):
        cl_device.find_device(2, 0)


def test_a_device_that_cannot_build_programs_is_unavailable_with_the_drivers_reason(with_platforms):
    """PoCL 3.0 from pip on a CPU its LLVM 14 does not know: every build fails; say so at discovery."""
    with_platforms([FakePlatform("PoCL", [FakeDevice("pthread", "error: unknown target CPU 'generic'")])])
    status = OPENCL.check()
    assert not status.ok
    assert status.reason == (
        "OpenCL device 'pthread' on platform 'PoCL' (platform 0, device 0) cannot build OpenCL C programs: "
        "error: unknown target CPU 'generic'"
    )
    assert "apt-get install pocl-opencl-icd" in status.fix and "-platform=N" in status.fix
    with pytest.raises(cl_device.OpenCLUnavailable, match="cannot build OpenCL C programs"):
        cl_device.find_device(0, 0)


def test_one_usable_device_is_enough_and_the_broken_one_is_named(with_platforms):
    broken = FakeDevice("old", "error: unknown target CPU 'generic'")
    with_platforms([FakePlatform("PoCL pip", [broken]), FakePlatform("PoCL distro", [FakeDevice("new")])])
    status = OPENCL.check()
    assert status.ok and "unusable: OpenCL device 'old' on platform 'PoCL pip'" in status.reason
    assert isinstance(cl_device.find_device(1, 0), cl_device.DeviceInfo)


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
