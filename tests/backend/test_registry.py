"""Registry lookups: variant selection by predicate and isolation (plugin loading: test_plugins.py)."""

import sys

import pytest

from tilecraft.backend import Target, backend_for
from tilecraft.backend.registry import isolated_registry, registered_backends, target_kinds
from tilecraft.errors import BackendError
from tilecraft.execution import get_spec


def flavor_a(target):
    """targets with -flavor=a"""
    return target.attr("flavor") == "a"


def flavor_b(target):
    """targets with -flavor=b"""
    return target.attr("flavor") == "b"


@pytest.fixture
def variants(toy):
    toy.kind("toyk")
    a = toy.register("toy-a", predicate=flavor_a, specs=(toy.spec("exec-a"),))
    b = toy.register("toy-b", predicate=flavor_b, specs=(toy.spec("exec-b"),))
    return a, b


def test_variant_selected_by_predicate(variants):
    a, b = variants
    assert backend_for(Target.parse("toyk -flavor=a")) is a
    assert backend_for(Target.parse("toyk -flavor=b")) is b


def test_no_variant_matches(variants):
    with pytest.raises(
        BackendError, match=r"no backend variant accepts target toyk -flavor=c.*toy-a \(targets with"
    ):
        backend_for(Target.parse("toyk -flavor=c"))


def test_overlapping_predicates_are_caught_at_selection(toy):
    toy.kind("toyk")
    spec = toy.spec()
    toy.register("toy-a", predicate=lambda t: True, specs=(spec,))
    toy.register("toy-b", predicate=lambda t: t.attr("x") is not None, specs=(spec,))
    assert backend_for(Target.parse("toyk")).name == "toy-a"
    with pytest.raises(BackendError, match="accepted by more than one backend variant: toy-a, toy-b"):
        backend_for(Target.parse("toyk -x=1"))


def test_no_backend_for_a_kind(toy):
    toy.kind("toyk")
    toy.kind("toyg")
    toy.register()
    with pytest.raises(
        BackendError, match=r"no backend is registered for target kind 'toyg'; backends: toy \(kinds"
    ):
        backend_for(Target.parse("toyg"))


def test_registering_a_manifest_registers_its_execution_specs(variants):
    a, _ = variants
    assert get_spec("exec-a") is a.execution_backends[0]


def test_conflicting_execution_spec_names_across_manifests(toy):
    toy.kind("toyk")
    toy.kind("toyg")
    toy.register("toy-a", specs=(toy.spec("shared"),))
    with pytest.raises(
        BackendError, match="execution backend 'shared' is already registered with a different spec"
    ):
        toy.register("toy-b", kinds=("toyg",), specs=(toy.spec("shared"),))


def test_isolated_registry_restores_the_outer_state(toy):
    toy.kind("toyk")
    outer = toy.register()
    with isolated_registry():
        assert registered_backends() == ()
        assert target_kinds() == ()
    assert registered_backends() == (outer,)
    assert target_kinds() == ("toyk",)


def test_importing_the_backend_package_is_light():
    import subprocess

    # What is imported, not how long it takes (that is benchmarks/startup.py's: CI machines are loaded).
    code = (
        "import sys; import tilecraft.backend; "
        "heavy = [m for m in ('numpy', 'ctypes', 'subprocess', 'tilecraft.execution.cache') "
        "if m in sys.modules]; "
        "loaded = [m for m in sys.modules if m.startswith('tilecraft.') and m != 'tilecraft.jit' and "
        "m.split('.')[1] not in ('backend', 'runtime', 'execution', 'errors', 'ir', 'settings', '_builtin', '_origin', '_modules')]; "
        "print(heavy, loaded)"
    )
    root = str(__import__("pathlib").Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    assert out.stdout.strip() == "[] []", (
        out.stdout
    )  # no toolchain, array library or backend package imported
