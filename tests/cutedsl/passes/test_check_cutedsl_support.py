"""check-cutedsl-support, Before/Expected: a kernel the CuTe DSL codegen emits passes through unchanged;
what it does not emit stops lowering at the kernel's line, with the target and what to use instead."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tests.cuda.passes.kernels import staged
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass

CUTEDSL = "cuda -arch=sm_90a -backend=cutedsl"


@pass_test("check-cutedsl-support", CUTEDSL)
def test_a_kernel_the_variant_emits_passes_unchanged(target):
    """A pipelined float32 reduction over shared memory: nothing to refuse, nothing changed."""
    assert_pass(target, "check-cutedsl-support", staged, UNCHANGED)


@T.prim_func
def atomic_sum(A: T.Tensor((128,), "float32"), Total: T.Tensor((1,), "float32")):
    with T.Kernel(1, threads=128) as bx:
        T.atomic_add(Total[0], A[bx])


@T.prim_func
def float64_copy(A: T.Tensor((128,), "float64"), B: T.Tensor((128,), "float64")):
    with T.Kernel(1, threads=128):
        for i in T.Parallel(128):
            B[i] = A[i]


def test_an_atomic_is_refused_with_the_cuda_backend_as_the_way_out():
    with pytest.raises(LoweringError, match="atomic update") as info:
        run_pass(CUTEDSL, "check-cutedsl-support", atomic_sum)
    message = str(info.value)
    assert "target='cuda'" in message and "T.atomic_add(Total[0], A[bx])" in message


def test_a_float64_buffer_is_refused():
    with pytest.raises(LoweringError, match="buffer A of float64"):
        run_pass(CUTEDSL, "check-cutedsl-support", float64_copy)
