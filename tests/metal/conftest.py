"""Fixtures for the Metal backend: the fake Metal API (fake_metal.py) installed in place of PyObjC's,
with the platform check saying macOS, for as long as a test needs it."""

from __future__ import annotations

import sys

import pytest

from tests.metal.fake_metal import fake_metal_module
from tests.metal.msl import find_compiler
from tilecraft.execution.metal import device as metal_device
from tilecraft.execution.metal.spec import METAL


def install_fake(monkeypatch, build_dir, family: int = 7, compiler: str | None = None):
    module = fake_metal_module(family, compiler, build_dir)
    monkeypatch.setitem(sys.modules, "Metal", module)
    monkeypatch.setattr(metal_device, "is_macos", lambda: True)
    forget()
    return module


def forget() -> None:
    """Forget the device and the availability probe's answer (the next call asks again)."""
    metal_device.reset()
    METAL.reset_availability()


@pytest.fixture
def fake_metal(monkeypatch, tmp_path):
    """A fake apple7 device that records calls and runs nothing."""
    yield install_fake(monkeypatch, tmp_path)
    forget()


@pytest.fixture(scope="session")
def emulator_build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("metal-emulator")


@pytest.fixture(scope="session")
def emulator_compiler():
    found = find_compiler()
    if found is None:
        pytest.skip(
            "no C++ compiler (clang++ or g++) to build the Metal emulator with; set TILECRAFT_MSL_CXX"
        )
    return found
