"""The execution-backend protocol (tilecraft/backend/execution.py): everything the front end calls on an
execution backend is declared there, nothing is probed for, and its defaults and `device_types` hold."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from tilecraft.backend.execution import ExecutionBackend
from tilecraft.errors import ArgumentError, BackendError
from tilecraft.ir import dtype as dt
from tilecraft.jit.kernel import Kernel
from tilecraft.runtime.arrays import ArrayArg, as_array_arg
from tilecraft.runtime.launch import Built, Loaded

PACKAGE = Path(__file__).resolve().parents[2] / "tilecraft"
FRONT_END = ("jit", "profiler", "autotuner")
# Where the front end keeps an execution backend object: a local `backend`, an attribute `_backend`
# (`ctx.backend` is the target backend's manifest, not one).
BACKEND_VARIABLES = {"backend"}
BACKEND_ATTRIBUTES = {"_backend"}


def _is_backend(node: ast.expr) -> bool:
    """`ctx.execution_backend()`, or a variable or attribute the front end keeps it in."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "execution_backend"
    if isinstance(node, ast.Attribute):
        return node.attr in BACKEND_ATTRIBUTES
    return isinstance(node, ast.Name) and node.id in BACKEND_VARIABLES


def _front_end_modules() -> list[Path]:
    return sorted(p for part in FRONT_END for p in (PACKAGE / part).rglob("*.py"))


def members_used_by_the_front_end() -> dict[str, list[str]]:
    """member name -> where the front end reads it on an execution backend."""
    used: dict[str, list[str]] = {}
    for path in _front_end_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and _is_backend(node.value):
                used.setdefault(node.attr, []).append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return used


def test_the_front_end_uses_only_members_the_protocol_declares():
    used = members_used_by_the_front_end()
    assert {"build", "load", "check_device", "empty", "array_readers", "fast_path", "timer"} <= set(used)
    undeclared = {name: where for name, where in used.items() if not hasattr(ExecutionBackend, name)}
    assert not undeclared, f"declare these on tilecraft.backend.execution.ExecutionBackend: {undeclared}"


def test_the_front_end_probes_nothing_with_getattr_or_hasattr():
    probes = []
    for path in _front_end_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr") and node.args):  # fmt: skip
                subject = node.args[0]
                if _is_backend(subject) or (isinstance(subject, ast.Name) and subject.id in ("self", "loaded")
                                             and path.name == "kernel.py"):  # fmt: skip
                    probes.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {ast.unparse(node)}")
    assert not probes, probes


class Minimal(ExecutionBackend):
    """Only what the protocol requires; every other member is its default."""

    def build(self, artifact, ctx):
        return Built(self.spec.name, "k", artifact, None)

    def load(self, built):
        return Loaded(built, None)

    def launcher(self, loaded):
        calls = []

        def launch(args, dims, stream=None):
            calls.append((list(args), list(dims)))

        launch.calls = calls
        return launch


def _arg(device_type: int) -> ArrayArg:
    return ArrayArg(None, 0, (4,), (1,), dt.float32, device_type, 0, "numpy")


def test_a_backend_needs_build_load_and_launcher_only(echo):
    with pytest.raises(TypeError, match="abstract"):
        type("NoLauncher", (ExecutionBackend,), {"build": Minimal.build, "load": Minimal.load})(echo.spec())
    backend = Minimal(echo.spec())
    assert backend.array_readers == () and backend.toolchain_version() == ""
    assert backend.fast_path(None) is None and backend.synchronize(None) is None
    assert backend.timer(None, 1024).description == "wall clock"
    host = np.arange(3.0)
    assert backend.to_device(host) is host and backend.to_host(host) is not None
    out = backend.empty(as_array_arg(host, "x"), (2, 3), dt.float16)
    assert isinstance(out, np.ndarray) and out.shape == (2, 3) and out.dtype == np.float16
    with pytest.raises(BackendError, match="execution backend 'echo' cannot export built kernels"):
        backend.export(None, "somewhere")


def test_device_types_are_what_check_device_accepts(echo):
    host_only = Minimal(echo.spec())
    assert host_only.spec.device_types == (1,)
    host_only.check_device(_arg(1), "x")
    with pytest.raises(ArgumentError, match=r"parameter 'x' is on DLPack device 2:0, but execution backend "
                                            r"'echo' reads arrays of DLPack device type 1 only"):  # fmt: skip
        host_only.check_device(_arg(2), "x")
    device = Minimal(echo.spec("gpuish", device_types=(2, 13)))
    device.check_device(_arg(13), "x")
    with pytest.raises(ArgumentError, match="device type 2, 13 only"):
        device.check_device(_arg(1), "x")


@pytest.mark.parametrize("bad", [("cpu",), (), 2, (True,), (0,)])
def test_device_types_must_be_dlpack_codes(echo, bad):
    with pytest.raises(
        BackendError, match="device_types must be a non-empty tuple of DLPack device type codes"
    ):
        echo.spec(device_types=bad)


class _Context:
    def __init__(self, backend):
        self.backend_object = backend

    def execution_backend(self):
        return self.backend_object


def test_a_kernel_is_made_from_what_was_loaded(echo, artifact):
    backend = Minimal(echo.spec())
    loaded = backend.load(backend.build(artifact, None))
    kernel = Kernel(loaded, _Context(backend))
    assert kernel.loaded is loaded and kernel.built is loaded.built and kernel.artifact is artifact
    kernel()
    assert kernel._launch.calls == [([], [])]
    kernel.synchronize()  # the protocol's no-op, reached without probing for a `loaded`
