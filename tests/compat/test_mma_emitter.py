"""TileLang's MMA macro emitter (tilecraft.compat.intrinsics): its attributes are TileLang's, its layout
helpers agree with the PTX layouts tilecraft's CUDA backend uses, a GEMM built with it computes the
float64 NumPy product (fused into one T.gemm where the K steps cover whole shared tiles, step by step
otherwise), lowers and compiles for sm_80 and sm_90a, and misuse fails with a located error."""

from __future__ import annotations

import shutil
import textwrap

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.compat.hook import UnmappedModuleError
from tilecraft.compat.intrinsics import (
    TensorCoreIntrinEmitter,
    get_ldmatrix_offset,
    get_mma_micro_size,
    get_swizzle_layout,
    make_mma_swizzle_layout,
)
from tilecraft.compat.intrinsics.layout import mma_layout
from tilecraft.cuda.intrinsics.mma_layouts import mma_accumulator_coords, mma_operand_a_coords
from tilecraft.errors import ParseError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.visitor import walk
from tilecraft.layout import Layout

# ---------------------------------------------------------------- the emitter's attributes


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        # example_gemm_intrinsics.py's configuration
        (dict(a_dtype="float16", b_dtype="float16", accum_dtype="float32", warp_row_tiles=64, warp_col_tiles=64,
              chunk=32),
         dict(micro_size_x=16, micro_size_y=16, micro_size_k=16, warp_rows=4, warp_cols=4, local_size_a=8,
              local_size_b=8, local_size_out=8, mma_prefix="m16n8k16", threads=128, a_dtype_abbrv="fp16",
              accum_dtype_abbrv="fp32")),
        (dict(a_dtype="int8", b_dtype="int8", accum_dtype="int32", warp_row_tiles=32, warp_col_tiles=32, chunk=64),
         dict(micro_size_k=32, mma_prefix="m16n8k32", local_size_a=16, local_size_b=16, local_size_out=8,
              warp_rows=2, warp_cols=2)),
        (dict(a_dtype="float32", b_dtype="float32", accum_dtype="float32", warp_row_tiles=32, warp_col_tiles=32,
              chunk=32),
         dict(micro_size_k=8, mma_prefix="m16n8k8", a_dtype_abbrv="tf32", b_dtype_abbrv="tf32", local_size_a=4)),
        (dict(warp_row_tiles=32, warp_col_tiles=8, block_row_warps=4, block_col_warps=1),
         dict(n_dim=8, micro_size_y=8, warp_cols=1, local_size_b=4, local_size_out=4, threads=128)),
        (dict(a_dtype="float64", b_dtype="float64", accum_dtype="float64", warp_row_tiles=16, warp_col_tiles=16,
              chunk=8),
         dict(M_DIM=8, micro_size_x=8, micro_size_y=8, micro_size_k=4, mma_prefix="m8n8k4", local_size_out=2)),
    ],
)  # fmt: skip
def test_attributes_are_tilelangs(kwargs, expected):
    emitter = TensorCoreIntrinEmitter(**kwargs)
    assert {name: getattr(emitter, name) for name in expected} == expected


def test_constructor_checks_are_tilelangs():
    with pytest.raises(ValueError, match="warp_row_tiles must be a positive multiple of 16"):
        TensorCoreIntrinEmitter()  # TileLang's defaults (8 x 8 warp tiles) fail there too
    with pytest.raises(ValueError, match="Unsupported dtype"):
        TensorCoreIntrinEmitter(a_dtype="uint16", warp_row_tiles=16, warp_col_tiles=16)
    with pytest.raises(UnmappedModuleError, match="split-K over thread groups"):
        TensorCoreIntrinEmitter(warp_row_tiles=16, warp_col_tiles=16, reduce_k=2)


def test_thread_binding_split_is_tilelangs():
    emitter = TensorCoreIntrinEmitter(
        block_row_warps=2, block_col_warps=4, warp_row_tiles=16, warp_col_tiles=16
    )
    # thread 32 * w + l: warp_m = w % 2, warp_n = w // 2 (TileLang's default order)
    assert emitter.extract_thread_binding(32 * 5 + 7) == (7, 2, 1)
    assert emitter.extract_thread_binding(32 * 5 + 7, is_m_first=True) == (7, 1, 1)


# ---------------------------------------------------------------- layout helpers


