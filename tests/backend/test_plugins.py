"""Backend discovery through entry points: lazy loading, the plugin API version, broken plugins.

Each test installs plugins as real distributions under tmp_path (a `*.dist-info` folder with
`entry_points.txt`, next to the package), read back through `importlib.metadata`.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import tilecraft._builtin
from tilecraft.backend import API_VERSION, Target, _loader, backend_for
from tilecraft.backend.registry import registered_backends, target_kinds
from tilecraft.errors import BackendError, PluginWarning
from tilecraft.execution import registered_execution_backends

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = """
    from tilecraft.backend import (
        API_VERSION,
        BackendModule,
        DeviceCode,
        DeviceCodegen,
        PassPipeline,
        TargetKind,
        module_pass,
        register_backend,
        register_target_kind,
    )
    from tilecraft.backend.split import mark_role
    from tilecraft.execution import Availability, ExecutionBackendSpec

    KIND = "{kind}"
    register_target_kind(TargetKind(KIND))


    @module_pass("split-roles")
    def split_roles(mod, ctx):
        \"\"\"Every function runs on the device.\"\"\"
        return mod.with_functions(mark_role(f, "device") for f in mod.functions)


    SPEC = ExecutionBackendSpec(name="{name}-exec", availability=lambda: Availability(True),
                                implementation="{package}.runtime:Runtime", consumes=("{name}-source",),
                                api_version={spec_api})
    MANIFEST = register_backend(BackendModule(
        name="{name}", target_kinds=(KIND,), pipelines={{KIND: PassPipeline(KIND, (split_roles,))}},
        device_codegens={{KIND: DeviceCodegen(lambda mod, ctx: DeviceCode(), None, ("{name}-source",))}},
        execution_backends=(SPEC,), api_version={api},
    ))
"""


class Plugins:
    """Writes plugin packages and their distributions' metadata under one folder on sys.path."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def install(self, dist: str, entry_points: dict[str, dict[str, str]], files: dict[str, str]) -> None:
        for relative, text in files.items():
            path = self.root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        info = self.root / f"{dist.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        groups = [
            f"[{g}]\n" + "".join(f"{n} = {v}\n" for n, v in eps.items()) for g, eps in entry_points.items()
        ]
        (info / "entry_points.txt").write_text("\n".join(groups))

    def backend(
        self, name: str, package: str, dist: str = "", api: str = "API_VERSION", spec_api: str = "API_VERSION"
    ):
        """A working plugin package `package` with a manifest `name` owning kind `name`."""
        source = PLUGIN.format(
            name=name, kind=name.replace("-", "_"), package=package, api=api, spec_api=spec_api
        )
        files = {f"{package}/__init__.py": "", f"{package}/backend.py": source}
        self.install(
            dist or f"{package}-dist", {"tilecraft.backends": {name: f"{package}.backend:MANIFEST"}}, files
        )

    def entry_points(self, group: str) -> list:
        from importlib.metadata import distributions

        found = [
            ep for d in distributions(path=[str(self.root)]) for ep in d.entry_points if ep.group == group
        ]
        return sorted(found, key=lambda ep: ep.name)


@pytest.fixture
def plugins(toy, monkeypatch, tmp_path):
    """Plugins installed under tmp_path are the only ones discovered; the registry is isolated and the
    loader's state starts fresh (both restored after the test)."""
    root = Plugins(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_loader, "_installed_entry_points", root.entry_points)
    monkeypatch.setattr(tilecraft._builtin, "BUILTIN_ENTRY_POINTS", {})
    for name, empty in (("_problems", {}), ("_sources", {}), ("_warned", set()), ("_loaded", False)):
        monkeypatch.setattr(_loader, name, empty)
    yield root
    for name in [m for m in sys.modules if m.startswith("tcplug")]:
        del sys.modules[name]


def test_the_builtin_fallback_equals_pyproject():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for group in _loader.GROUPS:
        declared = {f"{name} = {value}" for name, value in project[group].items()}
        assert set(tilecraft._builtin.BUILTIN_ENTRY_POINTS[group]) == declared, group


def test_every_builtin_entry_point_loads():
    """tilecraft's own entry points name the objects they say (whether read from metadata or the copy)."""
    assert _loader.plugin_problems() == ()
    for group in _loader.GROUPS:
        for line in tilecraft._builtin.BUILTIN_ENTRY_POINTS[group]:
            name = line.split("=")[0].strip()
            assert _loader.plugin_source(group, name) is not None, (group, name)


def test_plugins_load_lazily_on_first_lookup(plugins):
    plugins.backend("tcplug-ok", "tcplug_ok")
    assert "tcplug_ok" not in sys.modules
    assert [m.name for m in registered_backends()] == ["tcplug-ok"]
    assert target_kinds() == ("tcplug_ok",)
    assert _loader.plugin_source(_loader.BACKENDS, "tcplug-ok") == "tcplug_ok.backend:MANIFEST"


def test_an_execution_backend_entry_point_registers_its_spec(plugins):
    plugins.backend("tcplug-ok", "tcplug_ok")
    plugins.install(
        "tcplug-runtime", {"tilecraft.execution_backends": {"tcplug-ok-exec": "tcplug_ok.backend:SPEC"}}, {}
    )
    assert [s.name for s in registered_execution_backends()] == ["tcplug-ok-exec"]
    assert _loader.plugin_problems() == ()


