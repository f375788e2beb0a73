"""Every `BackendModule` rule, one test each; the messages list what was allowed."""

import re

import pytest

from tilecraft.backend import (
    API_VERSION,
    BackendModule,
    DeviceCodegen,
    HostCodegenHook,
    PassPipeline,
    register_backend,
)
from tilecraft.backend.api import MIN_API_VERSION
from tilecraft.backend.errors import ManifestError, PluginAPIError
from tilecraft.backend.registry import registered_backends, unregister_backend
from tilecraft.errors import BackendError


@pytest.fixture
def kinds(toy):
    toy.kind("toyk")
    toy.kind("toyg")
    return toy


def test_a_valid_manifest_is_frozen_and_read_only(kinds):
    m = kinds.manifest(callbacks={"toolchain_version": lambda: "1.0"})
    with pytest.raises(AttributeError):
        m.name = "other"
    with pytest.raises(TypeError):
        m.pipelines["toyk"] = None
    assert m.callbacks["toolchain_version"]() == "1.0"
    assert m.produced_formats == ("toy-source", "toy-binary", "toy-host")


def test_missing_pipeline(kinds):
    with pytest.raises(
        ManifestError, match=r"no pipeline for kind\(s\) toyg; give exactly one per owned kind"
    ):
        kinds.manifest(kinds=("toyk", "toyg"), pipelines={"toyk": kinds.pipeline("toyk")})


def test_pipeline_for_a_kind_not_owned(kinds):
    pipelines = {"toyk": kinds.pipeline("toyk"), "toyg": kinds.pipeline("toyg")}
    with pytest.raises(ManifestError, match=r"kind\(s\) toyg the manifest does not own; owned: toyk"):
        kinds.manifest(pipelines=pipelines)


def test_pipeline_name_must_equal_kind(kinds):
    with pytest.raises(ManifestError, match="the pipeline for kind 'toyk' is named 'toyg'; name it 'toyk'"):
        kinds.manifest(pipelines={"toyk": kinds.pipeline("toyg")})


def test_missing_device_codegen(kinds):
    with pytest.raises(ManifestError, match=r"no device codegen for kind\(s\) toyk"):
        kinds.manifest(device_codegens={})


def test_wrong_component_type(kinds):
    with pytest.raises(ManifestError, match="is a str; expected DeviceCodegen"):
        kinds.manifest(device_codegens={"toyk": "codegen"})


def test_no_execution_backends(kinds):
    with pytest.raises(ManifestError, match="declares no execution backends; list at least one"):
        kinds.manifest(specs=())


def test_duplicate_execution_backend_names(kinds):
    with pytest.raises(ManifestError, match="execution backend names must be unique; duplicated: twin"):
        kinds.manifest(specs=(kinds.spec("twin"), kinds.spec("twin")))


def test_missing_host_codegen_when_needed(kinds):
    spec = kinds.spec("hosted", needs_host_codegen=True, consumes=("toy-source", "toy-host"))
    with pytest.raises(
        ManifestError, match=r"'hosted' needs host codegen .*toy-source, toy-host.*declared: none"
    ):
        kinds.manifest(specs=(spec,), host_codegens={})


def test_host_codegen_present_satisfies_the_need(kinds):
    spec = kinds.spec("hosted", needs_host_codegen=True, consumes=("toy-source", "toy-host"))
    assert kinds.manifest(specs=(spec,)).execution_backend("hosted") is spec


def test_execution_backend_must_consume_something_produced(kinds):
    with pytest.raises(ManifestError, match="consumes other-binary but this backend produces toy-source"):
        kinds.manifest(specs=(kinds.spec("alien", consumes=("other-binary",)),))


def test_duplicate_callbacks(kinds):
    with pytest.raises(ManifestError, match=r"duplicate callback names \['version'\]"):
        kinds.manifest(callbacks=[("version", str), ("version", repr)])


def test_callbacks_must_be_callable(kinds):
    with pytest.raises(ManifestError, match="callback 'version' is not callable"):
        kinds.manifest(callbacks={"version": "1.0"})


def test_duplicate_host_codegen_hooks(kinds):
    hook = HostCodegenHook("add-checks", lambda mod, ctx: mod)
    with pytest.raises(ManifestError, match="hook names .* contain duplicates"):
        kinds.manifest(host_codegen_hooks=(hook, hook))


