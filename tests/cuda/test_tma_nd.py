"""TMA boxes of regions that are a tile in any dim and the last (TileLang's bshd `K[b, rows, h, :]`), on
sm_90a without a GPU: the tensor maps' rank and boxes, the coordinates per dim, the warp-specialized
attention loop they feed, the driver encoding of a 4-D map, what is still refused (with its reason), and
nvcc compiles (the GPU runs the conformance cases flash_attention_bshd_*)."""

from __future__ import annotations

import pytest

import tilecraft
import tilecraft.language as T
from tests.cuda.test_tma import FakeDriver_call
from tilecraft.ir import dtype as dt
from tilecraft.runtime.artifact import TensorMapInfo
from tilecraft.testing.conformance import attention_bshd as AS
from tilecraft.testing.filecheck import filecheck

SM90A = "cuda -arch=sm_90a"


def _lower(func, configs=None):
    art = tilecraft.lower(func, target=SM90A, pass_configs=configs)
    src = art.device_sources["cuda-source"]
    return art, src[src.index('extern "C" __global__') :]


def _maps(art):
    return [(m.buffer, m.box, m.swizzle) for m in art.kernels[0].tensor_maps]


# ---------------------------------------------------------------- what becomes a box


def test_bshd_attention_loads_and_stores_through_4d_maps_in_a_warp_specialized_loop():
    """K[bz, k * 128 : ..., by, :]: box (64, 1, 128, 1) innermost first, coordinates per dim (column
    block, head, row, batch); the loop gets a producer warpgroup; the output is a 4-D TMA store."""
    art, kernel = _lower(AS.build("full")())
    assert _maps(art) == [
        ("K", (64, 1, 128, 1), 128), ("V", (64, 1, 128, 1), 128), ("Q", (64, 1, 128, 1), 128),
        ("Output", (64, 1, 128, 1), 128),
    ]  # fmt: skip
    checks = """
        CHECK: const __grid_constant__ tc_tensor_map tc_tmap0
        CHECK: tc_setmaxnreg_dec<24>();
        CHECK: tc_tma_load<4>(K_shared + (((k % 2) * 16384) + 0), tc_tmap0, {(int32_t)(0), (int32_t)(by), (int32_t)((k * 128)), (int32_t)(bz)}, &tc_mbar[1 + (k % 2)]);
        CHECK-NEXT: tc_tma_load<4>(K_shared + (((k % 2) * 16384) + 8192), tc_tmap0, {(int32_t)(64), (int32_t)(by), (int32_t)((k * 128)), (int32_t)(bz)}, &tc_mbar[1 + (k % 2)]);
        CHECK: tc_tma_load<4>(V_shared + (((k % 2) * 16384) + 0), tc_tmap1, {(int32_t)(0), (int32_t)(by), (int32_t)((k * 128)), (int32_t)(bz)}
        CHECK: tc_setmaxnreg_inc<240>();
        CHECK: tc_tma_load<4>(Q_shared + 0, tc_tmap2, {(int32_t)(0), (int32_t)(by), (int32_t)((bx * 128)), (int32_t)(bz)}, &tc_mbar[0]);
        CHECK: tc_tma_store<4>(tc_tmap3, {(int32_t)(0), (int32_t)(by), (int32_t)((bx * 128)), (int32_t)(bz)}, O_shared + 0);
        CHECK-NEXT: tc_tma_store<4>(tc_tmap3, {(int32_t)(64), (int32_t)(by), (int32_t)((bx * 128)), (int32_t)(bz)}, O_shared + 8192);
    """
    filecheck(kernel, checks)
    assert "tc_cp_async16" not in kernel


def test_grouped_heads_and_packed_tokens():
    """GQA's `by // groups` is the head coordinate; (tokens, heads, dim) tensors have their rows in dim 0
    (box (64, 1, 64) of a 3-D map, coordinates (column, head, row))."""
    art, kernel = _lower(AS.build("causal_grouped")())
    assert (
        "tc_tma_load<4>(K_shared + (((k % 2) * 4096) + 0), tc_tmap0, {(int32_t)(0), (int32_t)((by / 2))"
        in kernel
    )
    assert "tc_setmaxnreg_dec<" in kernel
    art, kernel = _lower(AS.build("packed")())
    assert {m[1] for m in _maps(art)} == {(64, 1, 64)}
    assert (
        "tc_tma_load<3>(K_shared + (((k % 2) * 4096) + 0), tc_tmap0, {(int32_t)(0), (int32_t)(by), (int32_t)((k * 64))}"
        in kernel
    )
    assert "tc_tma_store<3>(" in kernel and "tc_setmaxnreg_dec<" in kernel