def test_a_broken_plugin_is_reported_and_the_others_load(plugins):
    plugins.backend("tcplug-ok", "tcplug_ok")
    plugins.install(
        "tcplug-broken-dist",
        {"tilecraft.backends": {"tcplug-broken": "tcplug_broken.backend:MANIFEST"}},
        {
            "tcplug_broken/__init__.py": "",
            "tcplug_broken/backend.py": "import tcplug_dependency_not_installed\n",
        },
    )
    with pytest.warns(PluginWarning, match="plugin 'tcplug-broken'"):
        assert [m.name for m in registered_backends()] == ["tcplug-ok"]
    (problem,) = _loader.plugin_problems()
    text = problem.describe()
    assert "tcplug-broken = tcplug_broken.backend:MANIFEST" in text
    assert "distribution tcplug-broken-dist 0.1" in text
    assert "ModuleNotFoundError: No module named 'tcplug_dependency_not_installed'" in text
    assert (
        "install what it needs (tcplug_dependency_not_installed), or pip uninstall tcplug-broken-dist" in text
    )
    with pytest.raises(BackendError, match="plugins that failed to load: plugin 'tcplug-broken'"):
        backend_for(_unknown_target())


def _unknown_target():
    from tilecraft.backend import TargetKind, register_target_kind

    register_target_kind(TargetKind("tcplug_orphan"))
    return Target.parse("tcplug_orphan")


@pytest.mark.parametrize("declared, words", [
    ("API_VERSION + 1", "written for tilecraft plugin API {next}; this tilecraft supports plugin API {now}; upgrade"),
    ("0", "written for tilecraft plugin API 0; this tilecraft supports plugin API {now}; update the plugin"),
    ("None", "declares no api_version"),
])  # fmt: skip
def test_a_manifest_for_another_plugin_api_is_refused_by_name(plugins, declared, words):
    plugins.backend("tcplug-ok", "tcplug_ok")
    plugins.backend("tcplug-old", "tcplug_old", dist="tcplug-old-dist", api=declared)
    with pytest.warns(PluginWarning):
        assert [m.name for m in registered_backends()] == ["tcplug-ok"]
    (problem,) = _loader.plugin_problems()
    assert problem.name == "tcplug-old"
    assert "backend manifest 'tcplug-old'" in problem.problem
    assert words.format(next=API_VERSION + 1, now=API_VERSION) in problem.problem
    assert "pip uninstall tcplug-old-dist" in problem.fix


def test_an_execution_backend_entry_point_must_declare_its_api_version(plugins):
    plugins.backend("tcplug-ok", "tcplug_ok", spec_api="None")
    plugins.install(
        "tcplug-runtime", {"tilecraft.execution_backends": {"tcplug-ok-exec": "tcplug_ok.backend:SPEC"}}, {}
    )
    with pytest.warns(PluginWarning, match="execution backend 'tcplug-ok-exec' declares no api_version"):
        registered_backends()
    assert [m.name for m in registered_backends()] == ["tcplug-ok"]  # its manifest still loads


@pytest.mark.parametrize("value, words", [
    ("tcplug_ok.backend:KIND", "tcplug_ok.backend:KIND is a str, not a BackendModule"),
    ("tcplug_ok.backend:NOTHING", "tcplug_ok.backend:NOTHING cannot be read: AttributeError"),
])  # fmt: skip
def test_an_entry_point_naming_something_else_is_reported(plugins, value, words):
    plugins.backend("tcplug-ok", "tcplug_ok")
    plugins.install("tcplug-wrong", {"tilecraft.backends": {"tcplug-wrong": value}}, {})
    with pytest.warns(PluginWarning, match="tcplug-wrong"):
        assert [m.name for m in registered_backends()] == ["tcplug-ok"]
    (problem,) = _loader.plugin_problems()
    assert words in problem.problem
    assert "module-level BackendModule (the manifest) object" in problem.fix


def test_an_entry_point_named_unlike_its_manifest_is_reported(plugins):
    plugins.backend("tcplug-ok", "tcplug_ok")
    plugins.install(
        "tcplug-alias", {"tilecraft.backends": {"another-name": "tcplug_ok.backend:MANIFEST"}}, {}
    )
    with pytest.warns(PluginWarning):
        registered_backends()
    (problem,) = _loader.plugin_problems()
    assert problem.fix == "name the entry point after it: tcplug-ok = tcplug_ok.backend:MANIFEST"


def test_tilecraft_own_entry_points_replace_the_checkout_copy(plugins, monkeypatch):
    copy = {_loader.BACKENDS: ("tcplug-copy = tcplug_copy.backend:MANIFEST",)}
    monkeypatch.setattr(tilecraft._builtin, "BUILTIN_ENTRY_POINTS", copy)
    assert [ep.name for ep in _loader.discovered_entry_points()] == ["tcplug-copy"]
    plugins.install("tilecraft", {_loader.BACKENDS: {"tcplug-own": "tcplug_own.backend:MANIFEST"}}, {})
    plugins.install("tcplug-other", {_loader.BACKENDS: {"tcplug-a": "tcplug_a.backend:MANIFEST"}}, {})
    assert [ep.name for ep in _loader.discovered_entry_points()] == ["tcplug-own", "tcplug-a"]


def test_backends_and_doctor_show_a_broken_plugin(plugins, capsys):
    from tilecraft.tools.cli import main

    plugins.backend("tcplug-ok", "tcplug_ok")
    plugins.install(
        "tcplug-broken-dist",
        {"tilecraft.backends": {"tcplug-broken": "tcplug_broken.backend:MANIFEST"}},
        {"tcplug_broken/__init__.py": "raise RuntimeError('half-written plugin')\n"},
    )
    assert main(["backends"]) == 1
    out = capsys.readouterr().out
    assert "tcplug-ok" in out
    assert "plugins that failed to load:" in out
    assert "importing tcplug_broken raised RuntimeError: half-written plugin" in out
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    problems = out[out.index("\nproblems:") :]
    assert "plugin 'tcplug-broken'" in problems and "fix: fix the plugin" in problems
