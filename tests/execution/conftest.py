"""A test-only execution backend and a tiny artifact; registries are isolated per test."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:  # until pyproject sets pytest's `pythonpath`, tests import the checkout
    sys.path.insert(0, str(_ROOT))

from tilecraft import settings  # noqa: E402
from tilecraft.backend import Target, TargetKind  # noqa: E402
from tilecraft.backend.registry import isolated_registry  # noqa: E402
from tilecraft.backend.target_kind import register_target_kind  # noqa: E402
from tilecraft.execution import Availability, CachedExecutionBackend, ExecutionBackendSpec  # noqa: E402
from tilecraft.runtime import CompiledArtifact, Loaded  # noqa: E402

MODULE = "tilecraft_tests_echo_execution"


class EchoExecution(CachedExecutionBackend):
    """'Compiles' by copying the toy source; counts compilations so tests can see cache hits."""

    compiles = 0

    def toolchain_version(self):
        return "echo 1.0"

    def compile(self, artifact, ctx):
        type(self).compiles += 1
        return {"kernel.txt": artifact.source("toy-source").encode()}, {"symbol": artifact.function_name}

    def load(self, built):
        return Loaded(built, built.read("kernel.txt").decode())

    def launcher(self, loaded):
        return lambda *args: f"{loaded.handle}{args}"


_module = types.ModuleType(MODULE)
_module.EchoExecution = EchoExecution
sys.modules[MODULE] = _module


def echo_spec(name="echo", ok=True, **kw):
    kw.setdefault("consumes", ("toy-source",))
    return ExecutionBackendSpec(
        name, lambda: Availability(ok, "" if ok else "off", ""), f"{MODULE}:EchoExecution", **kw
    )


@pytest.fixture
def isolated(tmp_path):
    """Isolated registries and a private cache directory."""
    with (
        isolated_registry(),
        settings.override(TILECRAFT_CACHE_DIR=tmp_path / "cache", TILECRAFT_DISABLE_CACHE=False),
    ):
        register_target_kind(TargetKind("toyk"))
        EchoExecution.compiles = 0
        yield tmp_path


@pytest.fixture
def artifact():
    return CompiledArtifact("scale", Target("toyk"), (), (), (), {"toy-source": "kernel text"}, ir_hash="abc")


@pytest.fixture
def echo():
    """The test execution backend: `echo.spec(...)`, `echo.cls` and `echo.module`."""
    return types.SimpleNamespace(spec=echo_spec, cls=EchoExecution, module=MODULE)


class FakeContext:
    """The parts of a BackendContext that `build` reads."""

    target_host = None


@pytest.fixture
def ctx():
    return FakeContext()
