"""BackendContext: resolution once, execution-backend selection and its three errors, and the stages."""

import pytest

from tilecraft.backend import BackendContext, HostCodegenHook, Target, create_backend_context
from tilecraft.backend.errors import (
    ExecutionBackendNotDeclared,
    ExecutionBackendUnavailable,
    NoExecutionBackendAvailable,
)
from tilecraft.backend.split import split_host_device
from tilecraft.errors import BackendError
from tilecraft.execution import Availability, ExecutionBackendSpec


@pytest.fixture
def backend(toy):
    toy.kind("toyk", detect=lambda: Target("toyk", {"found": True}), detect_priority=90)
    specs = (
        toy.spec("first", ok=False, reason="driver too old", fix="update the driver"),
        toy.spec("second"),
        toy.spec("third"),
        toy.spec("hosted", needs_host_codegen=True, consumes=("toy-source", "toy-host")),
        toy.spec("picky", target_predicate=lambda t: t.attr("picky") is True),
    )
    return toy.register(specs=specs, callbacks={"version": lambda: "9.1"})


def test_context_is_frozen_and_resolved(backend):
    ctx = create_backend_context("toyk -arch=x", target_host="toyk")
    assert isinstance(ctx, BackendContext)
    assert ctx.target == Target("toyk", {"arch": "x"})
    assert ctx.target_host == Target("toyk")
    assert ctx.backend is backend
    with pytest.raises(AttributeError):
        ctx.target = None


def test_auto_target_uses_detection(backend):
    assert create_backend_context("auto").target == Target("toyk", {"found": True})


def test_auto_picks_first_available_in_declared_order(backend):
    assert create_backend_context("toyk").execution.name == "second"


def test_auto_skips_backends_whose_target_predicate_rejects(toy):
    toy.kind("toyk")
    toy.register(
        specs=(toy.spec("picky", target_predicate=lambda t: t.attr("picky") is True), toy.spec("any"))
    )
    assert create_backend_context("toyk").execution.name == "any"
    assert create_backend_context("toyk -picky").execution.name == "picky"


def test_explicit_selection(backend):
    assert create_backend_context("toyk", execution_backend="third").execution.name == "third"


def test_error_not_declared(backend):
    with pytest.raises(ExecutionBackendNotDeclared) as info:
        create_backend_context("toyk", execution_backend="foo")
    assert str(info.value) == (
        "execution backend 'foo' is not declared for target toyk; declared: first, second, third, hosted; "
        "use 'auto' to pick the first available"
    )


def test_error_declared_but_excluded_by_target_predicate(backend):
    with pytest.raises(ExecutionBackendNotDeclared, match="'picky' is not declared for target toyk;"):
        create_backend_context("toyk", execution_backend="picky")


def test_error_declared_but_unavailable(backend):
    with pytest.raises(ExecutionBackendUnavailable) as info:
        create_backend_context("toyk", execution_backend="first")
    assert str(info.value) == (
        "execution backend 'first' is declared for target toyk but unavailable: driver too old; "
        "fix: update the driver"
    )


def test_error_nothing_available(toy):
    toy.kind("toyk")

    def crash():
        raise RuntimeError("probe exploded")

    broken = ExecutionBackendSpec("broken", crash, f"{toy.module}:ToyExecution", ("toy-source",))
    specs = (toy.spec("a", ok=False, reason="no runtime", fix="install it"), broken)
    toy.register(specs=specs)
    with pytest.raises(NoExecutionBackendAvailable) as info:
        create_backend_context("toyk")
    text = str(info.value)
    assert text.startswith(
        "no execution backend is available for target toyk (backend 'toy'); tried in order:"
    )
    assert "a: unavailable: no runtime (fix: install it)" in text
    assert "broken: unavailable: availability probe raised RuntimeError: probe exploded" in text


def test_the_three_errors_are_distinct_backend_errors():
    classes = {ExecutionBackendNotDeclared, ExecutionBackendUnavailable, NoExecutionBackendAvailable}
    assert len(classes) == 3 and all(issubclass(c, BackendError) for c in classes)


def test_availability_is_probed_lazily_and_cached(toy):
    toy.kind("toyk")
    calls = []

    def probe():
        calls.append(1)
        return Availability(True)

    spec = ExecutionBackendSpec("counted", probe, f"{toy.module}:ToyExecution", ("toy-source",))
    toy.register(specs=(spec,))
    assert calls == []
    create_backend_context("toyk")
    create_backend_context("toyk")
    assert calls == [1]
    spec.reset_availability()
    create_backend_context("toyk")
    assert calls == [1, 1]