def test_a_four_dim_map_is_encoded_with_every_dim_and_byte_stride():
    """The driver gets the tensor's full rank: dims and byte strides innermost first, the box as built."""
    info = TensorMapInfo("K", dt.float16, (64, 1, 128, 1), 128)
    dtype, rank, _, dims, strides, box, elem, modes = FakeDriver_call(info, 0x4000, (2, 300, 3, 128))
    assert (dtype, rank, dims, box, elem, modes[1]) == (6, 4, [128, 3, 300, 2], [64, 1, 128, 1], [1] * 4, 3)
    assert strides == [128 * 2, 3 * 128 * 2, 300 * 3 * 128 * 2]


def _bshd_copy(shape, region):
    """A kernel loading `region(K, bx, by)` of a float16 tensor of `shape` into a gemm operand tile."""

    @T.prim_func
    def f(K: T.Tensor(shape, "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(A_s)
            T.copy(region(K, bx, by), B_s)
            T.gemm(A_s, B_s, acc, transpose_B=True, clear_accum=True)
            T.copy(acc, C)

    return f


def test_rows_in_any_dim_with_unit_extents_between():
    """Rows in dim 0 of a 4-D tensor: box (64, 1, 1, 64); the rows' dim is found from the extents."""
    f = _bshd_copy((128, 2, 3, 64), lambda K, bx, by: K[bx * 64 : bx * 64 + 64, by, 1, :])
    art, kernel = _lower(f)
    assert _maps(art) == [("K", (64, 1, 1, 64), 128)]
    assert (
        "tc_tma_load<4>(B_s + 0, tc_tmap0, {(int32_t)(0), (int32_t)(1), (int32_t)(by), (int32_t)((bx * 64))}"
        in kernel
    )


def test_one_row_tiles_take_the_second_to_last_dim():
    """A region of extent 1 in every dim but the last (a 1 x 64 tile) is a box of one row."""
    from tilecraft.cuda.op.tma_store import rows_dim, tma_box
    from tilecraft.ir import expr as E
    from tilecraft.ir.buffer import Buffer, BufferRegion, Range

    buf = Buffer("K", (E.const(4), E.const(5), E.const(64)), dt.float16, "global")
    one = BufferRegion(
        buf, (Range(E.const(1), E.const(1)), Range(E.const(2), E.const(1)), Range(E.const(0), E.const(64)))
    )
    assert rows_dim(one, 1) == 1 and tma_box(one, 1, 64) == (64, 1, 1)
    assert rows_dim(one, 8) is None


def test_a_multicast_slice_cuts_the_rows_where_the_box_has_them():
    """TMA multicast (transform/multicast.py) slices a box's rows: in a 4-D box (64, 1, 128, 1) they are
    entry 2, so block r of a 2-block cluster loads rows 64 r .. 64 r + 63 at coordinate 2, not entry 1."""
    from tilecraft.cuda.ir import TmaCopy, TmaLoad
    from tilecraft.cuda.transform.multicast import multicast_copy, row_axis
    from tilecraft.ir import expr as E
    from tilecraft.ir.buffer import Buffer

    tile = Buffer("K_s", (E.const(128), E.const(64)), dt.float16, "shared.dyn")
    tensor = Buffer("K", (E.const(2), E.const(512), E.const(3), E.const(64)), dt.float16, "global")
    b, h, k = (E.Var(dt.int32, n) for n in ("b", "h", "k"))
    load = TmaLoad(tile, E.const(0), tensor, (64, 1, 128, 1), 128, (E.const(0), h, E.mul(k, 128), b))
    (sliced,) = multicast_copy(TmaCopy((load,), 16384), 2).loads
    assert row_axis(load.box) == 2 and sliced.box == (64, 1, 64, 1) and sliced.multicast == 2
    assert sliced.coords[0] is load.coords[0] and sliced.coords[1] is h and sliced.coords[3] is b
    assert "cluster_ctarank" in repr(sliced.coords[2]) and "cluster_ctarank" in repr(sliced.dst_offset)
    assert row_axis((64, 128)) == 1 and row_axis((64, 1)) == 1


# ---------------------------------------------------------------- what is still refused, and why


# (T.copy's semantic check already refuses regions whose extents, unit dims dropped, are not the tile's:
# rows spanning two dims never reach lowering.)
REFUSED = [
    (  # the tile's columns are not the tensor's contiguous last dim
        "columns-not-last",
        (2, 64, 64, 4),
        lambda K, bx, by: K[bx, 0:64, 0:64, by],
        "the region's extents (1, 64, 64, 1) are not a 64 x 64 tile taken from the tensor (TMA here: the "
        "rows in one dim, the columns in the last, 1 in every other dim)",
    ),
    (  # 68 float16 elements: 136-byte rows break the stride rule (every stride but the innermost)
        "stride-rule",
        (2, 96, 3, 68),
        lambda K, bx, by: K[bx, 0:64, by, 0:64],
        "rows of K are not provably a multiple of 16 bytes (TMA's stride rule)",
    ),
    (
        "six-dims",
        (1, 2, 64, 2, 1, 64),
        lambda K, bx, by: K[0, bx, 0:64, by, 0, :],
        "K has 6 dims (TMA: 2 to 5 here)",
    ),
]


@pytest.mark.parametrize(("shape", "region", "reason"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_regions_tma_cannot_take_stay_on_cp_async_with_their_reason(shape, region, reason, capsys):
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        art, kernel = _lower(_bshd_copy(shape, region))
    notes = capsys.readouterr().err
    assert f"T.copy into a wgmma tile stays on cp.async (no TMA): {reason}" in notes, notes
    assert "tc_tma_load" not in kernel and not art.kernels[0].tensor_maps


def test_a_dynamic_row_length_needs_the_multiple_of_16_specialization():
    """A dynamic head dim is refused by the stride rule, unless the JIT specialized it on % 16 == 0
    (every stride of a row-major tensor is then a multiple of 16 bytes); dynamic outer dims never matter."""
    b, s, d = T.dynamic("b"), T.dynamic("s"), T.dynamic("d")
    region = lambda K, bx, by: K[bx, 0:64, by, 0:64]  # noqa: E731
    art, _ = _lower(_bshd_copy((b, s, 3, 64), region))
    assert _maps(art) == [("K", (64, 1, 64, 1), 128)]
    func = _bshd_copy((2, 96, 3, d), region)
    art, _ = _lower(func)
    assert not art.kernels[0].tensor_maps
    from tilecraft.jit.api import DIM_MULTIPLE

    art, _ = _lower(func.with_attr("tilecraft.divisible_dims", ((d, DIM_MULTIPLE),)))
    assert _maps(art) == [("K", (64, 1, 64, 1), 128)]


def test_disable_tma_keeps_its_reason():
    region = lambda K, bx, by: K[bx, 0:64, by, :]  # noqa: E731

    @T.prim_func
    def f(K: T.Tensor((2, 96, 3, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(A_s)
            T.copy(region(K, bx, by), B_s, disable_tma=True)
            T.gemm(A_s, B_s, acc, transpose_B=True, clear_accum=True)
            T.copy(acc, C)

    art, kernel = _lower(f)
    assert "tc_tma_load" not in kernel and not art.kernels[0].tensor_maps


# ---------------------------------------------------------------- nvcc


@pytest.mark.parametrize("name", list(AS.CONFIGS))
def test_bshd_attention_compiles_for_sm90a(name, nvcc, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    art = tilecraft.lower(AS.build(name)(), target=SM90A)
    source = art.device_sources["cuda-source"]
    assert "tc_tma_load<" in source
    assert compile_cubin(source, "sm_90a", keep_dir=tmp_path)[:4] == b"\x7fELF"
