"""infer-layouts, Before/Expected: every fragment gets a layout over the block's threads, and every
T.Parallel nest the partition of the fragment it writes or reads. Layouts print in a form for reading
(not parsed back), so the expected IR is text. On CUDA the input carries what select-gemm-instructions
records ahead of it (each gemm's plan, the function's wgmma path)."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.testing.passes import assert_pass, pass_test, pipeline_of, run_pass

SELECT = "select-gemm-instructions"
NO_WGMMA = "T.func_attr({'tilecraft.cuda.wgmma': False})"
ACC_16X16 = (
    "T.ir.TileLayout(shape=(16, 16), linear=T.ir.LinearLayout(bases={'register': ((0, 1), (8, 0), (0, 8)), "
    "'lane': ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)), 'warp': ()}, out_dims={'dim0': 16, 'dim1': 16}))"
)


def _selected(target, kernel):
    """The kernel as infer-layouts gets it: with select-gemm-instructions' record where the pipeline has it."""
    pipeline, _ = pipeline_of(target)
    return run_pass(target, SELECT, kernel) if SELECT in pipeline.pass_names else kernel


@pass_test("infer-layouts", SM80, OPENCL, WEBGPU)
def test_a_fragment_and_the_nests_over_it_share_the_default_layout(target):
    """A fragment without a constraint gets the default layout, and each nest over it that partition."""
    # A 128-element fragment over 128 threads: one register each, lanes then warps; both T.Parallel
    # nests over it carry that layout as their thread partition.

    @T.prim_func
    def scale(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            f = T.alloc_fragment((128,), "float32")
            for i in T.Parallel(128):
                f[i] = A[bx * 128 + i] * 2.0
            for i in T.Parallel(128):
                B[bx * 128 + i] = f[i]

    expected = """
    @T.prim_func
    def scale(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        <ATTR>
        with T.Kernel(2, threads=128) as bx:
            f = T.alloc_fragment((128,), "float32")
            T.annotate_layout({f: T.ir.TileLayout(shape=(128,), linear=T.ir.LinearLayout(bases={'register': (), 'lane': ((1,), (2,), (4,), (8,), (16,)), 'warp': ((32,), (64,))}, out_dims={'dim0': 128}))})
            for i in T.Parallel(128, annotations={'layout': T.ir.TileLayout(shape=(128,), linear=T.ir.LinearLayout(bases={'register': (), 'lane': ((1,), (2,), (4,), (8,), (16,)), 'warp': ((32,), (64,))}, out_dims={'dim0': 128}))}):
                f[i] = A[bx * 128 + i] * 2.0
            for i_1 in T.Parallel(128, annotations={'layout': T.ir.TileLayout(shape=(128,), linear=T.ir.LinearLayout(bases={'register': (), 'lane': ((1,), (2,), (4,), (8,), (16,)), 'warp': ((32,), (64,))}, out_dims={'dim0': 128}))}):
                B[bx * 128 + i_1] = f[i_1]
    """

    expected = expected.replace("<ATTR>", NO_WGMMA if target == SM80 else "")
    assert_pass(target, "infer-layouts", _selected(target, scale), expected)


@pass_test("infer-layouts", SM80)
def test_a_gemm_accumulator_gets_the_mma_layout_and_its_operand_tiles_a_swizzle(target):
    """A gemm imposes the mma layout on its accumulator, the nests over it follow, its tiles are swizzled."""
    # m16n8k16 on one warp: 8 accumulator registers a thread in the mma layout; the nest reading it
    # follows that layout; the shared operand tiles get the 16-bit swizzle.

    @T.prim_func
    def mma(
        A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")
    ):
        with T.Kernel(1, threads=32):
            As = T.alloc_shared((16, 16), "float16")
            Bs = T.alloc_shared((16, 16), "float16")
            Cf = T.alloc_fragment((16, 16), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cf, clear_accum=True)
            for i, j in T.Parallel(16, 16):
                C[i, j] = Cf[i, j]

    expected = """
    @T.prim_func
    def mma(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
        <ATTR>
        with T.Kernel(1, threads=32) as bx:
            As = T.alloc_shared((16, 16), "float16")
            T.annotate_layout({As: T.ir.cuda.SharedLayout()})
            Bs = T.alloc_shared((16, 16), "float16")
            T.annotate_layout({Bs: T.ir.cuda.SharedLayout()})
            Cf = T.alloc_fragment((16, 16), "float32")
            T.annotate_layout({Cf: T.ir.TileLayout(shape=(16, 16), linear=T.ir.LinearLayout(bases={'register': ((0, 1), (8, 0), (0, 8)), 'lane': ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)), 'warp': ()}, out_dims={'dim0': 16, 'dim1': 16}))})
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cf, clear_accum=True, annotations={'gemm_plan': <PLAN>})
            for i in T.Parallel(16, annotations={'layout': T.ir.TileLayout(shape=(16, 16), linear=T.ir.LinearLayout(bases={'register': ((0, 1), (8, 0), (0, 8)), 'lane': ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)), 'warp': ()}, out_dims={'dim0': 16, 'dim1': 16}))}):
                for j in T.Parallel(16):
                    C[i, j] = Cf[i, j]
    """

    plan = ("T.ir.cuda.GemmPlan(m=16, n=16, k=16, warps_m=1, warps_n=1, tensor_cores=True, variant='ss', "
            f"c_layout={ACC_16X16}, a_layout=None)")  # fmt: skip
    expected = expected.replace("<ATTR>", NO_WGMMA).replace("<PLAN>", plan)
    assert_pass(target, "infer-layouts", _selected(target, mma), expected)


@pass_test("infer-layouts", SM80, OPENCL, WEBGPU)
def test_a_reduction_over_a_short_outer_dim_keeps_that_dim_in_each_thread(target):
    """The source of a max over 4 rows (the split-KV combine's lse) holds each column's 4 rows in one thread:
    the reduction stays in registers and the result is one element a thread, no copies."""

    @T.prim_func
    def combine(L: T.Tensor((4, 32), "float32"), M: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            lse = T.alloc_fragment((4, 32), "float32")
            m = T.alloc_fragment((32,), "float32")
            T.copy(L, lse)
            T.reduce_max(lse, m, dim=0)
            T.copy(m, M)

    expected = """
    @T.prim_func
    def combine(L: T.Tensor((4, 32), "float32"), M: T.Tensor((32,), "float32")):
        <ATTR>
        with T.Kernel(1, threads=32) as bx:
            lse = T.alloc_fragment((4, 32), "float32")
            T.annotate_layout({lse: T.ir.TileLayout(shape=(4, 32), linear=T.ir.LinearLayout(bases={'register': ((1, 0), (2, 0)), 'lane': ((0, 1), (0, 2), (0, 4), (0, 8), (0, 16)), 'warp': ()}, out_dims={'dim0': 4, 'dim1': 32}))})
            m = T.alloc_fragment((32,), "float32")
            T.annotate_layout({m: T.ir.TileLayout(shape=(32,), linear=T.ir.LinearLayout(bases={'register': (), 'lane': ((1,), (2,), (4,), (8,), (16,)), 'warp': ()}, out_dims={'dim0': 32}))})
            T.copy(L, lse)
            T.reduce_max(lse, m, dim=0)
            T.copy(m, M)
    """

    expected = expected.replace("<ATTR>", NO_WGMMA if target == SM80 else "")
    assert_pass(target, "infer-layouts", _selected(target, combine), expected)


@pass_test("infer-layouts", SM80, OPENCL, WEBGPU)
def test_a_fragment_read_at_a_halved_index_holds_what_each_thread_reads(target):
    """`q[i, j // 2]` in a nest over (i, j) (two 4-bit codes a byte) lays q out as the nest with j's low bit
    dropped: each thread holds the bytes its iterations unpack, once (the register that walked j's low
    bit is gone)."""

    @T.prim_func
    def unpack(Q: T.Tensor((32, 16), "uint8"), W: T.Tensor((32, 32), "int8")):
        with T.Kernel(1, threads=32):
            q = T.alloc_fragment((32, 16), "uint8")
            w = T.alloc_fragment((32, 32), "int8")
            T.copy(Q, q)
            for i, j in T.Parallel(32, 32):
                w[i, j] = T.reinterpret("int8", ((q[i, j // 2] >> ((j % 2) * 4).astype("uint8")) & T.uint8(15)) << T.uint8(4)) >> T.int8(4)
            T.copy(w, W)

    expected = """
    @T.prim_func
    def unpack(Q: T.Tensor((32, 16), "uint8"), W: T.Tensor((32, 32), "int8")):
        <ATTR>
        with T.Kernel(1, threads=32) as bx:
            q = T.alloc_fragment((32, 16), "uint8")
            T.annotate_layout({q: T.ir.TileLayout(shape=(32, 16), linear=T.ir.LinearLayout(bases={'register': ((0, 1), (0, 2), (0, 4), (16, 0)), 'lane': ((0, 8), (1, 0), (2, 0), (4, 0), (8, 0)), 'warp': ()}, out_dims={'dim0': 32, 'dim1': 16}))})
            w = T.alloc_fragment((32, 32), "int8")
            T.annotate_layout({w: T.ir.TileLayout(shape=(32, 32), linear=T.ir.LinearLayout(bases={'register': ((0, 1), (0, 2), (0, 4), (0, 8), (16, 0)), 'lane': ((0, 16), (1, 0), (2, 0), (4, 0), (8, 0)), 'warp': ()}, out_dims={'dim0': 32, 'dim1': 32}))})
            T.copy(Q, q)
            for i in T.Parallel(32, annotations={'layout': T.ir.TileLayout(shape=(32, 32), linear=T.ir.LinearLayout(bases={'register': ((0, 1), (0, 2), (0, 4), (0, 8), (16, 0)), 'lane': ((0, 16), (1, 0), (2, 0), (4, 0), (8, 0)), 'warp': ()}, out_dims={'dim0': 32, 'dim1': 32}))}):
                for j in T.Parallel(32):
                    w[i, j] = T.reinterpret((q[i, j // 2] >> T.cast(j % 2 * 4, "uint8") & 15) << 4, "int8") >> 4
            T.copy(w, W)
    """

    expected = expected.replace("<ATTR>", NO_WGMMA if target == SM80 else "")
    assert_pass(target, "infer-layouts", _selected(target, unpack), expected)