def test_mma_operand_and_accumulator_maps_agree_with_tilecrafts_ptx_layouts():
    """TileLang's (lane, register) maps of one m16n8k16 warp tile are the PTX figures that tilecraft's
    CUDA backend implements (tilecraft.cuda.intrinsics.mma_layouts)."""
    for lane in range(32):
        for reg in range(8):
            assert mma_layout.mma_load_a_32x8_to_shared_16x16_layout(lane, reg) == mma_operand_a_coords(
                lane, reg, 16, 16, 1, 1
            )
            assert mma_layout.mma_store_32x8_to_shared_16x16_layout(lane, reg) == mma_accumulator_coords(
                lane, reg, 16, 16, 1, 1
            )
            lane_of, reg_of = mma_layout.shared_16x16_to_mma_a_32x8_layout(
                *mma_operand_a_coords(lane, reg, 16, 16, 1, 1)
            )
            assert (lane_of, reg_of) == (lane, reg)


def test_ldmatrix_offsets_and_micro_sizes():
    assert get_ldmatrix_offset("A", 17, 3, 32, "float16") == (1, 11)
    assert get_ldmatrix_offset("B", 17, 3, 32, "float16", transposed=True) == (9, 3)
    assert get_ldmatrix_offset("A", 17, 3, 64, "int8") == (1, 19)
    with pytest.raises(ValueError, match="ldmatrix only supports"):
        get_ldmatrix_offset("A", 0, 0, 64, "int8", transposed=True)
    assert get_mma_micro_size("float16") == (16, 16, 16) and get_mma_micro_size("int8") == (16, 16, 32)


@pytest.mark.parametrize(
    ("row_size", "dtype"), [(64, "float16"), (32, "float16"), (16, "float16"), (64, "int8")]
)
def test_swizzle_permutes_the_16_byte_chunks_of_each_row(row_size, dtype):
    for row in range(16):
        placed = [get_swizzle_layout(row, col, row_size, dtype) for col in range(row_size)]
        assert all(r == row for _, r, _ in placed)
        assert (
            sorted((tile, col) for tile, _, col in placed) == sorted({(tile, col) for tile, _, col in placed})
            and len({(t, c) for t, _, c in placed}) == row_size
        )
    bits = 16 if dtype == "float16" else 8
    if row_size * bits // 8 >= 128:  # the 128-byte swizzle: chunk c of row r goes to c ^ (r % 8)
        per_chunk = 128 // bits
        assert get_swizzle_layout(3, 2 * per_chunk, row_size, dtype) == (0, 3, (2 ^ 3) * per_chunk)


def test_make_mma_swizzle_layout_gives_a_tilecraft_layout():
    tile = Buffer("A", (E.const(64), E.const(32)), T.float16, "shared.dyn")
    layout = make_mma_swizzle_layout(tile)
    assert isinstance(layout, Layout) and layout.shape == (64, 32) and len(layout.index) == 3
    narrow = Buffer("B", (E.const(64), E.const(8)), T.float16, "shared.dyn")
    identity = make_mma_swizzle_layout(narrow)
    assert [str(e) for e in identity.index] == [v.name for v in identity.vars]


# ---------------------------------------------------------------- GEMMs built with the emitter

POISON = {np.dtype(np.float32): np.float32(np.nan), np.dtype(np.int32): np.int32(-(2**31))}


