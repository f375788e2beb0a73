"""check-target-support (OpenCL), Before/Expected: a kernel the device supports passes through unchanged;
one asking for more work-items or local memory than the device has stops lowering with the reason."""

from __future__ import annotations

import pytest

from tests.transform.helpers import OPENCL, staged
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass

DEVICE = "opencl -fp16=false -fp64=true -int64_atomics=true"


@pass_test("check-target-support", OPENCL)
def test_a_kernel_the_device_supports_passes_unchanged(target):
    """128 work-items and 512 bytes of local memory on a device with 1024 and 64 KiB: unchanged."""
    assert_pass(target, "check-target-support", staged, UNCHANGED)


def test_more_work_items_than_the_device_runs_are_refused():
    with pytest.raises(LoweringError, match="at most 64 work-items per work-group"):
        run_pass(f"{DEVICE} -local_mem=65536 -max_work_group_size=64", "check-target-support", staged)


def test_local_memory_past_the_device_budget_is_refused_at_the_allocation():
    with pytest.raises(LoweringError, match="needs 512 bytes of shared \\(local\\) memory") as info:
        run_pass(f"{DEVICE} -local_mem=256 -max_work_group_size=1024", "check-target-support", staged)
    assert 's = T.alloc_shared((128,), "float32")' in str(info.value)
