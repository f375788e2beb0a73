"""plan-block-storage (CPU), Before/Expected: each kernel's on-chip buffers get offsets in the worker's
scratch; the device function and its launch carry the size. The Before is the pass's
printed input: the host function's kernel calls and the device function after the earlier passes."""

from __future__ import annotations

from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("plan-block-storage", "c")
def test_the_scratch_size_is_the_tiles_bytes_and_the_launch_carries_it(target):
    """One 8 x 16 float32 tile: 512 bytes of scratch, on the device function and its kernel call; its offset (0) is in the plan codegen reads."""

    tileops = """
    @T.prim_func
    def tileops(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8, 16), "float32")):
        T.func_attr({'tilecraft.role': 'host'})
        T.ir.KernelCall(symbol='tileops_kernel0', args=(A, B), grid=(1,), threads=(128,))

    @T.prim_func
    def tileops_kernel0(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8, 16), "float32")):
        T.func_attr({'tilecraft.role': 'device', 'tilecraft.host_function': 'tileops'})
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((8, 16), "float32")
            for i0, i1 in T.Parallel(8, 16):
                s[i0, i1] = 0.0
            for i0_1, i1_1 in T.Parallel(8, 16):
                s[i0_1, i1_1] = A[i0_1, i1_1]
            for i0_2, i1_2 in T.Parallel(8, 16):
                B[i0_2, i1_2] = s[i0_2, i1_2]
    """

    expected = """
    @T.prim_func
    def tileops(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8, 16), "float32")):
        T.func_attr({'tilecraft.role': 'host'})
        T.ir.KernelCall(symbol='tileops_kernel0', args=(A, B), grid=(1,), threads=(128,), dynamic_smem=512)

    @T.prim_func
    def tileops_kernel0(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8, 16), "float32")):
        T.func_attr({'tilecraft.role': 'device', 'tilecraft.host_function': 'tileops', 'tilecraft.arena_bytes': 512, 'tilecraft.arena_offsets': (('s', 0),)})
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((8, 16), "float32")
            for i0, i1 in T.Parallel(8, 16):
                s[i0, i1] = 0.0
            for i0_1, i1_1 in T.Parallel(8, 16):
                s[i0_1, i1_1] = A[i0_1, i1_1]
            for i0_2, i1_2 in T.Parallel(8, 16):
                B[i0_2, i1_2] = s[i0_2, i1_2]
    """

    assert_pass(target, "plan-block-storage", tileops, expected)
