"""Target parsing, canonical strings, normalization, aliases and `auto` detection (test-only kinds)."""

import pytest

from tilecraft import settings
from tilecraft.backend import Target, TargetError, TargetKind, check_idempotent
from tilecraft.backend.detection import detect_target, detection_report
from tilecraft.backend.target_kind import register_target_kind


def _lower_arch(attrs):
    """Canonical arch is lower case; a default count is filled in."""
    if "arch" in attrs:
        attrs["arch"] = attrs["arch"].lower()
    attrs.setdefault("count", 1)
    unknown = set(attrs) - {"arch", "count", "fast"}
    if unknown:
        raise TargetError(f"unknown attributes {sorted(unknown)}; allowed: arch, count, fast")
    return attrs


@pytest.fixture
def kinds(toy):
    toy.kind(
        "toyk", aliases=("toyalias",), normalize=_lower_arch, examples=("toyk -arch=X1", {"kind": "toyk"})
    )
    toy.kind("toyplain")
    return toy


def test_parse_string_with_attributes_and_flags(kinds):
    t = Target.parse("toyk -arch=X90a -count=132 -fast")
    assert t.kind == "toyk"
    assert t.attr("arch") == "x90a"
    assert t.attr("count") == 132
    assert t.attr("fast") is True
    assert t.attr("missing", "d") == "d"
    assert dict(t.attrs_dict) == {"arch": "x90a", "count": 132, "fast": True}


def test_attributes_are_sorted_and_canonical(kinds):
    a = Target.parse("toyk -count=2 -arch=x")
    b = Target.parse({"kind": "toyk", "arch": "X", "count": 2})
    assert a == b
    assert a.attrs == (("arch", "x"), ("count", 2))


@pytest.mark.parametrize(
    "spelling",
    [
        "toyk",
        "toyk -arch=x1",
        "toyk -fast -count=7",
        "toyk -fast=false",
        "toyplain -name=abc -n=-3",
        "toyplain",
    ],
)
def test_str_round_trips(kinds, spelling):
    t = Target.parse(spelling)
    assert Target.parse(str(t)) == t
    assert str(Target.parse(str(t))) == str(t)


def test_str_is_canonical(kinds):
    assert str(Target.parse("toyk -fast -arch=x")) == "toyk -arch=x -count=1 -fast"
    assert str(Target.parse("toyk -fast=false")) == "toyk -count=1 -fast=false"


def test_parse_target_renormalizes_and_resolves_alias(kinds):
    raw = Target("toyalias", {"arch": "UP"})
    t = Target.parse(raw)
    assert t == Target("toyk", {"arch": "up", "count": 1})
    assert Target.parse(t) is not None and Target.parse(t) == t


def test_alias_string(kinds):
    assert Target.parse("toyalias -arch=a").kind == "toyk"


def test_unknown_kind_lists_kinds_and_aliases(kinds):
    with pytest.raises(TargetError, match=r"unknown target kind 'nope'.*toyk, toyplain.*toyalias -> toyk"):
        Target.parse("nope")


def test_normalizer_errors_propagate(kinds):
    with pytest.raises(TargetError, match="allowed: arch, count, fast"):
        Target.parse("toyk -colour=red")


@pytest.mark.parametrize(
    "bad,message",
    [
        ("", "empty target string"),
        ("toyk arch=x", "cannot read 'arch=x'"),
        ("toyk --arch=x", "cannot read"),
        ("toyk -arch=", "has no value"),
        ("toyk -arch=a -arch=b", "given twice"),
        ({"arch": "x"}, "needs a 'kind' string"),
        (3.5, "cannot make a target from float"),
    ],
)
def test_bad_spellings(kinds, bad, message):
    with pytest.raises(TargetError, match=message):
        Target.parse(bad)


def test_values_that_would_not_read_back_are_rejected():
    with pytest.raises(TargetError, match="would not read back"):
        Target("k", {"count": "12"})
    with pytest.raises(TargetError, match="would not read back"):
        Target("k", {"name": "a b"})
    with pytest.raises(TargetError, match="allowed: str, int, bool"):
        Target("k", {"ratio": 1.5})


def test_check_idempotent_accepts_a_good_normalizer(kinds):
    checked = check_idempotent("toyk", samples=["toyk -fast"])
    assert len(checked) == 3


def test_check_idempotent_catches_a_bad_normalizer(toy):
    toy.kind("toybad", normalize=lambda a: {**a, "n": a.get("n", 0) + 1}, examples=("toybad",))
    with pytest.raises(TargetError, match="not idempotent"):
        check_idempotent("toybad")