def emitter_gemm(M, N, K, *, dtype="float16", accum="float32", a_t=False, b_t=True, store="2d", pad=0,
                 block=(64, 64, 32), warps=(2, 2), k_loop="serial"):  # fmt: skip
    """A GEMM written as TileLang's example_gemm_intrinsics.py writes it: tiles loaded into shared memory
    (T.copy: zero past the edges), the K steps of a tile through ldmatrix_a / ldmatrix_b / mma, the
    accumulator out through stmatrix. `pad` widens the shared tiles (their K steps then cover part of
    them only, so they are not fused into one gemm); `store` is "2d" or "4d" (stmatrix into shared, then
    T.copy out) or "global" (stmatrix into C at the block's tile)."""
    block_M, block_N, block_K = block
    emitter = TensorCoreIntrinEmitter(
        a_dtype=dtype, b_dtype=dtype, accum_dtype=accum, a_transposed=a_t, b_transposed=b_t,
        block_row_warps=warps[0], block_col_warps=warps[1], warp_row_tiles=block_M // warps[0],
        warp_col_tiles=block_N // warps[1], chunk=block_K,
    )  # fmt: skip
    mx, my, mk = emitter.micro_size_x, emitter.micro_size_y, emitter.micro_size_k
    a_shape, b_shape = ((K, M) if a_t else (M, K)), ((N, K) if b_t else (K, N))
    a_tile = (block_K, block_M + pad) if a_t else (block_M, block_K + pad)
    b_tile = (block_N, block_K + pad) if b_t else (block_K, block_N + pad)
    c_tile = {"4d": (block_M // mx, block_N // my, mx, my), "region": (block_M + 8, block_N)}.get(
        store, (block_M, block_N)
    )
    steps = T.serial if k_loop == "serial" else T.unroll

    @tilecraft.jit  # names its annotations read come as Python defaults (the parser sees no closure for them)
    def gemm(A, B, C, a_shape=a_shape, b_shape=b_shape, dtype=dtype, accum=accum, M=M, N=N):
        A: T.Tensor(a_shape, dtype)
        B: T.Tensor(b_shape, dtype)
        C: T.Tensor((M, N), accum)
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=emitter.threads) as (bx, by):
            A_shared = T.alloc_shared(a_tile, dtype)
            B_shared = T.alloc_shared(b_tile, dtype)
            C_shared = T.alloc_shared(c_tile, accum)
            A_local = T.alloc_local((emitter.warp_rows * emitter.local_size_a), dtype)
            B_local = T.alloc_local((emitter.warp_cols * emitter.local_size_b), dtype)
            C_local = T.alloc_local((emitter.warp_rows * emitter.warp_cols * emitter.local_size_out), accum)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                if a_t:
                    T.copy(A[ko * block_K, by * block_M], A_shared[0:block_K, 0:block_M])
                else:
                    T.copy(A[by * block_M, ko * block_K], A_shared[0:block_M, 0:block_K])
                if b_t:
                    T.copy(B[bx * block_N, ko * block_K], B_shared[0:block_N, 0:block_K])
                else:
                    T.copy(B[ko * block_K, bx * block_N], B_shared[0:block_K, 0:block_N])
                for ki in steps(block_K // mk):
                    emitter.ldmatrix_a(A_local, A_shared, ki)
                    emitter.ldmatrix_b(B_local, B_shared, ki)
                    emitter.mma(A_local, B_local, C_local)
            if store == "global":
                emitter.stmatrix(C_local, C, by, bx)
            elif store == "region":
                emitter.stmatrix(C_local, C_shared[8 : 8 + block_M, 0:block_N])
                T.copy(C_shared[8 : 8 + block_M, 0:block_N], C[by * block_M, bx * block_N])
            else:
                emitter.stmatrix(C_local, C_shared)
                if store == "4d":
                    for i, j in T.Parallel(block_M, block_N):
                        if by * block_M + i < M and bx * block_N + j < N:
                            C[by * block_M + i, bx * block_N + j] = C_shared[i // mx, j // my, i % mx, j % my]
                else:
                    T.copy(C_shared, C[by * block_M, bx * block_N])

    return gemm, a_shape, b_shape


def run_and_check(M, N, K, *, dtype="float16", accum="float32", a_t=False, b_t=True, seed=0, **options):
    gemm, a_shape, b_shape = emitter_gemm(M, N, K, dtype=dtype, accum=accum, a_t=a_t, b_t=b_t, **options)
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        a, b = (rng.integers(-128, 128, s).astype(np.int8) for s in (a_shape, b_shape))
    else:
        np_dtype = T.dtype(dtype).as_numpy()
        a, b = (rng.standard_normal(s).astype(np_dtype) for s in (a_shape, b_shape))
    c = np.full((M, N), POISON[np.dtype(T.dtype(accum).as_numpy())])
    gemm(a, b, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    expected = (a64.T if a_t else a64) @ (b64 if b_t else b64.T).T
    if dtype == "int8":
        np.testing.assert_array_equal(c, expected.astype(np.int32))
    else:
        error = np.abs(c - expected).max() / np.abs(expected).max()
        assert error < 1e-5, f"relative error {error}"
    return gemm


@pytest.mark.parametrize(("a_t", "b_t"), [(False, True), (False, False), (True, True), (True, False)])
def test_fused_gemm_matches_numpy_for_every_operand_order(a_t, b_t):
    run_and_check(128, 192, 96, a_t=a_t, b_t=b_t)


def test_gemm_with_padded_tiles_runs_step_by_step_and_matches_numpy():
    gemm = run_and_check(128, 128, 64, pad=8, a_t=True, b_t=False, seed=1)
    gemms = [n for n in walk(gemm.get_tir().body) if isinstance(n, S.Gemm)]
    assert len(gemms) == 1 and gemms[0].a.buffer.name == "A_local"  # a gemm per K step, of staged tiles


def test_ragged_sizes_bfloat16_and_the_4d_store_match_numpy():
    run_and_check(80, 72, 40, dtype="bfloat16", store="4d", seed=2, k_loop="unroll")


def test_stmatrix_into_the_global_tile_matches_numpy():
    run_and_check(128, 64, 64, store="global", block=(64, 32, 32), warps=(2, 1), seed=3)


def test_stmatrix_into_a_region_starts_at_its_origin():
    run_and_check(64, 64, 32, store="region", seed=5)


def test_int8_gemm_accumulates_exactly_in_int32():
    run_and_check(64, 64, 128, dtype="int8", accum="int32", block=(64, 64, 64), seed=4)


def test_the_example_shaped_kernel_becomes_one_gemm_of_the_shared_tiles():
    gemm, _, _ = emitter_gemm(128, 128, 64)
    func = gemm.get_tir()
    gemms = [n for n in walk(func.body) if isinstance(n, S.Gemm)]
    assert len(gemms) == 1
    op = gemms[0]
    assert (op.a.buffer.name, op.b.buffer.name, op.c.buffer.name) == ("A_shared", "B_shared", "C_local")
    assert op.transpose_b and not op.transpose_a and op.c.buffer.scope == "local.fragment"
    allocated = {n.buffer.name: n.buffer.scope for n in walk(func.body) if isinstance(n, S.Allocate)}
    assert (
        "A_local" not in allocated and "B_local" not in allocated and allocated["C_local"] == "local.fragment"
    )


# ---------------------------------------------------------------- CUDA: lowered and compiled by nvcc


@pytest.fixture(scope="module")
def nvcc():
    from tilecraft.execution.cuda_driver.toolkit import find_nvcc

    if (find_nvcc() or shutil.which("nvcc")) is None:
        pytest.skip("nvcc is not installed (set TILECRAFT_NVCC or CUDA_HOME to run this test)")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "step-by-step"])
def test_the_emitter_gemm_lowers_and_compiles_for_cuda(nvcc, arch, fused, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    gemm, _, _ = emitter_gemm(256, 256, 128, block=(128, 128, 32), pad=0 if fused else 8, store="4d")
    source = tilecraft.lower(gemm.get_tir(), target=f"cuda -arch={arch}", execution_backend="nvrtc").source(
        "cuda-source"
    )
    # one gemm over the 32-wide K of the shared tiles, or one per 16-wide step of the staged tiles
    shape = "128, 128, 32" if fused else "128, 128, 16"
    assert f"tc::gemm_wgmma<{shape}," in source if arch == "sm_90a" else f"tc::gemm_ss<{shape}," in source
    assert compile_cubin(source, arch, keep_dir=tmp_path)[:4] == b"\x7fELF"


# ---------------------------------------------------------------- misuse


KERNEL = """
e = TensorCoreIntrinEmitter(warp_row_tiles=32, warp_col_tiles=32, chunk=32, accum_dtype="float32")

@tilecraft.jit
def bad(A):
    A: T.Tensor((64, 64), "float32")
    with T.Kernel(1, threads={threads}):
        As = T.alloc_shared((64, 32), "float16")
        Bs = T.alloc_shared((64, 32), "float16")
        Cs = T.alloc_shared((64, 64), "float32")
        A_local = T.alloc_local((e.warp_rows * e.local_size_a), "float16")
        B_local = T.alloc_local((e.warp_cols * e.local_size_b), "float16")
        C_local = T.alloc_local((e.warp_rows * e.warp_cols * e.local_size_out), "float32")
"""


@pytest.fixture
def compile_body(tmp_path):
    """Parse a kernel whose T.Kernel body (128 threads unless given) ends with `body`; it has an emitter
    `e` for a 64 x 64 tile (2 x 2 warps), A_local / B_local / C_local and shared tiles As, Bs, Cs."""
    import importlib.util

    def compile_(body: str, threads: int = 128):
        path = tmp_path / f"kernel{threads}.py"
        path.write_text(KERNEL.format(threads=threads) + textwrap.indent(textwrap.dedent(body), " " * 8))
        spec = importlib.util.spec_from_file_location(f"kernel_under_test{threads}", path)
        module = importlib.util.module_from_spec(spec)
        module.__dict__.update(tilecraft=tilecraft, T=T, TensorCoreIntrinEmitter=TensorCoreIntrinEmitter)
        spec.loader.exec_module(module)
        return module.bad.get_tir()

    return compile_


def test_reading_the_accumulator_array_directly_is_a_located_error(compile_body):
    with pytest.raises(ParseError) as info:
        compile_body(
            """
            T.clear(C_local)
            e.ldmatrix_a(A_local, As, 0)
            e.ldmatrix_b(B_local, Bs, 0)
            e.mma(A_local, B_local, C_local)
            A[0, 0] = C_local[0]
            """
        )
    message = str(info.value)
    assert "C_local is a per-thread array that TileLang's TensorCoreIntrinEmitter fills" in message
    assert "whole C tile (64, 64)" in message and "A[0, 0] = C_local[0]" in message
    assert "mma_emitter.stmatrix(C_local, C_shared)" in message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("e.mma(A_local, B_local, C_local)", "mma reads A_local before any ldmatrix_a loaded it"),
        ("e.ldmatrix_a(B_local, As, 0)\ne.ldmatrix_b(B_local, Bs, 0)", "B_local holds the A tile"),
        ("e.ldmatrix_a(A_local, A, 0)", "ldmatrix_a reads shared memory; A is in global"),
        ("e.ldmatrix_a(C_local, As, 0)", "C_local is float32; the emitter was made for float16"),
        ("e.stmatrix(C_local, Cs[0, 0])", "stmatrix stores into a buffer or a region of one, got BufferLoad"),
        ("e.mma_atom(A_local, B_local, C_local, 0, 0)", "call mma(), which covers all the atoms"),
        ("e.make_mma_store_layout(C_local)", "T.gemm chooses its layout"),
        (
            "f = TensorCoreIntrinEmitter(warp_row_tiles=16, warp_col_tiles=16, chunk=32, accum_dtype='float32')\n"
            "e.ldmatrix_a(A_local, As, 0)\nf.ldmatrix_a(A_local, As, 0)",
            "A_local holds a (64, 16) A tile of another emitter; this one's is (32, 16)",
        ),
    ],
)
def test_misuse_is_an_error_that_says_what_is_wrong(compile_body, body, message):
    with pytest.raises(
        (ParseError, UnmappedModuleError), match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        compile_body(body)


def test_too_few_threads_for_the_emitters_warps_is_an_error(compile_body):
    with pytest.raises(ParseError, match="need 128 threads; the kernel has 64"):
        compile_body("e.ldmatrix_a(A_local, As, 0)", threads=64)


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("from tilecraft.compat.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitterWithLadderTransform",
         "ladder-transformed"),
        ("from tilecraft.compat.intrinsics import TensorCoreIntrinEmitterSM120", "sm_120 block-scaled mma"),
        ("from tilecraft.compat.intrinsics.layout.mma_layout import metal_ct_store_index_map",
         "not among the parts TileLang's examples use"),
    ],
)  # fmt: skip
def test_emitters_and_helpers_not_provided_say_so(statement, message):
    with pytest.raises(UnmappedModuleError) as info:
        exec(statement, {})
    text = str(info.value)
    assert "is not provided by tilecraft's TileLang intrinsic emitters" in text and message in text
    assert 'docs/compat.md, section "TVM"' in text


