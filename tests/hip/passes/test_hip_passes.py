"""The HIP pipeline's own behaviour, Before/Expected: MFMA accumulator layouts at wavefront 64, lane
exchanges over all six lane bits, the support check, and LDS planning."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass

HIP = "hip -arch=gfx942"


@T.prim_func
def mfma_gemm(
    A: T.Tensor((32, 32), "float16"), B: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")
):
    with T.Kernel(1, threads=128):
        As = T.alloc_shared((32, 32), "float16")
        Bs = T.alloc_shared((32, 32), "float16")
        Cf = T.alloc_fragment((32, 32), "float32")
        T.copy(A, As)
        T.copy(B, Bs)
        T.gemm(As, Bs, Cf, clear_accum=True)
        T.copy(Cf, C)


@pass_test("infer-layouts", HIP)
def test_a_gemm_accumulator_gets_the_mfma_layout_over_wavefronts_of_64(target):
    """An f16 gemm's accumulator takes the MFMA 16x16 layout: 6 lane bits, wavefronts stacked by rows;
    its shared operand tiles take the LDS swizzle."""
    # Two wavefronts split the 32 rows (16 each) and each holds two 16x16 tiles: registers i -> rows
    # 1, 2 and the tile -> col 16; lanes 0-3 -> cols 1..8, lanes 4-5 -> rows 4, 8; the wave -> row 16.
    # The 32 x 32 float16 tiles have 64-byte rows, so their swizzle keys on the 128-byte line (bit 6).
    expected = """
    @T.prim_func
    def mfma_gemm(A: T.Tensor((32, 32), "float16"), B: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((32, 32), "float16")
            T.annotate_layout({As: T.ir.hip.LdsLayout(element_bytes=2, line_shift=6)})
            Bs = T.alloc_shared((32, 32), "float16")
            T.annotate_layout({Bs: T.ir.hip.LdsLayout(element_bytes=2, line_shift=6)})
            Cf = T.alloc_fragment((32, 32), "float32")
            T.annotate_layout({Cf: T.ir.TileLayout(shape=(32, 32), linear=T.ir.LinearLayout(bases={'register': ((1, 0), (2, 0), (0, 16)), 'lane': ((0, 1), (0, 2), (0, 4), (0, 8), (4, 0), (8, 0)), 'warp': ((16, 0),)}, out_dims={'dim0': 32, 'dim1': 32}))})
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cf, clear_accum=True)
            T.copy(Cf, C)
    """  # noqa: E501
    assert_pass(target, "infer-layouts", mfma_gemm, expected)


@T.prim_func
def row_sums(A: T.Tensor((2, 256), "float32"), S: T.Tensor((2,), "float32")):
    with T.Kernel(1, threads=128):
        t = T.alloc_fragment((2, 256), "float32")
        s = T.alloc_fragment((2,), "float32")
        T.copy(A, t)
        T.reduce_sum(t, s, dim=1)
        T.copy(s, S)


@pass_test("lower-to-threads", HIP)
def test_a_row_spread_over_a_wavefront_is_summed_by_six_lane_exchanges(target):
    """A row held by the 64 lanes of one wavefront is summed in registers, then by lane_xor 1 ... 32."""
    expected = """
    @T.prim_func
    def row_sums(A: T.Tensor((2, 256), "float32"), S: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            t = T.alloc_local((4,), "float32")
            s = T.alloc_local((1,), "float32")
            for r1 in T.serial(4, annotations={'unroll': True}):
                t[r1] = A[tx // 64, r1 + tx % 64 * 4]
            with T.ir.scope():
                red0 = T.alloc_var("float32")
                red0 = 0.0
                red0 = red0 + t[0]
                red0 = red0 + t[1]
                red0 = red0 + t[2]
                red0 = red0 + t[3]
                red0 = red0 + T.call_intrin("float32", 'lane_xor', red0, 1)
                red0 = red0 + T.call_intrin("float32", 'lane_xor', red0, 2)
                red0 = red0 + T.call_intrin("float32", 'lane_xor', red0, 4)
                red0 = red0 + T.call_intrin("float32", 'lane_xor', red0, 8)
                red0 = red0 + T.call_intrin("float32", 'lane_xor', red0, 16)
                red0 = red0 + T.call_intrin("float32", 'lane_xor', red0, 32)
                s[0] = red0
            for r2 in T.serial(1, annotations={'unroll': True}):
                if tx % 64 & 63 == 0:
                    S[tx // 64] = s[0]
    """
    assert_pass(target, "lower-to-threads", row_sums, expected, prefix=True, as_text=True)


@pass_test("check-target-support", HIP)
def test_a_kernel_within_the_lds_and_without_device_library_calls_passes_unchanged(target):
    """8 KiB of LDS, float16 MFMA operands and no float64 math: unchanged."""
    assert_pass(target, "check-target-support", mfma_gemm, UNCHANGED)


def test_float64_transcendentals_are_refused_with_the_declared_limit():
    @T.prim_func
    def exp64(A: T.Tensor((64,), "float64"), B: T.Tensor((64,), "float64")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                B[i] = T.exp(A[i])

    with pytest.raises(LoweringError, match="T.exp of a float64 value.*ocml") as info:
        run_pass(HIP, "check-target-support", exp64)
    assert info.value.unsupported == "feature:float64-math"


def test_print_is_refused_with_the_declared_limit():
    @T.prim_func
    def printing(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            T.print(A[0], msg="a")

    with pytest.raises(LoweringError, match="T.print is not supported") as info:
        run_pass(HIP, "check-target-support", printing)
    assert info.value.unsupported == "feature:print"


def test_lds_past_the_target_budget_is_refused_at_the_allocation():
    with pytest.raises(LoweringError, match="LDS") as info:
        run_pass("hip -arch=gfx942 -lds=3072", "check-target-support", mfma_gemm)
    assert info.value.unsupported == "resource:lds" and "T.alloc_shared((32, 32)" in str(info.value)


@pass_test("plan-lds", HIP)
def test_lds_tiles_used_one_after_the_other_share_their_bytes(target):
    """`a` and `b` (512 bytes each) are never live together: the work-group needs 512 bytes of LDS."""

    @T.prim_func
    def two_tiles(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            a = T.alloc_shared((128,), "float32")
            b = T.alloc_shared((128,), "float32")
            a[tx] = A[tx]
            B[tx] = a[127 - tx]
            b[tx] = B[tx] * 2.0
            B[tx] = b[127 - tx]

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
    """  # noqa: E501
    assert_pass(target, "plan-lds", two_tiles, expected, prefix=True)
