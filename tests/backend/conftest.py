"""Test-only target kinds, manifests and execution backends, registered inside `isolated_registry()`.

Nothing here names a real backend: the kinds are `toyk`/`toyg`, the formats `toy-*`.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:  # until pyproject sets pytest's `pythonpath`, tests import the checkout
    sys.path.insert(0, str(_ROOT))

from tilecraft.backend import (  # noqa: E402
    API_VERSION,
    BackendModule,
    DeviceCode,
    DeviceCodegen,
    HostCode,
    HostCodegen,
    PassPipeline,
    TargetKind,
    module_pass,
    register_backend,
    register_target_kind,
)
from tilecraft.backend.registry import isolated_registry  # noqa: E402
from tilecraft.backend.split import mark_role  # noqa: E402
from tilecraft.execution import Availability, CachedExecutionBackend, ExecutionBackendSpec  # noqa: E402
from tilecraft.runtime import Loaded  # noqa: E402

TOY_MODULE = "tilecraft_tests_toy_execution"


class ToyExecution(CachedExecutionBackend):
    """Builds by copying the artifact's toy source; launching returns the source bytes."""

    def compile(self, artifact, ctx):
        return {"kernel.bin": artifact.source("toy-source").encode()}, {"symbol": artifact.function_name}

    def load(self, built):
        return Loaded(built, built.read("kernel.bin"))

    def launcher(self, loaded):
        return lambda *args: (loaded.handle, args)


# Execution specs name their implementation "module:Class"; a synthetic module makes it importable.
_module = types.ModuleType(TOY_MODULE)
_module.ToyExecution = ToyExecution
sys.modules[TOY_MODULE] = _module


@module_pass("tag-module")
def tag_module(mod, ctx):
    """The module carries attr `toy.lowered` = the target kind."""
    return mod.with_attr("toy.lowered", ctx.target.kind)


@module_pass("split-roles")
def split_roles(mod, ctx):
    """Every function has a role: names ending in `_kernel` are device functions, the rest host."""
    funcs = (mark_role(f, "device" if f.name.endswith("_kernel") else "host") for f in mod.functions)
    return mod.with_functions(funcs)


def _toy_source(mod, ctx):
    names = ",".join(f.name for f in mod.functions)
    return DeviceCode(
        sources={"toy-source": f"// {ctx.target}\n{names}"}, entry_symbols=tuple(names.split(","))
    )


def _toy_compile(code, ctx):
    return code.with_binaries({"toy-binary": code.sources["toy-source"].encode()})


def _toy_host(mod, ctx):
    return HostCode("host:" + ",".join(f.name for f in mod.functions), "toy-host")


class Toy:
    """Factories for test-only registry objects."""

    module = TOY_MODULE

    @staticmethod
    def kind(name="toyk", **kw) -> TargetKind:
        return register_target_kind(TargetKind(name, **kw))

    @staticmethod
    def spec(name="toy-exec", ok=True, reason="", fix="", **kw) -> ExecutionBackendSpec:
        kw.setdefault("consumes", ("toy-source",))
        kw.setdefault("implementation", f"{TOY_MODULE}:ToyExecution")
        return ExecutionBackendSpec(name=name, availability=lambda: Availability(ok, reason, fix), **kw)

    @staticmethod
    def pipeline(kind="toyk", passes=(tag_module, split_roles)) -> PassPipeline:
        return PassPipeline(kind, passes)

    @staticmethod
    def device_codegen(compile=True) -> DeviceCodegen:
        if compile:
            return DeviceCodegen(_toy_source, _toy_compile, ("toy-source",), ("toy-binary",))
        return DeviceCodegen(_toy_source, None, ("toy-source",))

    @staticmethod
    def host_codegen() -> HostCodegen:
        return HostCodegen("toy-host", _toy_host)

    @classmethod
    def manifest(cls, name="toy", kinds=("toyk",), specs=None, **kw) -> BackendModule:
        kw.setdefault("pipelines", {k: cls.pipeline(k) for k in kinds})
        kw.setdefault("device_codegens", {k: cls.device_codegen() for k in kinds})
        kw.setdefault("host_codegens", {"toy-host": cls.host_codegen()})
        kw.setdefault("dialect", "tests.toy.language")
        kw.setdefault("api_version", API_VERSION)
        specs = (cls.spec(),) if specs is None else specs
        return BackendModule(name=name, target_kinds=kinds, execution_backends=specs, **kw)

    @classmethod
    def register(cls, *args, **kw) -> BackendModule:
        return register_backend(cls.manifest(*args, **kw))


@pytest.fixture
def toy():
    """A `Toy` factory, with the backend, target-kind and execution registries isolated for the test."""
    with isolated_registry():
        yield Toy


@pytest.fixture
def tiny_module():
    """A module with a host function `main` and a device function `main_kernel`."""
    from tilecraft.ir import IRModule, PrimFunc, Var
    from tilecraft.ir import dtype as dt
    from tilecraft.ir.expr import const
    from tilecraft.ir.stmt import Evaluate

    n = Var(dt.int32, "n")
    body = Evaluate(const(0, dt.int32))
    return IRModule((PrimFunc("main", (n,), body), PrimFunc("main_kernel", (n,), body)))
