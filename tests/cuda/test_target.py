"""The `cuda` target kind: spellings, canonical attributes, idempotence, and lazy detection."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tilecraft.backend import Target, TargetError, check_idempotent
from tilecraft.backend.detection import run_detector
from tilecraft.cuda import target as cuda_target

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "spelling",
    ["sm_90a", "90a", "sm90a", "compute_90a", "-arch=sm_90a", "--gpu-architecture=sm_90a", "SM_90A"],
)
def test_arch_spellings_become_canonical(spelling, no_driver):
    """Every accepted spelling of an arch normalizes to `sm_XY[a]`."""
    assert Target.parse({"kind": "cuda", "arch": spelling}).attr("arch") == "sm_90a"


@pytest.mark.parametrize(("value", "arch"), [(80, "sm_80"), ("8.6", "sm_86"), ("sm_100a", "sm_100a"),
                                             (120, "sm_120"), ("9.0", "sm_90")])  # fmt: skip
def test_arch_from_ints_and_capabilities(value, arch, no_driver):
    assert Target.parse({"kind": "cuda", "arch": value}).attr("arch") == arch


def test_alias_and_canonical_string(no_driver):
    target = Target.parse("nvidia -arch=sm_90a")
    assert target.kind == "cuda"
    assert str(target) == "cuda -arch=sm_90a -device=0 -max_shared_memory_per_block_optin=232448"
    assert Target.parse(str(target)) == target


def test_known_limits_fill_shared_memory_and_explicit_values_win(no_driver):
    assert Target.parse("cuda -arch=sm_80").attr("max_shared_memory_per_block_optin") == 163 * 1024
    given = Target.parse("cuda -arch=sm_80 -max_shared_memory_per_block_optin=1000 -sm_count=7 -device=2")
    assert given.attrs_dict == {"arch": "sm_80", "device": 2, "max_shared_memory_per_block_optin": 1000,
                                "sm_count": 7}  # fmt: skip
    assert Target.parse("cuda -arch=sm_75").attr("max_shared_memory_per_block_optin") == 64 * 1024


def test_normalizer_is_idempotent(no_driver):
    checked = check_idempotent("cuda", ["cuda -arch=sm_90a -sm_count=132", {"kind": "nvidia", "arch": 86}])
    assert {t.attr("arch") for t in checked} >= {"sm_90a", "sm_80", "sm_100a", "sm_89", "sm_86"}


def test_normalizer_is_idempotent_with_a_device(fake_driver):
    for target in check_idempotent("cuda", ["cuda", "cuda -arch=sm_80"]):
        assert Target.parse(target) == target


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"arch": "sm_9"}, "cannot read arch 'sm_9'"),
        ({"arch": "ampere"}, "write sm_XY or sm_XYa"),
        ({"arch": True}, "cannot read arch True"),
        ({"arch": "sm_90a", "cores": 4}, "unknown attribute(s) cores; allowed: arch, device"),
        ({"arch": "sm_90a", "device": -1}, "device must be an int >= 0"),
        ({"arch": "sm_90a", "sm_count": 0}, "sm_count must be an int > 0"),
    ],
)
def test_bad_attributes_are_rejected_with_what_is_allowed(attrs, message, no_driver):
    with pytest.raises(TargetError) as info:
        Target.parse({"kind": "cuda", **attrs})
    assert message in str(info.value)


def test_arch_for_capability():
    """9.0 and 10.0 get their arch-specific targets (wgmma/TMA, tcgen05); others the portable one."""
    assert cuda_target.arch_for_capability(9, 0) == "sm_90a"
    assert cuda_target.arch_for_capability(10, 0) == "sm_100a"
    assert cuda_target.arch_for_capability(8, 0) == "sm_80"
    assert cuda_target.arch_for_capability(8, 9) == "sm_89"
    assert cuda_target.arch_for_capability(12, 0) == "sm_120"
    assert cuda_target.capability("sm_100a") == (10, 0)


def test_detection_without_a_driver_gives_the_reason(no_driver):
    result = run_detector(cuda_target.CUDA_TARGET_KIND)
    assert result.target is None
    assert "NVIDIA driver library" in result.reason and "cannot open shared object" in result.reason
    assert cuda_target.CUDA_TARGET_KIND.detect_priority < 50


def test_detection_when_the_driver_finds_no_device(fake_driver):
    fake_driver.set("fake_init_result", 100)
    reason = cuda_target.detect()
    assert isinstance(reason, str) and "found no CUDA device" in reason and "CUDA_ERROR_NO_DEVICE" in reason


def test_detection_reads_the_device(fake_driver):
    """The fake device has compute capability 9.0 and 132 SMs: sm_90a with the device's limits."""
    found = cuda_target.detect()
    assert found == Target.parse("cuda -arch=sm_90a -device=0 -sm_count=132 "
                                 "-max_shared_memory_per_block_optin=232448")  # fmt: skip


def test_bare_kind_reads_the_arch_from_the_device(fake_driver):
    assert Target.parse("cuda") == Target.parse("cuda -arch=sm_90a -sm_count=132")


def test_a_target_naming_its_arch_never_reaches_the_driver(monkeypatch):
    """So it means the same on every machine, and parsing it does not initialize CUDA before a fork."""
    monkeypatch.setattr(cuda_target, "_device_status", lambda index: pytest.fail("the driver was queried"))
    assert Target.parse("cuda -arch=sm_90a").attr("sm_count") is None


def test_bare_kind_without_a_device_says_to_name_the_arch(no_driver):
    with pytest.raises(TargetError) as info:
        Target.parse("cuda")
    assert "names no arch" in str(info.value) and "cuda -arch=sm_90a" in str(info.value)


def test_importing_the_backend_loads_no_driver_or_array_library():
    code = (
        "import sys, tilecraft.cuda; from tilecraft.backend import Target; Target.parse('cuda -arch=sm_80'); "
        "import tilecraft.execution.nvrtc.spec, tilecraft.execution.nvcc.spec; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cuda', 'torch', 'cupy')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
