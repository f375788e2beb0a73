"""Fixtures for the CUDA target kind and execution backends.

Hardware-free tests run against a fake driver library (fake_libcuda.c, compiled here with the system C
compiler) loaded through tilecraft's real ctypes binding, or against no driver at all. GPU tests
(marked `gpu`) use the real driver and skip, with the reason, when there is no CUDA device.
"""

from __future__ import annotations

import ctypes
import shutil
from pathlib import Path

import pytest

from tilecraft.backend import register_target_kind
from tilecraft.cuda.target import CUDA_TARGET_KIND
from tilecraft.execution.cache import KernelCache
from tilecraft.execution.cuda_driver import driver as cuda_driver

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def cuda_kind():
    """The kind is registered when tilecraft.cuda is imported; re-register in case a test isolated the
    registry in between (registering the same kind again is harmless)."""
    register_target_kind(CUDA_TARGET_KIND)


@pytest.fixture(scope="module")
def nvcc():
    """The nvcc executable; tests that compile generated CUDA skip with the reason without it."""
    from tilecraft.execution.cuda_driver.toolkit import find_nvcc

    path = find_nvcc() or shutil.which("nvcc")
    if path is None:
        pytest.skip("nvcc is not installed (set TILECRAFT_NVCC or CUDA_HOME to run this test)")
    return path


@pytest.fixture(autouse=True)
def fresh_driver():
    """Every test starts and ends without a loaded driver (tests swap the library underneath)."""
    cuda_driver.reset_driver()
    yield
    cuda_driver.reset_driver()


@pytest.fixture
def no_driver(monkeypatch):
    """A machine without the NVIDIA driver library."""

    def missing():
        raise OSError("libcuda.so.1: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(cuda_driver, "_load_library", missing)


@pytest.fixture(scope="session")
def fake_library_path(tmp_path_factory) -> Path:
    from tilecraft.errors import ToolchainError
    from tilecraft.execution.cc import toolchain

    try:
        library = toolchain.compile_shared((HERE / "fake_libcuda.c").read_text(), [], False,
                                           tmp_path_factory.mktemp("fake-failed"))  # fmt: skip
    except ToolchainError as err:
        pytest.skip(f"cannot build the fake driver library: {err}")
    path = tmp_path_factory.mktemp("fake-libcuda") / "libcuda_fake.so"
    path.write_bytes(library)
    return path


class FakeLibrary:
    """The fake driver's steering and recording globals, read and written through ctypes."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib

    def int(self, name: str) -> ctypes.c_int:
        return ctypes.c_int.in_dll(self.lib, name)

    def set(self, name: str, value: int) -> None:
        self.int(name).value = value

    def get(self, name: str) -> int:
        return self.int(name).value

    def fail_next_launches(self, *codes: int) -> None:
        results = (ctypes.c_int * 4).in_dll(self.lib, "fake_launch_results")
        for i, code in enumerate(codes):
            results[i] = code
        self.set("fake_launch_count", 0)

    def dims(self) -> tuple[int, ...]:
        return tuple((ctypes.c_uint * 7).in_dll(self.lib, "fake_dims"))

    def stream(self) -> int:
        return ctypes.c_size_t.in_dll(self.lib, "fake_stream").value

    def current(self) -> int:
        return ctypes.c_size_t.in_dll(self.lib, "fake_current").value

    def params(self, count: int) -> list[bytes]:
        self_params = (ctypes.c_ubyte * (64 * 8)).in_dll(self.lib, "fake_params")
        raw = bytes(self_params)
        return [raw[8 * i : 8 * i + 8] for i in range(count)]

    def reset(self) -> None:
        for name in ("fake_init_result", "fake_launch_count", "fake_param_count", "fake_unloads",
                     "fake_max_dynamic_smem", "fake_static_smem", "fake_depth", "fake_current_at_launch"):  # fmt: skip
            self.set(name, 0)
        self.set("fake_device_count", 1)
        ctypes.c_size_t.in_dll(self.lib, "fake_current").value = 0
        self.fail_next_launches(0, 0, 0, 0)


@pytest.fixture
def fake_driver(monkeypatch, fake_library_path) -> FakeLibrary:
    """tilecraft's real ctypes driver binding over the fake library: one pretend sm_90 device."""
    lib = ctypes.CDLL(str(fake_library_path))
    fake = FakeLibrary(lib)
    fake.reset()
    monkeypatch.setattr(cuda_driver, "_load_library", lambda: lib)
    # cuda-python would reach the real driver (or none), never this fake: launch through ctypes.
    monkeypatch.setattr(cuda_driver, "_bindings_launch_entry", lambda: None)
    return fake


@pytest.fixture
def cache(tmp_path) -> KernelCache:
    return KernelCache(tmp_path / "cache", enabled=True)