def test_lower_runs_the_kinds_pipeline_and_split_uses_roles(backend, tiny_module):
    ctx = create_backend_context("toyk")
    lowered = ctx.lower(tiny_module, pass_configs={"opt": 1})
    assert lowered.attr("toy.lowered") == "toyk"
    host, device = ctx.split(lowered)
    assert [f.name for f in host.functions] == ["main"]
    assert [f.name for f in device.functions] == ["main_kernel"]
    assert host.attr("toy.lowered") == device.attr("toy.lowered") == "toyk"


def test_split_requires_a_role_on_every_function(backend, tiny_module):
    with pytest.raises(
        BackendError, match=r"function\(s\) main \(None\), main_kernel \(None\).*allowed: host"
    ):
        split_host_device(tiny_module)


def test_pass_configs_reach_passes(toy, tiny_module):
    from tilecraft.backend import module_pass

    seen = {}

    @module_pass("read-config")
    def read_config(mod, ctx):
        seen["opt"] = ctx.config("opt", "default")
        seen["missing"] = ctx.config("missing", "default")
        seen["backend"] = ctx.backend_context.backend.name
        return mod

    toy.kind("toyk")
    toy.register(pipelines={"toyk": toy.pipeline("toyk", (read_config,))})
    create_backend_context("toyk").lower(tiny_module, pass_configs={"opt": 3})
    assert seen == {"opt": 3, "missing": "default", "backend": "toy"}


def test_codegen_device_source_only_and_compiled(backend, tiny_module):
    ctx = create_backend_context("toyk")
    _, device = ctx.split(ctx.lower(tiny_module))
    source_only = ctx.codegen_device(device, compile=False)
    assert source_only.sources["toy-source"].endswith("main_kernel")
    assert dict(source_only.binaries) == {}
    compiled = ctx.codegen_device(device, compile=True)
    assert compiled.binaries["toy-binary"] == compiled.sources["toy-source"].encode()


def test_codegen_device_default_follows_eager_compile(toy, tiny_module):
    toy.kind("toyk")
    toy.register(specs=(toy.spec("eager", eager_device_compile=True),))
    ctx = create_backend_context("toyk")
    assert "toy-binary" in ctx.codegen_device(ctx.split(ctx.lower(tiny_module))[1]).binaries


def test_compile_without_a_compile_step_is_a_clear_error(toy, tiny_module):
    toy.kind("toyk")
    toy.register(device_codegens={"toyk": toy.device_codegen(compile=False)})
    ctx = create_backend_context("toyk")
    with pytest.raises(BackendError, match="has no compile step .*toy-source; binary formats: none"):
        ctx.codegen_device(tiny_module, compile=True)


def test_host_codegen_only_when_needed(backend, tiny_module):
    plain = create_backend_context("toyk")
    assert plain.codegen_host(tiny_module) is None
    hosted = create_backend_context("toyk", execution_backend="hosted")
    host, _ = hosted.split(hosted.lower(tiny_module))
    code = hosted.codegen_host(hosted.preprocess_host(host))
    assert (code.format, code.source) == ("toy-host", "host:main")


def test_preprocess_host_applies_hooks_in_order(toy, tiny_module):
    order = []

    def hook(name):
        return HostCodegenHook(name, lambda mod, ctx: order.append(name) or mod.with_attr("last", name))

    toy.kind("toyk")
    toy.register(host_codegen_hooks=(hook("first-hook"), hook("second-hook")))
    out = create_backend_context("toyk").preprocess_host(tiny_module)
    assert order == ["first-hook", "second-hook"]
    assert out.attr("last") == "second-hook"


def test_execution_backend_object_is_created_once(backend):
    ctx = create_backend_context("toyk")
    impl = ctx.execution_backend()
    assert impl is ctx.execution_backend()
    assert impl is create_backend_context("toyk").execution_backend()
    assert impl.spec.name == "second"


def test_callbacks(backend):
    ctx = create_backend_context("toyk")
    assert ctx.callback("version")() == "9.1"
    with pytest.raises(BackendError, match="has no callback 'nope'; declared: version"):
        ctx.callback("nope")
