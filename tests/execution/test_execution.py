"""Execution-backend specs, their registry, and Build -> Load -> Launch through the shared cache."""

import pytest

from tilecraft import settings
from tilecraft.errors import BackendError
from tilecraft.execution import (
    Availability,
    ExecutionBackendSpec,
    get_spec,
    implementation,
    register_execution_backend,
    registered_execution_backends,
    reset_availability,
    unregister_execution_backend,
)


def test_spec_validation(echo):
    with pytest.raises(BackendError, match="name 'Bad Name' must match"):
        echo.spec("Bad Name")
    with pytest.raises(BackendError, match="must be 'module.path:ClassName'"):
        ExecutionBackendSpec("x", lambda: Availability(True), "no_colon", ("toy-source",))
    with pytest.raises(BackendError, match="must consume at least one artifact format"):
        echo.spec(consumes=())
    with pytest.raises(BackendError, match="format name 'Toy Source'"):
        echo.spec(consumes=("Toy Source",))


def test_availability_describe():
    assert Availability(True).describe() == "available"
    assert (
        Availability(False, "no driver", "install it").describe()
        == "unavailable: no driver (fix: install it)"
    )
    assert Availability(False).describe() == "unavailable: no reason given"


def test_probe_results_are_cached_until_reset(echo, isolated):
    calls = []
    probe = lambda: calls.append(1) or Availability(True)  # noqa: E731
    spec = register_execution_backend(
        ExecutionBackendSpec("counted", probe, f"{echo.module}:EchoExecution", ("toy-source",))
    )
    assert spec.check().ok and spec.check().ok
    assert calls == [1]
    reset_availability()
    spec.check()
    assert calls == [1, 1]


def test_a_probe_returning_garbage_is_unavailable(echo):
    spec = ExecutionBackendSpec("odd", lambda: "yes", f"{echo.module}:EchoExecution", ("toy-source",))
    assert not spec.check().ok
    assert "returned 'yes'" in spec.check().reason


def test_registry_is_idempotent_and_rejects_conflicts(echo, isolated):
    spec = echo.spec()
    assert register_execution_backend(spec) is spec
    assert register_execution_backend(spec) is spec
    with pytest.raises(BackendError, match="'echo' is already registered with a different spec"):
        register_execution_backend(echo.spec())
    assert registered_execution_backends() == (spec,)
    unregister_execution_backend("echo")
    with pytest.raises(
        BackendError, match=r"no execution backend 'echo' is registered; registered: \(none\)"
    ):
        get_spec("echo")


def test_implementation_is_a_lazy_singleton(echo, isolated):
    spec = register_execution_backend(echo.spec())
    impl = implementation(spec)
    assert isinstance(impl, echo.cls)
    assert implementation(spec) is impl
    assert impl.available().ok


def test_implementation_import_errors_are_clear(echo, isolated):
    missing = register_execution_backend(
        ExecutionBackendSpec(
            "missing", lambda: Availability(True), "tilecraft_tests_nowhere:Impl", ("toy-source",)
        )
    )
    with pytest.raises(BackendError, match="cannot import implementation 'tilecraft_tests_nowhere:Impl'"):
        implementation(missing)
    wrong = register_execution_backend(
        ExecutionBackendSpec(
            "wrong", lambda: Availability(True), f"{echo.module}:MODULE_NAME", ("toy-source",)
        )
    )
    with pytest.raises(BackendError, match="cannot import implementation"):
        implementation(wrong)
    unregistered = echo.spec("elsewhere")
    with pytest.raises(BackendError, match="no execution backend 'elsewhere' is registered"):
        implementation(unregistered)


def test_build_goes_through_the_cache(echo, isolated, artifact, ctx):
    impl = implementation(register_execution_backend(echo.spec()))
    first = impl.build(artifact, ctx)
    second = impl.build(artifact, ctx)
    assert echo.cls.compiles == 1
    assert first.key == second.key
    assert second.read("kernel.txt") == b"kernel text"
    assert second.entry.meta["symbol"] == "scale"


def test_cache_key_includes_toolchain_and_backend(echo, isolated, artifact, ctx):
    impl = implementation(register_execution_backend(echo.spec()))
    other = implementation(register_execution_backend(echo.spec("echo-two")))
    assert impl.cache_key(artifact, ctx) != other.cache_key(artifact, ctx)


def test_disabled_cache_compiles_every_time(echo, isolated, artifact, ctx):
    impl = implementation(register_execution_backend(echo.spec()))
    with settings.override(TILECRAFT_DISABLE_CACHE=True):
        impl.build(artifact, ctx)
        built = impl.build(artifact, ctx)
    assert echo.cls.compiles == 2
    assert built.read("kernel.txt") == b"kernel text"


def test_load_and_launch(echo, isolated, artifact, ctx):
    impl = implementation(register_execution_backend(echo.spec()))
    launch = impl.launcher(impl.load(impl.build(artifact, ctx)))
    assert launch(1, 2) == "kernel text(1, 2)"


def test_export_and_import_without_compiling(echo, isolated, artifact, ctx):
    impl = implementation(register_execution_backend(echo.spec()))
    built = impl.build(artifact, ctx)
    path = impl.export(built, isolated / "exported")
    echo.cls.compiles = 0
    again = impl.import_built(path)
    assert echo.cls.compiles == 0
    assert again.key == built.key
    assert again.artifact.source("toy-source") == "kernel text"
    assert again.artifact.target == artifact.target
    assert impl.launcher(impl.load(again))() == "kernel text()"
    impl.export(built, path)  # exporting over an earlier export replaces it


def test_import_checks_the_producer_and_integrity(echo, isolated, artifact, ctx):
    impl = implementation(register_execution_backend(echo.spec()))
    other = implementation(register_execution_backend(echo.spec("echo-two")))
    path = impl.export(impl.build(artifact, ctx), isolated / "exported")
    with pytest.raises(BackendError, match="was built by execution backend 'echo', not 'echo-two'"):
        other.import_built(path)
    (path / "kernel.txt").write_bytes(b"tampered")
    with pytest.raises(BackendError, match="is not a valid tilecraft export"):
        impl.import_built(path)


def test_export_refuses_to_overwrite_other_directories(echo, isolated, artifact, ctx):
    impl = implementation(register_execution_backend(echo.spec()))
    (isolated / "mine").mkdir()
    with pytest.raises(BackendError, match="exists and is not a tilecraft export"):
        impl.export(impl.build(artifact, ctx), isolated / "mine")
