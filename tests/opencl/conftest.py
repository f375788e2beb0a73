"""Fixtures for the OpenCL target kind and the `opencl` execution backend.

Tests that launch kernels need pyopencl and an OpenCL platform with a device (PoCL gives one on the CPU:
`pip install pyopencl pocl-binary-distribution`); they skip with the reason when there is none. The
rest run anywhere, pyopencl's absence simulated by monkeypatching.
"""

from __future__ import annotations

import sys

import pytest

from tests.required import skip_unless_required
from tilecraft import settings
from tilecraft.backend import register_target_kind
from tilecraft.execution.cache import KernelCache
from tilecraft.execution.opencl import device as cl_device
from tilecraft.execution.opencl.spec import OPENCL
from tilecraft.opencl.target import OPENCL_TARGET_KIND


@pytest.fixture(autouse=True)
def opencl_kind():
    """Registered when tilecraft.opencl is imported; re-registered in case a test isolated the registry
    in between (registering the same kind again is harmless)."""
    register_target_kind(OPENCL_TARGET_KIND)


@pytest.fixture(autouse=True)
def fresh_devices():
    """Every test looks devices up afresh (tests swap pyopencl or its platforms underneath)."""
    cl_device.reset()
    OPENCL.reset_availability()
    yield
    cl_device.reset()
    OPENCL.reset_availability()


@pytest.fixture
def no_configured_target():
    with settings.override(TILECRAFT_TARGET=None):
        yield


@pytest.fixture
def opencl_device() -> cl_device.DeviceInfo:
    """Device 0 of platform 0, or a skip saying why there is none."""
    status = OPENCL.check()
    if not status.ok:
        skip_unless_required("opencl", f"no OpenCL device: {status.reason} (fix: {status.fix})")
    found = cl_device.device_status(0, 0)
    if isinstance(found, Exception):
        skip_unless_required("opencl", f"no OpenCL device 0 on platform 0: {found.reason}")
    return found


@pytest.fixture
def cache(tmp_path) -> KernelCache:
    return KernelCache(tmp_path / "cache", enabled=True)


@pytest.fixture
def backend(opencl_device, cache):
    from tilecraft.execution.opencl.backend import OpenCLExecutionBackend

    return OpenCLExecutionBackend(OPENCL, cache)


@pytest.fixture
def no_pyopencl(monkeypatch):
    """A machine without pyopencl: importing it fails (even if an earlier test imported it)."""
    monkeypatch.setitem(sys.modules, "pyopencl", None)