# ---------------------------------------------------------------- the example, as TileLang spells it

EXAMPLE = """
from tilelang import tvm as tvm
from tvm import DataType
import numpy as np
import tilelang
import tilelang.language as T
from tilelang.cuda.intrinsics import get_swizzle_layout
from tilelang.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter


def make_swizzle_layout(shared_buf):
    dtype = shared_buf.dtype
    shape = shared_buf.shape
    if not shape[-1] * DataType(dtype).bits == 512:
        return T.Layout(shape, lambda *args: args)
    return T.Layout(shape, lambda i, j: list(get_swizzle_layout(i, j, shape[-1], dtype)))


@tilelang.jit
def tl_matmul(A, B, in_dtype, out_dtype, accum_dtype):
    block_row_warps, block_col_warps, warp_row_tiles, warp_col_tiles, chunk = 2, 2, 32, 32, 32
    block_M, block_N, block_K = block_row_warps * warp_row_tiles, block_col_warps * warp_col_tiles, chunk
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), in_dtype)
    B: T.Tensor((N, K), in_dtype)
    C = T.empty((M, N), out_dtype)
    mma_emitter = TensorCoreIntrinEmitter(a_dtype=in_dtype, b_dtype=in_dtype, accum_dtype=accum_dtype,
        a_transposed=False, b_transposed=True, block_row_warps=block_row_warps, block_col_warps=block_col_warps,
        warp_row_tiles=warp_row_tiles, warp_col_tiles=warp_col_tiles, chunk=chunk)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), in_dtype, scope="shared.dyn")
        B_shared = T.alloc_shared((block_N, block_K), in_dtype, scope="shared.dyn")
        C_shared = T.alloc_shared((block_M // 16, block_N // 16, 16, 16), out_dtype, scope="shared.dyn")
        A_local = T.alloc_local((mma_emitter.warp_rows * mma_emitter.local_size_a), in_dtype)
        B_local = T.alloc_local((mma_emitter.warp_cols * mma_emitter.local_size_b), in_dtype)
        C_local = T.alloc_local((mma_emitter.warp_rows * mma_emitter.warp_cols * mma_emitter.local_size_out), accum_dtype)
        T.annotate_layout({A_shared: make_swizzle_layout(A_shared), B_shared: make_swizzle_layout(B_shared)})
        T.use_swizzle(panel_size=10)
        T.clear(C_local)
        for ko in T.Pipelined((K // block_K), num_stages=2):
            for i, k in T.Parallel(block_M, block_K):
                A_shared[i, k] = A[by * block_M + i, ko * block_K + k]
            for j, k in T.Parallel(block_N, block_K):
                B_shared[j, k] = B[bx * block_N + j, ko * block_K + k]
            for ki in T.serial(0, (block_K // 16)):
                mma_emitter.ldmatrix_a(A_local, A_shared, ki)
                mma_emitter.ldmatrix_b(B_local, B_shared, ki)
                mma_emitter.mma(A_local, B_local, C_local)
        mma_emitter.stmatrix(C_local, C_shared)
        for i, j in T.Parallel(block_M, block_N):
            C[by * block_M + i, bx * block_N + j] = C_shared[i // 16, j // 16, i % 16, j % 16]
    return C


kernel = tl_matmul.compile(M=128, N=192, K=96, in_dtype=T.float16, out_dtype=T.float32, accum_dtype=T.float32)
rng = np.random.default_rng(5)
a = rng.standard_normal((128, 96)).astype(np.float16)
b = rng.standard_normal((192, 96)).astype(np.float16)
c = kernel(a, b)
expected = a.astype(np.float64) @ b.astype(np.float64).T
print("relative error", float(np.abs(c - expected).max() / np.abs(expected).max()))
"""


def test_the_example_as_tilelang_spells_it_runs_through_run_tilelang(tmp_path):
    from tests.compat.test_run_tilelang import run_tilelang

    result = run_tilelang(tmp_path, EXAMPLE)
    assert result.returncode == 0, result.stderr[-3000:]
    error = float(result.stdout.split("relative error")[1])
    assert error < 1e-5


@pytest.mark.parametrize(
    ("module", "reason"),
    [
        ("tilelang.cuda.intrinsics.macro.mma_sp_macro_generator", "no sparse tensor-core (mma.sp) emitter"),
        ("tilelang.cuda.intrinsics.macro.wgmma_macro_generator", "T.gemm issues wgmma itself on sm_90a"),
        ("tilelang.cuda.intrinsics.layout.mma_sm100_layout", "tcgen05 (sm_100)"),
    ],
)
def test_a_tilelang_intrinsics_module_not_provided_says_why(module, reason):
    from tilecraft.compat import hook

    hook.install()
    try:
        with pytest.raises(UnmappedModuleError) as info:
            exec(f"import {module}", {})
    finally:
        hook.uninstall()
    assert str(info.value).startswith(f"`{module}` is not provided") and reason in str(info.value)