def test_kind_registration_rules(toy):
    kind = toy.kind("toyk", aliases=("ta",))
    assert register_target_kind(kind) is kind  # the same kind again is harmless
    with pytest.raises(TargetError, match="already registered with different rules"):
        register_target_kind(TargetKind("toyk", doc="other"))
    with pytest.raises(TargetError, match="already used by kind 'toyk'"):
        register_target_kind(TargetKind("toyother", aliases=("ta",)))
    with pytest.raises(TargetError, match="reserved"):
        TargetKind("auto")
    with pytest.raises(TargetError, match="must match"):
        TargetKind("Bad Name")


def test_detectors_run_lazily_in_priority_order(toy):
    calls = []

    def detector(name, result):
        def detect():
            calls.append(name)
            return result

        return detect

    toy.kind("toyhost", detect=detector("toyhost", Target("toyhost")), detect_priority=95)
    toy.kind("toyaccel", detect=detector("toyaccel", None), detect_priority=10)
    toy.kind("toyaccel2", detect=detector("toyaccel2", "no device node"), detect_priority=20)
    assert calls == []  # registering runs nothing
    assert detect_target() == Target("toyhost")
    assert calls == ["toyaccel", "toyaccel2", "toyhost"]


def test_first_match_wins_and_later_detectors_do_not_run(toy):
    calls = []
    toy.kind("toyaccel", detect=lambda: Target("toyaccel"), detect_priority=10)
    toy.kind("toyhost", detect=lambda: calls.append("host"), detect_priority=95)
    assert Target.parse("auto") == Target("toyaccel")
    assert calls == []


def test_nothing_detected_lists_each_kind_and_why(toy):
    def broken():
        raise OSError("driver missing")

    toy.kind("toyaccel", detect=broken, detect_priority=10)
    toy.kind("toyaccel2", detect=lambda: "no device node", detect_priority=20)
    toy.kind("toyhost", detect=lambda: None, detect_priority=95)
    toy.kind("toymanual")
    with pytest.raises(TargetError) as info:
        Target.parse("auto")
    text = str(info.value)
    assert text.index("toyaccel (priority 10)") < text.index("toyaccel2") < text.index("toyhost")
    assert "detector raised OSError: driver missing" in text
    assert "no device node" in text
    assert "detector found nothing" in text
    assert "without a detector (name them explicitly): toymanual" in text
    assert "TILECRAFT_TARGET" in text


def test_detection_report_runs_every_detector(toy):
    toy.kind("toyaccel", detect=lambda: Target("toyaccel"), detect_priority=10)
    toy.kind("toyhost", detect=lambda: Target("toyhost"), detect_priority=95)
    report = detection_report()
    assert [r.kind for r in report] == ["toyaccel", "toyhost"]
    assert all(r.target is not None for r in report)
    assert "found toyaccel" in report[0].describe()


def test_tilecraft_target_replaces_auto(kinds):
    with settings.override(TILECRAFT_TARGET="toyk -arch=Z"):
        assert Target.parse("auto") == Target("toyk", {"arch": "z", "count": 1})
        assert Target.parse(None) == Target.parse("auto")
        assert Target.parse("toyplain") == Target("toyplain")  # explicit targets ignore it


def test_targets_are_frozen_and_hashable(kinds):
    t = Target.parse("toyk -arch=x")
    assert {t: 1}[Target.parse("toyk -arch=X")] == 1
    with pytest.raises(AttributeError):
        t.kind = "other"
    assert t.with_attrs(count=9).attr("count") == 9


# Attribute names are checked generically, against the kind's declared list, before its normalizer.


@pytest.fixture
def declared(toy):
    seen = []

    def record(attrs):
        seen.append(dict(attrs))
        return attrs

    toy.kind("toyd", attributes=("arch", "count"), normalize=record)
    return seen


@pytest.mark.parametrize("spelling", ["toyd -arhc=x", {"kind": "toyd", "arhc": "x"}, "toyd -arhc"])
def test_unknown_attribute_names_the_close_match_and_the_allowed_ones(declared, spelling):
    with pytest.raises(TargetError) as info:
        Target.parse(spelling)
    assert "target toyd: unknown attribute(s) arhc; allowed: arch, count" in str(info.value)
    assert "did you mean -arch for -arhc?" in str(info.value)
    assert declared == [], "the normalizer ran on an unknown attribute"


def test_an_unknown_attribute_without_a_close_match_lists_the_allowed_ones(declared):
    with pytest.raises(TargetError, match=r"unknown attribute\(s\) zzz; allowed: arch, count$"):
        Target.parse("toyd -count=2 -zzz=1")
    assert Target.parse("toyd -arch=x -count=2").attrs_dict == {"arch": "x", "count": 2}


