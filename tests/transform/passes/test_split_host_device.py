"""split-host-device, Before/Expected: each T.Kernel becomes a device function; the host function launches
them in order (every backend's pipeline ends with this split)."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("split-host-device", "c", SM80, OPENCL, WEBGPU)
def test_each_kernel_is_a_device_function_launched_in_order_by_the_host(target):
    """Each T.Kernel is a device function; the host function launches them in order."""
    # Two launches: two device functions, each taking the parameters it uses, launched one after the
    # other by the host function with their grids and block sizes.

    @T.prim_func
    def twice(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32"), n: T.int32):
        with T.Kernel(2, threads=64) as bx:
            for i in T.serial(64):
                B[bx * 64 + i] = A[bx * 64 + i] * 2.0
        with T.Kernel(1, threads=128):
            for i in T.serial(128):
                A[i] = B[127 - i] + T.cast(n, "float32")

    expected = """
    @T.prim_func
    def twice(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32"), n: T.int32):
        T.func_attr({'tilecraft.role': 'host'})
        T.ir.KernelCall(symbol='twice_kernel0', args=(A, B), grid=(2,), threads=(64,))
        T.ir.KernelCall(symbol='twice_kernel1', args=(A, B, n), grid=(1,), threads=(128,))

    @T.prim_func
    def twice_kernel0(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        T.func_attr({'tilecraft.role': 'device', 'tilecraft.host_function': 'twice'})
        with T.Kernel(2, threads=64) as bx:
            for i in T.serial(64):
                B[bx * 64 + i] = A[bx * 64 + i] * 2.0

    @T.prim_func
    def twice_kernel1(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32"), n: T.int32):
        T.func_attr({'tilecraft.role': 'device', 'tilecraft.host_function': 'twice'})
        with T.Kernel(1, threads=128) as bx:
            for i in T.serial(128):
                A[i] = B[127 - i] + T.cast(n, "float32")
    """

    assert_pass(target, "split-host-device", twice, expected)
