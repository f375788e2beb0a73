"""The webgpu target kind: parsing, aliases, canonical attributes, and capabilities read lazily."""

from __future__ import annotations

import pytest

from tests.webgpu.conftest import BARE, FULL
from tilecraft.backend import Target
from tilecraft.backend.errors import TargetError
from tilecraft.execution.wgpu import device
from tilecraft.webgpu import target as webgpu_target


def test_the_alias_names_the_same_kind_and_given_capabilities_are_kept():
    t = Target.parse(FULL.replace("webgpu", "wgpu", 1))
    assert t.kind == "webgpu"
    assert t.attr("subgroup_size") == 8 and t.attr("f16") is True and t.attr("workgroup_memory") == 32768
    assert Target.parse(str(t)) == t  # idempotent, and the string parses back


@pytest.mark.parametrize("text, message", [
    ("webgpu -f16=3", "f16 must be true or false"),
    ("webgpu -workgroup_memory=0", "workgroup_memory must be an int >= 1"),
    ("webgpu -adapter=-1", "adapter must be an int >= 0"),
])  # fmt: skip
def test_impossible_values_are_refused_with_the_rule(text, message):
    with pytest.raises(TargetError, match=message):
        Target.parse(text)


def test_without_an_adapter_the_target_is_still_named_and_capabilities_stay_unset(monkeypatch):
    missing = device.WgpuUnavailable("wgpu is not installed", device.WGPU_FIX)
    monkeypatch.setattr(webgpu_target, "_device_status", lambda adapter: missing)
    t = Target.parse("webgpu -f16=false")
    assert t.attr("f16") is False and t.attr("workgroup_memory") is None
    assert webgpu_target.detect() == "wgpu is not installed"


def test_the_adapter_fills_what_is_not_given(adapter_runtime):
    t = Target.parse("webgpu -workgroup_memory=16384")
    assert t.attr("workgroup_memory") == 16384  # given: kept
    caps = adapter_runtime.capabilities()
    assert t.attr("max_workgroup_size") == caps["max_workgroup_size"]
    assert t.attr("f16") == caps["f16"]


def test_bare_capabilities_parse():
    t = Target.parse(BARE)
    assert t.attr("subgroups") is False and t.attr("max_storage_buffers") == 8
