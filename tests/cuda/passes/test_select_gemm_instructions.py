"""select-gemm-instructions (CUDA), Before/Expected: every T.gemm carries its GemmPlan (annotation
"gemm_plan": variant, warp grid, accumulator and register-A layouts) and every function whether it takes
the sm_90a path (attribute "tilecraft.cuda.wgmma"). On sm_90a a gemm that fits wgmma takes it; sm_80,
tl.disable_wgmma and the CuTe DSL variant plan mma.sync; a register-A gemm that wgmma cannot take, or a
shared tile two gemms would read in different layouts, keeps the whole function on mma.sync. The passes
after it read the record: lowering a gemm without one is an internal error naming this pass."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tests.cuda.passes.kernels import SM90A, tma_gemm
from tilecraft.backend.errors import PassError
from tilecraft.testing.passes import assert_pass, pass_test, run_pass

SM80 = "cuda -arch=sm_80"
CUTEDSL = "cuda -arch=sm_90a -backend=cutedsl"

_MMA_64 = (
    "T.ir.TileLayout(shape=(64, 64), linear=T.ir.LinearLayout(bases={'register': ((0, 1), (8, 0), (0, 8), "
    "(0, 16), (16, 0)), 'lane': ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)), 'warp': ((0, 32), (32, 0))}, "
    "out_dims={'dim0': 64, 'dim1': 64}))"
)
_WGMMA_64 = (
    "T.ir.TileLayout(shape=(64, 64), linear=T.ir.LinearLayout(bases={'register': ((0, 1), (8, 0), (0, 8), "
    "(0, 16), (0, 32)), 'lane': ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)), 'warp': ((16, 0), (32, 0))}, "
    "out_dims={'dim0': 64, 'dim1': 64}))"
)


def _tma_gemm(wgmma: bool, plan: str) -> str:
    return f"""
    @T.prim_func
    def _(A: T.Tensor((64, 128), "float16"), B: T.Tensor((128, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        T.func_attr({{'tilecraft.cuda.wgmma': {wgmma}}})
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 64), "float16")
            Bs = T.alloc_shared((64, 64), "float16")
            Cf = T.alloc_fragment((64, 64), "float32")
            T.fill(Cf, 0.0)
            for k in T.Pipelined(2, num_stages=2):
                T.copy(A[:64, k * 64:k * 64 + 64], As)
                T.copy(B[k * 64:k * 64 + 64, :64], Bs)
                T.gemm(As, Bs, Cf, annotations={{'gemm_plan': {plan}}})
            T.copy(Cf, C)
    """


_SS_2X2 = (
    "T.ir.cuda.GemmPlan(m=64, n=64, k=64, warps_m=2, warps_n=2, tensor_cores=True, variant='ss', "
    f"c_layout={_MMA_64}, a_layout=None)"
)


@pass_test("select-gemm-instructions", SM90A)
def test_a_gemm_that_fits_wgmma_takes_it_on_sm_90a(target):
    """64x64x64 at 128 threads: one warpgroup of wgmma, 64-element swizzle atoms, the function on sm_90a's path."""
    plan = ("T.ir.cuda.GemmPlan(m=64, n=64, k=64, warps_m=1, warps_n=1, tensor_cores=True, variant='wgmma', "
            f"c_layout={_WGMMA_64}, a_layout=None, atom_a=64, atom_b=64)")  # fmt: skip
    assert_pass(target, "select-gemm-instructions", tma_gemm, _tma_gemm(True, plan))


@pass_test("select-gemm-instructions", SM80)
def test_sm_80_plans_mma_sync(target):
    """Without wgmma the gemm is a 2x2 grid of warps on mma.sync reading shared A and B ("ss")."""
    assert_pass(target, "select-gemm-instructions", tma_gemm, _tma_gemm(False, _SS_2X2))


@pass_test("select-gemm-instructions", SM90A)
def test_disable_wgmma_plans_mma_sync_on_sm_90a(target):
    """tl.disable_wgmma: the sm_80 plan on sm_90a, and the function off the wgmma / TMA path."""
    assert_pass(target, "select-gemm-instructions", tma_gemm, _tma_gemm(False, _SS_2X2),
                pass_configs={"tl.disable_wgmma": True})  # fmt: skip


@pass_test("select-gemm-instructions", CUTEDSL)
def test_the_cutedsl_variant_plans_mma_sync_on_sm_90a(target):
    """The CuTe DSL pipeline emits no wgmma: its gemms are planned for mma.sync on every arch."""
    assert_pass(target, "select-gemm-instructions", tma_gemm, _tma_gemm(False, _SS_2X2))


@T.prim_func
def register_a_off_wgmma(
    Q: T.Tensor((64, 64), "float16"),
    K: T.Tensor((64, 64), "float16"),
    V: T.Tensor((2, 64, 64), "float16"),
    Out: T.Tensor((64, 64), "float32"),
):
    with T.Kernel(1, threads=128):
        q = T.alloc_shared((64, 64), "float16")
        k = T.alloc_shared((64, 64), "float16")
        v = T.alloc_shared((2, 64, 64), "float16")
        s = T.alloc_fragment((64, 64), "float32")
        p = T.alloc_fragment((64, 64), "float16")
        o = T.alloc_fragment((64, 64), "float32")
        T.copy(Q, q)
        T.copy(K, k)
        T.copy(V, v)
        T.gemm(q, k, s, transpose_B=True, clear_accum=True)
        T.copy(s, p)
        T.gemm(p, v[1, :, :], o, clear_accum=True)
        T.copy(o, Out)


@pass_test("select-gemm-instructions", SM90A)
def test_a_register_a_gemm_off_wgmma_keeps_the_function_on_mma_sync(target):
    """P @ V reads B from a stack of tiles, which wgmma does not take: left on mma.sync its register A needs
    the mma layout, so Q @ K^T, whose accumulator becomes P, is planned for mma.sync too ("ss", "rs")."""
    mma_a = (
        "T.ir.TileLayout(shape=(64, 64), linear=T.ir.LinearLayout(bases={'register': ((0, 1), (8, 0), (0, 8), "
        "(0, 16), (0, 32), (16, 0)), 'lane': ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)), 'warp': ((0, 0), "
        "(32, 0))}, out_dims={'dim0': 64, 'dim1': 64}))"
    )
    expected = f"""
    @T.prim_func
    def _(Q: T.Tensor((64, 64), "float16"), K: T.Tensor((64, 64), "float16"), V: T.Tensor((2, 64, 64), "float16"), Out: T.Tensor((64, 64), "float32")):
        T.func_attr({{'tilecraft.cuda.wgmma': False}})
        with T.Kernel(1, threads=128) as bx:
            q = T.alloc_shared((64, 64), "float16")
            k = T.alloc_shared((64, 64), "float16")
            v = T.alloc_shared((2, 64, 64), "float16")
            s = T.alloc_fragment((64, 64), "float32")
            p = T.alloc_fragment((64, 64), "float16")
            o = T.alloc_fragment((64, 64), "float32")
            T.copy(Q, q)
            T.copy(K, k)
            T.copy(V, v)
            T.gemm(q, k, s, transpose_B=True, clear_accum=True, annotations={{'gemm_plan': {_SS_2X2}}})
            T.copy(s, p)
            T.gemm(p, v[1, :64, :64], o, clear_accum=True, annotations={{'gemm_plan': T.ir.cuda.GemmPlan(m=64, n=64, k=64, warps_m=2, warps_n=2, tensor_cores=True, variant='rs', c_layout={_MMA_64}, a_layout={mma_a})}})
            T.copy(o, Out)
    """
    assert_pass(target, "select-gemm-instructions", register_a_off_wgmma, expected)


@T.prim_func
def tile_read_two_ways(
    K: T.Tensor((64, 64), "float16"), Q: T.Tensor((32, 64), "float16"), D: T.Tensor((32, 64), "float32")
):
    with T.Kernel(1, threads=128):
        k = T.alloc_shared((64, 64), "float16")
        q = T.alloc_shared((32, 64), "float16")
        s = T.alloc_fragment((64, 32), "float32")
        s_shared = T.alloc_shared((64, 32), "float16")
        d = T.alloc_fragment((32, 64), "float32")
        T.copy(K, k)
        T.copy(Q, q)
        T.gemm(k, q, s, transpose_B=True, clear_accum=True)
        T.copy(s, s_shared)
        T.gemm(s_shared, k, d, transpose_A=True, clear_accum=True)
        T.copy(d, D)


@pass_test("select-gemm-instructions", SM90A)
def test_a_shared_tile_read_by_wgmma_and_mma_takes_the_wgmma_layout(target):
    """k is A of a 64-row gemm (wgmma: its canonical layout) and B of a 32-row one (mma.sync only); a tile
    has one layout, so the mma.sync gemm reads k in wgmma's (its plan's atom_b) and the function keeps
    the sm_90a path."""
    c_64x32 = (
        "T.ir.TileLayout(shape=(64, 32), linear=T.ir.LinearLayout(bases={'register': ((0, 1), (8, 0), (0, 8), "
        "(0, 16)), 'lane': ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)), 'warp': ((16, 0), (32, 0))}, "
        "out_dims={'dim0': 64, 'dim1': 32}))"
    )
    c_32x64 = (
        "T.ir.TileLayout(shape=(32, 64), linear=T.ir.LinearLayout(bases={'register': ((0, 1), (8, 0), (0, 8), "
        "(0, 16)), 'lane': ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)), 'warp': ((0, 32), (16, 0))}, "
        "out_dims={'dim0': 32, 'dim1': 64}))"
    )
    expected = f"""
    @T.prim_func
    def _(K: T.Tensor((64, 64), "float16"), Q: T.Tensor((32, 64), "float16"), D: T.Tensor((32, 64), "float32")):
        T.func_attr({{'tilecraft.cuda.wgmma': True}})
        with T.Kernel(1, threads=128) as bx:
            k = T.alloc_shared((64, 64), "float16")
            q = T.alloc_shared((32, 64), "float16")
            s = T.alloc_fragment((64, 32), "float32")
            s_shared = T.alloc_shared((64, 32), "float16")
            d = T.alloc_fragment((32, 64), "float32")
            T.copy(K, k)
            T.copy(Q, q)
            T.gemm(k, q, s, transpose_B=True, clear_accum=True, annotations={{'gemm_plan': T.ir.cuda.GemmPlan(m=64, n=32, k=64, warps_m=1, warps_n=1, tensor_cores=True, variant='wgmma', c_layout={c_64x32}, a_layout=None, atom_a=64, atom_b=64)}})
            T.copy(s, s_shared)
            T.gemm(s_shared, k, d, transpose_A=True, clear_accum=True, annotations={{'gemm_plan': T.ir.cuda.GemmPlan(m=32, n=64, k=64, warps_m=2, warps_n=2, tensor_cores=True, variant='ss', c_layout={c_32x64}, a_layout=None, atom_b=64)}})
            T.copy(d, D)
    """
    assert_pass(target, "select-gemm-instructions", tile_read_two_ways, expected)


def test_a_gemm_laid_out_without_its_plan_is_an_internal_error_naming_the_pass():
    """infer-layouts and lower-to-threads read the record and never plan: a pipeline that skipped the
    pass (or a pass that dropped the record) is a compiler bug, reported as one."""
    with pytest.raises(
        PassError, match="has no attribute 'tilecraft.cuda.wgmma': the 'select-gemm-instructions'"
    ):
        run_pass(SM90A, "infer-layouts", tma_gemm)
    with pytest.raises(PassError, match="has no GemmPlan: the 'select-gemm-instructions' pass"):
        run_pass(SM90A, "infer-layouts", tma_gemm.with_attr("tilecraft.cuda.wgmma", True))
