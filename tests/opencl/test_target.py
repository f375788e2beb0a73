"""The `opencl` target kind: parsing, normalization with and without a device, idempotence, detection,
and that `"auto"` never picks it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tilecraft.backend import Target, TargetError, check_idempotent
from tilecraft.backend.detection import detect_target, detection_order, detection_report
from tilecraft.backend.registry import isolated_registry
from tilecraft.backend.target_kind import register_target_kind
from tilecraft.opencl import target as opencl_target
from tilecraft.opencl.target import OPENCL_TARGET_KIND

ROOT = Path(__file__).resolve().parents[2]
FULL = "opencl -platform=0 -device=0 -fp16=false -fp64=true -int64_atomics=true -local_mem=65536 -max_work_group_size=256"


def test_the_kind_is_named_only_and_has_an_alias():
    assert OPENCL_TARGET_KIND.name == "opencl" and OPENCL_TARGET_KIND.aliases == ("ocl",)
    assert OPENCL_TARGET_KIND.auto is False and OPENCL_TARGET_KIND.detect is not None


def test_without_pyopencl_capabilities_stay_unset(no_pyopencl):
    assert Target.parse("opencl") == Target("opencl", {"platform": 0, "device": 0})
    assert Target.parse("ocl -device=1") == Target("opencl", {"platform": 0, "device": 1})
    assert str(Target.parse("opencl -fp64=false")) == "opencl -device=0 -fp64=false -platform=0"


def test_without_pyopencl_the_examples_are_idempotent(no_pyopencl):
    checked = check_idempotent("opencl", ["ocl -platform=1 -device=2", {"kind": "opencl", "fp16": True}])
    assert Target.parse(FULL) in checked


def test_a_full_target_never_reaches_the_device(monkeypatch):
    def unreachable(platform, device):
        raise AssertionError("the device was queried")

    monkeypatch.setattr(opencl_target, "_device_status", unreachable)
    target = Target.parse(FULL)
    assert target.attrs_dict == {
        "platform": 0, "device": 0, "fp16": False, "fp64": True, "int64_atomics": True,
        "local_mem": 65536, "max_work_group_size": 256,
    }  # fmt: skip
    assert Target.parse(str(target)) == target


def test_capabilities_are_read_from_the_device(opencl_device):
    target = Target.parse("opencl")
    assert target.attr("fp16") is opencl_device.fp16
    assert target.attr("fp64") is opencl_device.fp64
    assert target.attr("int64_atomics") is opencl_device.int64_atomics
    assert target.attr("local_mem") == opencl_device.local_mem > 0
    assert target.attr("max_work_group_size") == opencl_device.max_work_group_size > 0
    assert Target.parse(target) == target and Target.parse(str(target)) == target
    check_idempotent("opencl", ["ocl"])


def test_given_capabilities_are_kept_and_the_rest_filled(opencl_device):
    target = Target.parse("opencl -fp64=false -local_mem=1024")
    assert target.attr("fp64") is False and target.attr("local_mem") == 1024
    assert target.attr("max_work_group_size") == opencl_device.max_work_group_size


def test_a_missing_device_leaves_capabilities_unset(opencl_device):
    assert Target.parse("opencl -platform=99") == Target("opencl", {"platform": 99, "device": 0})


@pytest.mark.parametrize(
    ("spelling", "message"),
    [
        ("opencl -arch=sm_90", "unknown attribute(s) arch; allowed: platform, device, fp16, fp64"),
        ("opencl -platform=-1", "platform must be an index"),
        ("opencl -device=gpu", "device must be an index"),
        ("opencl -fp16=1", "fp16 must be true or false, got 1"),
        ("opencl -local_mem=0", "local_mem must be an int > 0"),
        ("opencl -max_work_group_size=true", "max_work_group_size must be an int > 0"),
    ],
)
def test_bad_attributes_say_what_is_allowed(no_pyopencl, spelling, message):
    with pytest.raises(TargetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Target.parse(spelling)


def test_detect_without_pyopencl_says_why(no_pyopencl):
    assert opencl_target.detect() == "pyopencl is not installed"


def test_detect_finds_device_zero(opencl_device):
    found = opencl_target.detect()
    assert isinstance(found, Target) and found.kind == "opencl" and found.attr("device") == 0


def test_auto_never_picks_opencl_even_when_it_is_present(opencl_device, no_configured_target):
    assert isinstance(opencl_target.detect(), Target)  # present here
    assert "opencl" not in [k.name for k in detection_order()]
    assert detect_target().kind != "opencl"
    report = {r.kind: r for r in detection_report()}
    assert report["opencl"].target is not None and report["opencl"].auto is False


def test_auto_fails_rather_than_pick_opencl_when_it_is_the_only_kind(opencl_device, no_configured_target):
    with isolated_registry():
        register_target_kind(OPENCL_TARGET_KIND)
        with pytest.raises(TargetError, match=r"kinds 'auto' never picks \(name them explicitly\): opencl"):
            Target.parse("auto")


def test_importing_the_target_backend_does_not_import_pyopencl():
    code = "import sys, tilecraft.opencl; assert 'pyopencl' not in sys.modules, 'pyopencl was imported'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
