"""Storage is planned once: each backend's storage pass records every arena buffer's offset on the kernel
(`tilecraft.arena_offsets`), and codegen prints the offsets it finds there instead of planning again."""

from __future__ import annotations

import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.backend.errors import PassError
from tilecraft.ir import IRModule
from tilecraft.transform.storage import OFFSETS_ATTR, STORAGE_ATTR

TARGETS = {
    "c": ("c", "cc", "c-source", "tc_scratch + {}"),
    "cuda": ("cuda -arch=sm_80", "nvrtc", "cuda-source", "tc_smem + {}"),
    "opencl": ("opencl -fp64=true", "opencl", "opencl-source", "tc_smem + {}"),
}


def shared_pair():
    @T.prim_func
    def shared_pair(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            a = T.alloc_shared((64,), "float32")
            b = T.alloc_shared((64,), "float16")
            T.copy(A, a)
            T.copy(a, b)
            T.copy(b, B)

    return shared_pair


def lowered(target_name: str):
    target, execution, _, _ = TARGETS[target_name]
    ctx = tilecraft.create_backend_context(target, None, execution, require_available=False)
    _, device = ctx.split(ctx.lower(IRModule.from_func(shared_pair())))
    return ctx, device


@pytest.mark.parametrize("target_name", TARGETS)
def test_the_storage_pass_records_each_arena_buffers_offset(target_name):
    _, device = lowered(target_name)
    (kernel,) = device.functions
    plan = dict(kernel.attr(OFFSETS_ATTR))
    assert plan["a"] == 0 and plan["b"] >= 64 * 4  # live together: b after a
    assert kernel.attr(STORAGE_ATTR) >= plan["b"] + 64 * 2


@pytest.mark.parametrize("target_name", TARGETS)
def test_codegen_prints_the_planned_offsets(target_name):
    """Moving b in the plan moves it in the code: codegen reads the plan rather than planning again."""
    ctx, device = lowered(target_name)
    fmt, spelling = TARGETS[target_name][2], TARGETS[target_name][3]
    (kernel,) = device.functions
    plan = dict(kernel.attr(OFFSETS_ATTR))
    moved = kernel.with_attr(OFFSETS_ATTR, (("a", plan["a"]), ("b", plan["b"] + 1024)))
    before = ctx.codegen_device(device, compile=False).sources[fmt]
    after = ctx.codegen_device(device.with_functions([moved]), compile=False).sources[fmt]
    assert spelling.format(plan["b"]) in before and spelling.format(plan["b"] + 1024) not in before
    assert spelling.format(plan["b"] + 1024) in after


@pytest.mark.parametrize("target_name", TARGETS)
def test_a_plan_that_does_not_match_the_kernel_is_an_internal_error(target_name):
    ctx, device = lowered(target_name)
    (kernel,) = device.functions
    for stale in (kernel.with_attr(OFFSETS_ATTR, (("a", 0),)), kernel.with_attr(OFFSETS_ATTR, None)):
        with pytest.raises(PassError, match="the storage plan does not match the kernel"):
            ctx.codegen_device(device.with_functions([stale]), compile=False)
