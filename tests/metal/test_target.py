"""The `metal` target kind: the family attribute (given, or read from the device), limits, detection."""

from __future__ import annotations

import sys

import pytest

from tilecraft.backend import Target
from tilecraft.backend.errors import TargetError
from tilecraft.metal.target import METAL_TARGET_KIND, family_number


def test_a_given_family_is_canonical_with_the_apple_limits():
    target = Target.parse("metal -family=apple8")
    assert target.attr("family") == "apple8" and family_number(target) == 8
    assert target.attr("threadgroup_memory") == 32768 and target.attr("max_threads") == 1024
    assert Target.parse(str(target)) == target


def test_a_family_may_be_given_as_its_number():
    assert Target.parse({"kind": "metal", "family": 9}).attr("family") == "apple9"


@pytest.mark.parametrize(
    "text, words",
    [
        ("metal -family=apple3", ["family must be one of apple6, apple7, apple8, apple9", "apple3"]),
        ("metal -family=apple7 -threadgroup_memory=65536", ["threadgroup_memory must be an int in 1..32768"]),
        ("metal -family=apple7 -max_threads=2048", ["max_threads must be an int in 1..1024"]),
    ],
)
def test_impossible_attributes_are_refused_with_the_choices(text, words):
    with pytest.raises(TargetError) as info:
        Target.parse(text)
    for word in words:
        assert word in str(info.value)


OFF_MACOS = pytest.mark.skipif(sys.platform == "darwin", reason="a Mac may have a Metal device to read")


@OFF_MACOS
def test_without_a_device_the_family_must_be_given():
    with pytest.raises(TargetError) as info:
        Target.parse("metal")
    text = str(info.value)
    assert "no family given" in text and "Metal exists only on macOS" in text
    assert "metal -family=apple8" in text


@OFF_MACOS
def test_the_detector_says_why_there_is_no_device_here():
    found = METAL_TARGET_KIND.detect()
    assert isinstance(found, str) and "macOS" in found


def test_the_family_is_read_from_the_device(fake_metal):
    assert Target.parse("metal").attr("family") == "apple7"
    detected = METAL_TARGET_KIND.detect()
    assert isinstance(detected, Target) and detected.attr("family") == "apple7"


def test_a_given_family_wins_over_the_device(fake_metal):
    assert Target.parse("metal -family=apple6").attr("family") == "apple6"
