"""`TargetKind(auto=False)`: a kind that can be present is still never chosen by `"auto"`."""

from __future__ import annotations

import pytest

from tilecraft import settings
from tilecraft.backend import Target, TargetError, TargetKind
from tilecraft.backend.detection import detect_target, detection_order, detection_report, named_only_kinds


@pytest.fixture(autouse=True)
def no_configured_target():
    with settings.override(TILECRAFT_TARGET=None):
        yield


def test_auto_skips_a_named_only_kind_even_when_it_is_present(toy):
    """The named-only kind has the best priority and finds its device; auto still picks the host."""
    calls = []
    toy.kind(
        "toyacc", detect=lambda: calls.append("toyacc") or Target("toyacc"), detect_priority=5, auto=False
    )
    toy.kind("toyhost", detect=lambda: Target("toyhost"), detect_priority=95)
    assert detect_target() == Target("toyhost")
    assert calls == []  # not even probed
    assert [k.name for k in detection_order()] == ["toyhost"]
    assert [k.name for k in named_only_kinds()] == ["toyacc"]


def test_a_named_only_kind_is_used_when_named(toy):
    toy.kind("toyacc", detect=lambda: Target("toyacc"), auto=False)
    assert Target.parse("toyacc") == Target("toyacc")


def test_the_report_runs_named_only_detectors_last_and_says_so(toy):
    toy.kind("toyacc", detect=lambda: Target("toyacc"), detect_priority=5, auto=False)
    toy.kind("toyhost", detect=lambda: Target("toyhost"), detect_priority=95)
    report = detection_report()
    assert [(r.kind, r.auto) for r in report] == [("toyhost", True), ("toyacc", False)]
    assert report[1].describe() == (
        "toyacc (priority 5; used only when named, 'auto' never picks it): found toyacc"
    )
    assert report[0].describe() == "toyhost (priority 95): found toyhost"


def test_nothing_detected_lists_the_named_only_kinds(toy):
    toy.kind("toyacc", detect=lambda: Target("toyacc"), auto=False)
    with pytest.raises(TargetError, match=r"kinds 'auto' never picks \(name them explicitly\): toyacc"):
        Target.parse("auto")


def test_auto_must_be_a_bool():
    with pytest.raises(TargetError, match="auto must be True or False"):
        TargetKind("toyacc", auto="no")
