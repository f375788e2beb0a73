"""plan-local-memory (OpenCL), Before/Expected: shared buffers get offsets in the block's local memory,
reused once a buffer's scope ends; the device function and its launch carry the size. The Before is the pass's
printed input: the host function's kernel calls and the device function after the earlier passes."""

from __future__ import annotations

from tests.transform.helpers import OPENCL
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("plan-local-memory", OPENCL)
def test_tiles_used_one_after_the_other_share_their_bytes(target):
    """`a` and `b` (512 bytes each) are never live together: the block needs 512 bytes, not 1024."""

    two_tiles = """
    @T.prim_func
    def two_tiles(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        T.func_attr({'tilecraft.role': 'host'})
        T.ir.KernelCall(symbol='two_tiles_kernel0', args=(A, B), grid=(1,), threads=(128,))

    @T.prim_func
    def two_tiles_kernel0(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        T.func_attr({'tilecraft.role': 'device', 'tilecraft.host_function': 'two_tiles'})
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            with T.ir.scope():
                a = T.alloc_shared((128,), "float32")
                a[tx] = A[tx]
                T.sync_threads()
                B[tx] = a[127 - tx]
            T.sync_threads()
            b = T.alloc_shared((128,), "float32")
            b[tx] = B[tx] * 2.0
            T.sync_threads()
            B[tx] = b[127 - tx]
    """

    expected = """
    @T.prim_func
    def two_tiles(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        T.func_attr({'tilecraft.role': 'host'})
        T.ir.KernelCall(symbol='two_tiles_kernel0', args=(A, B), grid=(1,), threads=(128,), dynamic_smem=512)

    @T.prim_func
    def two_tiles_kernel0(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        T.func_attr({'tilecraft.role': 'device', 'tilecraft.host_function': 'two_tiles', 'tilecraft.arena_bytes': 512, 'tilecraft.arena_offsets': (('a', 0), ('b', 0))})
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            with T.ir.scope():
                a = T.alloc_shared((128,), "float32")
                a[tx] = A[tx]
                T.sync_threads()
                B[tx] = a[127 - tx]
            T.sync_threads()
            b = T.alloc_shared((128,), "float32")
            b[tx] = B[tx] * 2.0
            T.sync_threads()
            B[tx] = b[127 - tx]
    """

    assert_pass(target, "plan-local-memory", two_tiles, expected)