def test_bad_name_kinds_and_dialect(kinds):
    with pytest.raises(ManifestError, match="must match"):
        kinds.manifest(name="Bad Name")
    with pytest.raises(ManifestError, match="target_kinds must be a non-empty tuple"):
        BackendModule("toy", (), {}, {}, (kinds.spec(),))
    with pytest.raises(ManifestError, match="dialect must be a module path"):
        kinds.manifest(dialect="not a module")


def test_device_codegen_rules():
    with pytest.raises(BackendError, match="at least one source format"):
        DeviceCodegen(lambda m, c: None)
    with pytest.raises(BackendError, match="give `compile` together with its binary_formats"):
        DeviceCodegen(lambda m, c: None, None, ("toy-source",), ("toy-binary",))
    with pytest.raises(BackendError, match="format name 'Toy Source'"):
        DeviceCodegen(lambda m, c: None, None, ("Toy Source",))


def test_idempotent_re_registration(kinds):
    m = kinds.register()
    assert register_backend(m) is m
    equal = kinds.manifest(
        pipelines=m.pipelines, device_codegens=m.device_codegens, host_codegens=m.host_codegens,
        specs=m.execution_backends,
    )  # fmt: skip
    assert equal is not m and equal == m
    assert register_backend(equal) is m
    assert registered_backends() == (m,)


def test_conflicting_re_registration(kinds):
    kinds.register()
    with pytest.raises(ManifestError, match="a different backend manifest named 'toy' is already registered"):
        kinds.register(doc="changed")


def test_two_manifests_without_predicate_sharing_a_kind(kinds):
    kinds.register("toy-a")
    with pytest.raises(ManifestError, match=r"share kind\(s\) toyk, and 'toy-b' has no predicate"):
        kinds.register("toy-b")


def test_a_predicate_manifest_may_not_share_with_a_catch_all(kinds):
    kinds.register("toy-a")
    with pytest.raises(ManifestError, match="'toy-a' has no predicate"):
        kinds.register("toy-b", predicate=lambda t: True)


def test_manifest_kinds_must_be_registered(toy):
    toy.kind("toyk")
    with pytest.raises(
        ManifestError, match=r"owns kind\(s\) toyz that are not registered.*registered kinds: toyk"
    ):
        toy.register(kinds=("toyz",))


def test_unregister(kinds):
    kinds.register()
    unregister_backend("toy")
    assert registered_backends() == ()


def test_pipeline_rejects_bad_pass_names():
    class Bad:
        name = "Bad_Name"

        def __call__(self, mod, ctx):
            return mod

    with pytest.raises(BackendError, match="must be kebab-case"):
        PassPipeline("toyk", (Bad(),))


def test_unsupported_declares_kinded_keys_with_reasons(kinds):
    manifest = kinds.manifest(unsupported={"dtype:float64": "no double precision", "op:Cumsum": "not yet"})
    assert dict(manifest.unsupported) == {"dtype:float64": "no double precision", "op:Cumsum": "not yet"}
    with pytest.raises(ManifestError, match="kind one of op, dtype, feature, resource .* got 'float64'"):
        kinds.manifest(unsupported={"float64": "no double precision"})
    with pytest.raises(ManifestError, match="unsupported 'dtype:float64' needs a one-line reason"):
        kinds.manifest(unsupported={"dtype:float64": ""})


@pytest.mark.parametrize("version, words", [
    (None, "backend manifest 'toy' declares no api_version; declare the plugin API it was written for"),
    (API_VERSION + 1, f"written for tilecraft plugin API {API_VERSION + 1}; this tilecraft supports plugin API"),
    (MIN_API_VERSION - 1, f"written for tilecraft plugin API {MIN_API_VERSION - 1}; this tilecraft supports"),
    ("1", "api_version must be an int, got '1'"),
])  # fmt: skip
def test_the_plugin_api_version_is_checked_first(kinds, version, words):
    with pytest.raises(PluginAPIError, match=re.escape(words)):
        kinds.manifest(api_version=version, pipelines={})  # the version is reported, not the missing pipeline


def test_an_execution_backend_spec_for_another_api_is_refused(kinds):
    with pytest.raises(
        PluginAPIError,
        match=f"execution backend 'toy-exec' was written for tilecraft plugin API {API_VERSION + 1}",
    ):
        kinds.spec(api_version=API_VERSION + 1)
    assert kinds.spec(api_version=API_VERSION).api_version == API_VERSION