def test_a_normalizer_returning_an_undeclared_attribute_is_reported_as_a_backend_bug(toy):
    toy.kind("toyleaky", attributes=("arch",), normalize=lambda attrs: {**attrs, "extra": 1})
    with pytest.raises(TargetError, match=r"normalizer of target kind 'toyleaky' returned undeclared.*extra"):
        Target.parse("toyleaky -arch=x")


def test_kinds_without_declared_attributes_leave_names_to_the_normalizer(kinds):
    assert Target.parse("toyplain -anything=1").attr("anything") == 1


@pytest.mark.parametrize("attributes", ["arch", ("arch", "arch"), ("bad name",), (3,), 3])
def test_declared_attribute_lists_are_validated(attributes):
    with pytest.raises(TargetError, match="target kind 'toyv': attributes"):
        TargetKind("toyv", attributes=attributes)


# The built-in kinds: unknown attributes and values this host or the hardware cannot have.


def test_cpu_target_rejects_a_misspelt_attribute():
    with pytest.raises(TargetError, match=r"unknown attribute\(s\) iza; allowed: isa \(did you mean -isa"):
        Target.parse("c -iza=sse")


def test_cpu_target_rejects_an_isa_this_host_lacks():
    from tilecraft.cpu.target import FAMILIES, host_isa, host_isas

    assert Target.parse("cpu").attr("isa") == host_isa()
    assert host_isas()[0] == host_isa() and host_isas()[-1] == "generic"
    for isa in host_isas():
        assert Target.parse(f"c -isa={isa}").attr("isa") == isa
    foreign = next(f[0] for f in FAMILIES if host_isa() not in f)  # e.g. neon on an x86 host
    with pytest.raises(TargetError) as info:
        Target.parse(f"c -isa={foreign}")
    assert f"isa {foreign!r} is not available on this host" in str(info.value)
    assert f"valid here: {', '.join(host_isas())}" in str(info.value)
    with pytest.raises(TargetError, match=r"unknown isa 'sse5'; valid here: "):
        Target.parse("c -isa=sse5")


def test_cuda_arch_specific_suffix_exists_only_from_sm_90a():
    assert Target.parse("cuda -arch=sm_100a").attr("arch") == "sm_100a"
    with pytest.raises(TargetError, match="arch sm_80a does not exist.*write sm_80"):
        Target.parse("cuda -arch=sm_80a")


def test_cuda_and_opencl_reject_misspelt_attributes_generically():
    with pytest.raises(
        TargetError, match=r"unknown attribute\(s\) archh; allowed: arch, device.*-arch for -archh"
    ):
        Target.parse("cuda -archh=sm_90a")
    with pytest.raises(
        TargetError, match=r"unknown attribute\(s\) devise; allowed: platform, device.*-device"
    ):
        Target.parse("opencl -devise=0")


def test_a_bad_tilecraft_target_names_the_variable():
    with settings.override(TILECRAFT_TARGET="c -iza=sse"), pytest.raises(TargetError) as info:
        Target.parse("auto")
    assert str(info.value).startswith("TILECRAFT_TARGET='c -iza=sse' is not a valid target: ")
    assert "did you mean -isa" in str(info.value)


def test_a_redirected_kind_resolves_to_the_redirect_however_written(kinds):
    """`redirect_kind` (an emulation standing in for one kind's device): every spelling of the kind,
    attributes included, resolves to the redirect's target; ending it restores the kind."""
    from tilecraft.backend.target import redirect_kind

    redirect_kind("toyalias", lambda: Target.parse("toyplain"))
    try:
        for spelling in ("toyk", "toyk -arch=X1", "toyalias", {"kind": "toyk", "count": 3}):
            assert Target.parse(spelling) == Target("toyplain")
        assert Target.parse("toyplain") == Target("toyplain")
    finally:
        redirect_kind("toyk", None)
    assert Target.parse("toyk -arch=X1").attr("arch") == "x1"


def test_a_redirect_that_resolves_its_own_kind_gets_it_as_written(kinds):
    """While the redirect resolves, targets are not redirected: no recursion, and a redirect to the
    same kind (an emulation told to use that very kind) gets the kind itself."""
    from tilecraft.backend.target import redirect_kind

    redirect_kind("toyk", lambda: Target.parse("toyk -arch=Y2"))
    try:
        resolved = Target.parse("toyk -arch=X1")
    finally:
        redirect_kind("toyk", None)
    assert resolved.kind == "toyk" and resolved.attr("arch") == "y2"
