"""Backend variants: a manifest declared `variant=True` shares a kind with that kind's own backend and
handles only the targets that name it (`-backend=NAME`, or its registered spelling)."""

import pytest

from tilecraft.backend import Target, backend_for
from tilecraft.backend.errors import ManifestError, TargetError
from tilecraft.backend.target_kind import register_target_variant
from tilecraft.errors import BackendError


@pytest.fixture
def primary_and_variant(toy):
    toy.kind("toyk", attributes=("arch",), normalize=lambda attrs: {"arch": attrs.get("arch", "x1")})
    primary = toy.register("toy", specs=(toy.spec("exec-a"),))
    variant = toy.register("toyv", specs=(toy.spec("exec-v"),), variant=True)
    return primary, variant


def test_a_variant_shares_a_kind_with_a_backend_without_predicate(primary_and_variant):
    """Neither has a predicate, yet they are exclusive: the variant takes only targets naming it."""
    primary, variant = primary_and_variant
    assert backend_for(Target.parse("toyk -arch=x2")) is primary
    assert backend_for(Target.parse("toyk -arch=x2 -backend=toyv")) is variant
    assert backend_for(Target.parse("toyk -backend=toy")) is primary


def test_the_backend_attribute_is_kept_beside_the_canonical_ones(primary_and_variant):
    target = Target.parse("toyk -backend=toyv")
    assert str(target) == "toyk -arch=x1 -backend=toyv"
    assert Target.parse(str(target)) == target == Target.parse(target)


def test_a_variant_spelling_stands_for_the_kind_with_the_backend(primary_and_variant):
    register_target_variant("toyv", "toyk")
    assert Target.parse("toyv -arch=x3") == Target.parse("toyk -arch=x3 -backend=toyv")
    assert Target.parse({"kind": "toyv"}) == Target.parse("toyk -backend=toyv")
    with pytest.raises(TargetError, match="cannot also name -backend=toy"):
        Target.parse("toyv -backend=toy")


def test_a_variant_spelling_may_not_take_a_kind_name(primary_and_variant):
    with pytest.raises(TargetError, match="already used by kind 'toyk'"):
        register_target_variant("toyk", "toyk")


def test_naming_an_unknown_variant_lists_the_variants(primary_and_variant):
    with pytest.raises(BackendError, match=r"no backend variant accepts.*toyv \(targets naming it"):
        backend_for(Target.parse("toyk -backend=nope"))


def test_a_bad_backend_name_is_a_target_error(primary_and_variant):
    with pytest.raises(TargetError, match="names a backend manifest"):
        Target.parse("toyk -backend=Not_A_Name")


def test_own_target_names_the_variant(primary_and_variant):
    primary, variant = primary_and_variant
    target = Target.parse("toyk")
    assert primary.own_target(target) is target
    assert backend_for(variant.own_target(target)) is variant


def test_two_backends_without_predicates_still_conflict(toy):
    toy.kind("toyk")
    toy.register("toy", specs=(toy.spec("exec-a"),))
    with pytest.raises(ManifestError, match="has no predicate"):
        toy.register("toy2", specs=(toy.spec("exec-b"),))
