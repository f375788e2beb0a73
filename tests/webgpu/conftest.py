"""Fixtures for the WebGPU target kind and the `wgpu` execution backend.

Tests that dispatch kernels need wgpu (Python >= 3.11) and a WebGPU adapter (Mesa's lavapipe gives one on
the CPU: `apt-get install mesa-vulkan-drivers libvulkan1`); they skip with the reason when there is none,
or fail where CI requires the `wgpu` execution backend (tests/required.py). The rest run anywhere.
"""

from __future__ import annotations

import os

import pytest

from tests.required import skip_unless_required
from tilecraft.backend import register_target_kind
from tilecraft.webgpu.target import WEBGPU_TARGET_KIND

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # Mesa's Vulkan WSI warns on every device without it

# Every capability given, so nothing asks an adapter: lavapipe's, with and without the optional features.
FULL = ("webgpu -f16=true -f64=true -int64=true -float32_atomics=true -subgroups=true -subgroup_size=8 "
        "-max_workgroup_size=1024 -workgroup_memory=32768 -max_workgroups=65535 -max_storage_buffers=32 "
        "-max_binding_size=134217728 -max_loop_iterations=65535")  # fmt: skip
BARE = ("webgpu -f16=false -f64=false -int64=false -float32_atomics=false -subgroups=false "
        "-max_workgroup_size=256 -workgroup_memory=16384 -max_workgroups=65535 -max_storage_buffers=8 "
        "-max_binding_size=134217728 -max_loop_iterations=65535")  # fmt: skip


@pytest.fixture(autouse=True)
def webgpu_kind():
    """Registered when tilecraft.webgpu is imported; re-registered in case a test isolated the registry."""
    register_target_kind(WEBGPU_TARGET_KIND)


@pytest.fixture(scope="session")
def adapter_runtime():
    """The device of the adapter wgpu prefers (made once per process), or a skip with the reason."""
    from tilecraft.execution.wgpu import device

    status = device.device_status(None)
    if isinstance(status, Exception):
        skip_unless_required("wgpu", f"no WebGPU device here: {status}")
    return status
