"""The `metal` execution backend against the fake Metal API (fake_metal.py): availability, what it asks
of the device (library options, pipelines, argument binding, threadgroup memory, dispatch sizes) and
its errors. The fake here records and runs nothing; test_conformance_emulated.py runs the kernels."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.metal.conftest import forget
from tilecraft.backend.errors import ExecutionBackendUnavailable
from tilecraft.errors import ArgumentError, ToolchainError
from tilecraft.execution.metal import device as metal_device
from tilecraft.execution.metal.spec import METAL
from tilecraft.testing.conformance import kernels as K


def scaled(n: int = 1000):
    @T.prim_func
    def scale(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), alpha: T.float32):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    B[bx * 128 + i] = A[bx * 128 + i] * alpha

    return scale


@pytest.mark.skipif(__import__("sys").platform == "darwin", reason="a Mac has Metal")
def test_unavailable_off_macos_with_the_reason_and_fix():
    forget()
    found = METAL.availability()
    assert not found.ok and "Metal exists only on macOS" in found.reason and "tilecraft.lower" in found.fix
    with pytest.raises(ExecutionBackendUnavailable) as info:
        tilecraft.compile(scaled(), target="metal -family=apple7", execution_backend="metal")
    assert "Metal exists only on macOS" in str(info.value)


def test_missing_pyobjc_is_named(monkeypatch):
    monkeypatch.setattr(metal_device, "is_macos", lambda: True)
    monkeypatch.setitem(__import__("sys").modules, "Metal", None)  # import Metal raises ImportError
    forget()
    try:
        found = METAL.availability()
    finally:
        forget()
    assert not found.ok and "pyobjc-framework-Metal" in found.fix


def test_available_on_the_fake_device(fake_metal):
    found = METAL.availability()
    assert found.ok and "apple7" in found.reason


def test_a_launch_binds_arguments_by_index_and_dispatches_threadgroups(fake_metal):
    kernel = tilecraft.compile(scaled(), target="metal", execution_backend="metal")
    a, b = np.random.default_rng(0).random(1000, dtype=np.float32), np.full(1000, np.nan, np.float32)
    kernel(a, b, 2.5)
    device = fake_metal.device
    (source, fast_math), *_ = device.compiled
    assert "kernel void scale_kernel0" in source and fast_math is False  # Metal's default is fast math on
    (command,) = device.committed
    (dispatch,) = command.dispatches
    assert dispatch.groups == (8, 1, 1) and dispatch.threads == (128, 1, 1)
    assert sorted(dispatch.buffers) == [0, 1] and dispatch.bytes == {2: struct.pack("<f", 2.5)}
    assert dispatch.buffers[0].data == bytearray(a.tobytes()) and dispatch.threadgroup_memory == {}
    assert command.encoders_ended == 1


def test_fast_math_is_asked_for_through_the_pass_config(fake_metal):
    kernel = tilecraft.compile(scaled(), target="metal", execution_backend="metal",
                               pass_configs={"tl.enable_fast_math": True})  # fmt: skip
    kernel(np.ones(1000, np.float32), np.zeros(1000, np.float32), 1.0)
    assert fake_metal.device.compiled[-1][1] is True


def test_threadgroup_memory_is_set_in_multiples_of_16(fake_metal):
    kernel = tilecraft.compile(K.transpose(256, 128, 32), target="metal", execution_backend="metal")
    kernel(np.ones((256, 128), np.float32), np.zeros((128, 256), np.float32))
    (dispatch,) = fake_metal.device.committed[0].dispatches
    (length,) = dispatch.threadgroup_memory.values()
    assert length >= 32 * 32 * 4 and length % 16 == 0


def test_a_library_the_compiler_rejects_is_a_toolchain_error_with_its_log(fake_metal, monkeypatch):
    device = fake_metal.device
    monkeypatch.setattr(device, "newLibraryWithSource_options_error_",
                        lambda src, opts, err: (None, type("E", (), {"localizedDescription": lambda self: "bad MSL"})()))  # fmt: skip
    with pytest.raises(ToolchainError) as info:
        tilecraft.compile(scaled(), target="metal", execution_backend="metal")(
            np.ones(1000, np.float32), np.zeros(1000, np.float32), 1.0
        )
    assert "the Metal compiler rejected the library" in str(info.value) and "bad MSL" in str(info.value)
    assert "source kept at:" in str(info.value)


def test_code_for_a_newer_family_than_the_device_is_refused(fake_metal):
    with pytest.raises(ToolchainError) as info:
        tilecraft.compile(scaled(), target="metal -family=apple9", execution_backend="metal")(
            np.ones(1000, np.float32), np.zeros(1000, np.float32), 1.0
        )
    assert "generated for apple9, but the Metal device is apple7" in str(info.value)


def test_streams_are_refused(fake_metal):
    kernel = tilecraft.compile(scaled(), target="metal", execution_backend="metal")
    with pytest.raises(ArgumentError) as info:
        kernel(np.ones(1000, np.float32), np.zeros(1000, np.float32), 1.0, stream=1)
    assert "stream= is not supported by the metal execution backend" in str(info.value)


def test_a_failed_command_buffer_is_an_error(fake_metal, monkeypatch):
    kernel = tilecraft.compile(scaled(), target="metal", execution_backend="metal")
    monkeypatch.setattr(fake_metal.device, "run", lambda dispatch: "GPU hang")
    with pytest.raises(tilecraft.errors.TilecraftError) as info:
        kernel(np.ones(1000, np.float32), np.zeros(1000, np.float32), 1.0)
    assert "command buffer of scale failed" in str(info.value) and "GPU hang" in str(info.value)
