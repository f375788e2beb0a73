"""Fixtures for the HIP target: the clang that compiles HIP device code (tests that compile skip with
the reason without it), its LLVM tools, and a fake HIP runtime library (fake_libamdhip64.c, compiled
with the system C compiler) loaded through tilecraft's real ctypes binding."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from tests.hip.helpers import llvm_tool
from tilecraft.backend import register_target_kind
from tilecraft.execution.hip import runtime as hip_runtime
from tilecraft.hip.target import HIP_TARGET_KIND

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def hip_kind():
    """Re-register the kind in case a test isolated the registry (registering it again is harmless)."""
    register_target_kind(HIP_TARGET_KIND)


@pytest.fixture(scope="session")
def clang() -> str:
    from tilecraft.hip.toolchain import find_clang

    path = find_clang()
    if path is None:
        pytest.skip(
            "no clang for HIP device code (apt-get install clang-19 lld-19 llvm-19, or set TILECRAFT_HIP_CLANG)"
        )
    return path


@pytest.fixture(scope="session")
def objdump(clang) -> str:
    return llvm_tool(clang, "objdump") or pytest.skip(
        "llvm-objdump is not installed (apt-get install llvm-19)"
    )


@pytest.fixture(scope="session")
def readelf(clang) -> str:
    return llvm_tool(clang, "readelf") or pytest.skip(
        "llvm-readelf is not installed (apt-get install llvm-19)"
    )


@pytest.fixture(autouse=True)
def fresh_runtime():
    """Every test starts and ends without a loaded HIP runtime (tests swap the library underneath)."""
    hip_runtime.reset_runtime()
    yield
    hip_runtime.reset_runtime()


@pytest.fixture(scope="session")
def fake_library_path(tmp_path_factory) -> Path:
    from tilecraft.errors import ToolchainError
    from tilecraft.execution.cc import toolchain

    try:
        library = toolchain.compile_shared((HERE / "fake_libamdhip64.c").read_text(), [], False,
                                           tmp_path_factory.mktemp("fake-failed"))  # fmt: skip
    except ToolchainError as err:
        pytest.skip(f"cannot build the fake HIP runtime library: {err}")
    path = tmp_path_factory.mktemp("fake-hip") / "libamdhip64_fake.so"
    path.write_bytes(library)
    return path


class FakeLibrary:
    """The fake runtime's steering and recording globals, read and written through ctypes."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib

    def get(self, name: str) -> int:
        return ctypes.c_long.in_dll(self.lib, name).value

    def set(self, name: str, value: int) -> None:
        ctypes.c_long.in_dll(self.lib, name).value = value

    def params(self, count: int) -> list[bytes]:
        """The 8-byte slots the last launch's kernelParams pointed at."""
        buf = (ctypes.c_char * (8 * 64)).in_dll(self.lib, "fake_last_params")
        return [bytes(buf[8 * i : 8 * i + 8]) for i in range(count)]


@pytest.fixture
def fake_runtime(fake_library_path, monkeypatch) -> FakeLibrary:
    """The HIP runtime binding over the fake library, reset before each test."""
    lib = ctypes.CDLL(str(fake_library_path))
    lib.fake_reset()
    monkeypatch.setattr(hip_runtime, "_load_library", lambda: lib)
    return FakeLibrary(lib)


@pytest.fixture
def no_runtime(monkeypatch):
    """A machine without libamdhip64."""

    def missing():
        raise OSError("libamdhip64.so: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(hip_runtime, "_load_library", missing)


@pytest.fixture
def cache(tmp_path):
    from tilecraft.execution.cache import KernelCache

    return KernelCache(tmp_path / "cache", enabled=True)


@pytest.fixture(scope="session")
def emulator_build_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hip-emulator")


@pytest.fixture(scope="session")
def emulator_compiler() -> str:
    """The clang that builds kernels for the host against the emulator (it needs clang's vector types)."""
    from tilecraft.hip.toolchain import find_clang

    path = find_clang()
    if path is None:
        pytest.skip(
            "no clang to build the HIP emulator with (apt-get install clang-19, or set TILECRAFT_HIP_CLANG)"
        )
    return path


def emulated_context(monkeypatch, arch: str, library: Path, compiler: str, build_dir: Path):
    """The `hip -arch=<arch>` context whose execution backend runs kernels in the CPU emulator, and the
    Emulation (what it loaded and launched)."""
    from tests.hip.emulator import Emulation, install
    from tilecraft.backend import create_backend_context
    from tilecraft.execution.hip.spec import HIP

    lib = ctypes.CDLL(str(library))
    lib.fake_reset()
    monkeypatch.setattr(hip_runtime, "_load_library", lambda: lib)
    hip_runtime.reset_runtime()
    HIP.reset_availability()
    ctx = create_backend_context(f"hip -arch={arch}", execution_backend="hip")
    emulation = Emulation(lib, compiler, build_dir)
    install(monkeypatch, ctx.execution_backend(), emulation)
    return ctx, emulation
