"""mark-bounds-checks (CPU, CUDA), Before/Expected: the opt-in debug checks are a device-function attribute."""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


@T.prim_func
def device(A: T.Tensor((64,), "float32")):
    T.func_attr({"tilecraft.role": "device", "tilecraft.host_function": "device"})
    with T.Kernel(1, threads=64):
        for i in T.serial(64):
            A[i] = 1.0


@pass_test("mark-bounds-checks", "c", "cuda -arch=sm_90a")
def test_the_pass_config_marks_device_functions_for_checks(target):
    """With tilecraft.bounds_check set, each device function carries the attribute codegen checks with."""

    @T.prim_func
    def expected(A: T.Tensor((64,), "float32")):
        T.func_attr(
            {"tilecraft.role": "device", "tilecraft.host_function": "device", "tilecraft.bounds_check": True}
        )
        with T.Kernel(1, threads=64):
            for i in T.serial(64):
                A[i] = 1.0

    assert_pass(target, "mark-bounds-checks", device, expected, pass_configs={"tilecraft.bounds_check": True})


@pass_test("mark-bounds-checks", "c", "cuda -arch=sm_90a")
def test_without_the_pass_config_nothing_is_marked(target):
    """By default (no pass config) no function is marked: the checks cost nothing."""
    assert_pass(target, "mark-bounds-checks", device, UNCHANGED)
