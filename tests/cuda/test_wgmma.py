"""The sm_90a gemm path (wgmma m64nNk16): descriptor bits, the canonical swizzled operand layouts
against the PTX ISA's rules, the accumulator layout against the ISA's fragment figure, the choice of
path, and nvcc compiles of generated kernels (no GPU needed)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

import tilecraft
from tilecraft.backend.target import Target
from tilecraft.cuda.intrinsics.mma_layouts import (
    mma_accumulator,
    wgmma_accumulator,
    wgmma_accumulator_coords,
    wgmma_operand_a,
    wgmma_operand_a_coords,
)
from tilecraft.cuda.op.gemm_plan import plan_gemm
from tilecraft.cuda.shared_layout import wgmma_atom, wgmma_operand
from tilecraft.cuda.wgmma import asm_functions, descriptor, operand_strides
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.visitor import walk
from tilecraft.testing.conformance import kernels as K

SM90A, SM80 = "cuda -arch=sm_90a", "cuda -arch=sm_80"

# ---------------------------------------------------------------- descriptor


def test_descriptor_fields_sit_where_the_ptx_isa_puts_them():
    word = descriptor(0x2_3450, leading_bytes=0x1230, stride_bytes=1024, swizzle_bytes=128)
    assert word & 0x3FFF == 0x2345  # bits 0-13: address >> 4
    assert (word >> 16) & 0x3FFF == 0x123  # bits 16-29: leading byte offset >> 4
    assert (word >> 32) & 0x3FFF == 64  # bits 32-45: stride byte offset >> 4
    assert (word >> 49) & 0x7 == 0  # base offset: tiles start on their swizzle alignment
    assert word >> 62 == 1  # 128-byte swizzle
    assert descriptor(0, 16, 512, 64) >> 62 == 2 and descriptor(0, 16, 256, 32) >> 62 == 3
    assert (
        (word >> 14) & 3 == 0
        and (word >> 30) & 3 == 0
        and (word >> 46) & 7 == 0
        and (word >> 52) & 0x3FF == 0
    )


def test_descriptor_drops_address_bits_above_the_shared_window():
    assert descriptor(0x4_0010, 16, 1024, 128) & 0x3FFF == 1


def test_descriptor_rejects_offsets_off_16_bytes():
    with pytest.raises(ValueError, match="multiple of 16"):
        descriptor(0, 24, 1024, 128)


# ---------------------------------------------------------------- canonical operand layouts


def _swizzle(byte_address: int, swizzle_bytes: int) -> int:
    """Swizzle<B,4,3> of the PTX ISA's canonical layouts: 16-byte chunk bits [4, 4+B) XOR bits [7, 7+B)."""
    mask = swizzle_bytes // 16 - 1
    return byte_address ^ (((byte_address >> 7) & mask) << 4)


def _hardware_address(
    start: int, lead: int, stride: int, swizzle_bytes: int, mn: int, k: int, k_major: bool
) -> int:
    """Where wgmma reads element (mn, k) of an operand described by (start, lead, stride): the canonical
    layouts of the PTX ISA in bytes of 16-bit elements, T = swizzle_bytes / 2 elements per swizzle row.

    K-major:  ((8, m), (T, k)) : ((T, SBO), (1, -)) elements; k < 16 stays inside one swizzle row.
    MN-major: ((T, m), (8, k)) : ((1, LBO), (T, SBO)).
    The swizzle applies to the absolute address, so start must carry the row's in-line offset."""
    atom = swizzle_bytes // 2
    if k_major:
        offset = (mn // 8) * stride + (mn % 8) * atom * 2 + k * 2
    else:
        offset = (mn // atom) * lead + (k // 8) * stride + (k % 8) * atom * 2 + (mn % atom) * 2
    return _swizzle(start + offset, swizzle_bytes)


@pytest.mark.parametrize("rows, width, atom", [(64, 64, 64), (128, 32, 32), (64, 16, 16), (128, 128, 64),
                                               (32, 256, 64), (64, 48, 16), (16, 64, 64)])  # fmt: skip
def test_wgmma_layout_is_a_permutation(rows, width, atom):
    layout = wgmma_operand(rows, width, atom)
    size = rows * width
    assert sorted(layout.offset(i) for i in range(size)) == list(range(size))


@pytest.mark.parametrize("swizzle_bytes", [128, 64, 32])
@pytest.mark.parametrize("rows, k_tile", [(64, 64), (128, 64), (64, 128), (128, 32), (64, 16), (64, 48)])
def test_k_major_tiles_match_what_the_descriptor_reads(swizzle_bytes, rows, k_tile):
    """A (rows x K) K-major tile (A, or B stored (N, K)): each m64/nN instruction and k16 step reads,
    through the descriptor tc::gemm_wgmma builds, exactly where the layout stored the element."""
    atom = swizzle_bytes // 2
    if k_tile % atom:
        pytest.skip("the swizzle row must divide K")
    layout = wgmma_operand(rows, k_tile, atom)
    lead, stride = operand_strides(rows, atom, k_major=True)
    base = 3 * 1024  # tiles start on 1024 bytes
    for kk in range(0, k_tile, 16):
        for m0 in range(0, rows, 64 if rows >= 64 else 8):
            start = base + 2 * (((kk // atom) * rows + m0) * atom + kk % atom)  # tc::wgmma_offset
            for mn in range(min(64, rows - m0)):
                for k in range(16):
                    stored = base + 2 * layout.offset((m0 + mn) * k_tile + kk + k)
                    assert _hardware_address(start, lead, stride, swizzle_bytes, mn, k, True) == stored


@pytest.mark.parametrize("k_tile, mn_tile, inst", [(32, 128, 64), (64, 64, 64), (16, 256, 128), (32, 32, 32),
                                                   (64, 16, 16), (32, 512, 256)])  # fmt: skip
def test_mn_major_tiles_match_what_the_descriptor_reads(k_tile, mn_tile, inst):
    """A (K x MN) MN-major tile (A stored (K, M), B stored (K, N)) with the swizzle the plan picks for an
    instruction `inst` wide: leading byte offset between swizzle-row blocks, stride between 8-row groups."""
    atom = wgmma_atom(inst)
    swizzle_bytes = atom * 2
    layout = wgmma_operand(k_tile, mn_tile, atom)
    lead, stride = operand_strides(k_tile, atom, k_major=False)
    base = 5 * 1024
    for kk in range(0, k_tile, 16):
        for n0 in range(0, mn_tile, inst):
            start = base + 2 * (((n0 // atom) * k_tile + kk) * atom + n0 % atom)  # tc::wgmma_offset
            for mn in range(inst):
                for k in range(16):
                    stored = base + 2 * layout.offset((kk + k) * mn_tile + n0 + mn)
                    assert _hardware_address(start, lead, stride, swizzle_bytes, mn, k, False) == stored


def test_tiles_written_by_16_byte_chunks_keep_chunks_whole():
    # cp.async writes 16 bytes (8 elements) per thread: the swizzle moves whole chunks
    layout = wgmma_operand(64, 64, 64)
    for chunk in range(64 * 64 // 8):
        first = layout.offset(chunk * 8)
        assert first % 8 == 0 and [layout.offset(chunk * 8 + j) for j in range(8)] == list(
            range(first, first + 8)
        )


# ---------------------------------------------------------------- accumulator


def _ptx_figure(thread: int, i: int) -> tuple[int, int]:
    """PTX ISA figure "WGMMA .m64nNk16 register fragment layout for accumulator matrix D": thread t of
    the warpgroup holds d[i] at row 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2),
    col (i / 4) * 8 + (t % 4) * 2 + i % 2."""
    lane = thread % 32
    return 16 * (thread // 32) + lane // 4 + 8 * ((i // 2) % 2), (i // 4) * 8 + (lane % 4) * 2 + i % 2


@pytest.mark.parametrize("n", [8, 16, 64, 128, 256])
def test_one_instruction_accumulator_is_the_ptx_figure(n):
    layout = wgmma_accumulator(64, n, 1, 1)
    for thread in range(128):
        for i in range(n // 2):
            got = layout.apply(register=i, lane=thread % 32, warp=thread // 32)
            assert (
                (got["dim0"], got["dim1"])
                == _ptx_figure(thread, i)
                == wgmma_accumulator_coords(thread, i, 64, n, 1, 1)
            )


@pytest.mark.parametrize("m, n, gm, gn", [(128, 128, 1, 1), (128, 256, 1, 2), (128, 256, 2, 1), (256, 128, 2, 2),
                                          (64, 512, 1, 1), (128, 64, 1, 4)])  # fmt: skip
def test_block_accumulator_is_the_figure_per_instruction(m, n, gm, gn):
    """Warpgroup g = (gm_i, gn_i) runs instructions (mi, nj) of N = min(GN, 256); the registers of one
    instruction are contiguous, at (mi * GN/8 + nj * N/8) * 4, as tc::gemm_wgmma passes them."""
    layout = wgmma_accumulator(m, n, gm, gn)
    group_m, group_n = m // gm, n // gn
    inst = min(group_n, 256)
    owners = {}
    for thread in range(128 * gm * gn):
        g, t = divmod(thread, 128)
        row0, col0 = (g // gn) * group_m, (g % gn) * group_n
        for mi in range(group_m // 64):
            for nj in range(group_n // inst):
                first = (mi * (group_n // 8) + nj * (inst // 8)) * 4
                for i in range(inst // 2):
                    r, c = _ptx_figure(t, i)
                    want = (row0 + mi * 64 + r, col0 + nj * inst + c)
                    got = layout.apply(register=first + i, lane=thread % 32, warp=thread // 32)
                    assert (
                        (got["dim0"], got["dim1"])
                        == want
                        == wgmma_accumulator_coords(thread, first + i, m, n, gm, gn)
                    )
                    owners[want] = owners.get(want, 0) + 1
    assert len(owners) == m * n and set(owners.values()) == {1}


def test_a_64_row_warpgroup_tile_is_the_mma_layout_of_four_stacked_warps():
    # so a kernel mixing the two (a wgmma accumulator feeding code laid out for mma.sync) agrees there
    for n in (32, 128):
        assert wgmma_accumulator(64, n, 1, 1) == mma_accumulator(64, n, 4, 1)
        assert wgmma_accumulator(128, n, 2, 1) == mma_accumulator(128, n, 8, 1)
    assert wgmma_accumulator(128, 128, 1, 1) != mma_accumulator(128, 128, 4, 1)


def _ptx_figure_a(thread: int, i: int) -> tuple[int, int]:
    """PTX ISA figure "WGMMA .m64nNk16 register fragment layout for matrix A" (wgmma-64N16-A): thread t
    of the warpgroup holds a[i] at row 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2),
    col (t % 4) * 2 + i % 2 + 8 * (i / 4)."""
    lane = thread % 32
    return 16 * (thread // 32) + lane // 4 + 8 * ((i // 2) % 2), (lane % 4) * 2 + i % 2 + 8 * (i // 4)


@pytest.mark.parametrize("m, k, gm, gn", [(64, 16, 1, 1), (128, 64, 2, 1), (64, 128, 1, 2), (256, 32, 2, 2),
                                          (128, 128, 1, 1)])  # fmt: skip
def test_register_a_is_the_ptx_figure_per_k_step(m, k, gm, gn):
    """Warpgroup (gm_i, gn_i) holds rows gm_i*GM + mi*64 + [0, 64) of every k16 step ki in registers
    (mi * K/16 + ki) * 8 + [0, 8), as tc::gemm_wgmma_rs passes four .b32 of them per instruction; the
    gn warpgroups of a row block hold the same elements."""
    layout = wgmma_operand_a(m, k, gm, gn)
    group_m = m // gm
    for thread in range(128 * gm * gn):
        g, t = divmod(thread, 128)
        row0 = (g // gn) * group_m
        for mi in range(group_m // 64):
            for ki in range(k // 16):
                for i in range(8):
                    reg = (mi * (k // 16) + ki) * 8 + i
                    r, c = _ptx_figure_a(t, i)
                    want = (row0 + mi * 64 + r, ki * 16 + c)
                    got = layout.apply(register=reg, lane=thread % 32, warp=thread // 32)
                    assert (
                        (got["dim0"], got["dim1"])
                        == want
                        == wgmma_operand_a_coords(thread, reg, m, k, gm, gn)
                    )


@pytest.mark.parametrize("m, n, gm", [(64, 16, 1), (64, 128, 1), (128, 128, 2), (128, 64, 1), (256, 128, 2)])
def test_accumulator_converts_into_register_a_in_thread(m, n, gm):
    """The f32 accumulator of a wgmma gemm with one warpgroup column (Q @ K^T) and the A operand of the
    next wgmma (P @ V, K = that N) put every element in the same thread and register, so the cast
    acc_s -> acc_s_cast is per register."""
    assert wgmma_accumulator(m, n, gm, 1) == wgmma_operand_a(m, n, gm, 1)
    for thread in range(128 * gm):
        for reg in range(m * n // (128 * gm)):
            assert wgmma_accumulator_coords(thread, reg, m, n, gm, 1) == wgmma_operand_a_coords(
                thread, reg, m, n, gm, 1
            )
    if gm > 1:  # two warpgroup columns split N: the registers no longer line up
        assert wgmma_accumulator(m, n, gm // 2, 2) != wgmma_operand_a(m, n, gm // 2, 2)


# ---------------------------------------------------------------- choice of path


def _gemm_op(func) -> S.Gemm:
    return next(n for n in walk(func.body) if isinstance(n, S.Gemm))


def _plan(arch: str, threads: int = 128, wgmma: bool = True, **kw):
    func = K.gemm(512, 512, 512, **kw)
    return plan_gemm(_gemm_op(func), threads, Target.parse(f"cuda -arch={arch}"), wgmma)


def test_plan_picks_wgmma_for_16_bit_shared_operands():
    plan = _plan("sm_90a", block_m=128, block_n=128, block_k=64)
    assert (plan.variant, plan.warps_m, plan.warps_n, plan.atom_a, plan.atom_b) == ("wgmma", 1, 1, 64, 64)
    plan = _plan("sm_90a", threads=256, block_m=128, block_n=256, block_k=64)
    assert (plan.variant, plan.warps_m, plan.warps_n) == ("wgmma", 1, 2)
    plan = _plan("sm_90a", block_m=128, block_n=128, block_k=32, transpose_b=True)
    assert (plan.atom_a, plan.atom_b) == (32, 32)  # K-major, 64-byte rows


def test_plan_keeps_mma_sync_where_wgmma_does_not_fit_or_is_off():
    assert _plan("sm_90a", wgmma=False, block_m=128, block_n=128, block_k=64).variant == "ss"
    assert _plan("sm_90a", block_m=32, block_n=64, block_k=32).variant == "ss"  # M below 64 rows
    assert _plan("sm_90a", dtype="float32").variant == "fma"
    assert _plan("sm_90a", threads=96, block_m=64, block_n=64, block_k=32).variant != "wgmma"


def test_warp_policy_picks_the_warpgroup_grid():
    op = _gemm_op(K.gemm(512, 512, 512, 128, 256, 64))
    target = Target.parse(SM90A)
    grids = {p: plan_gemm(dataclasses.replace(op, policy=p), 512, target, True) for p in S.GemmWarpPolicy}
    assert (grids[S.GemmWarpPolicy.FullRow].warps_m, grids[S.GemmWarpPolicy.FullRow].warps_n) == (2, 2)
    assert (grids[S.GemmWarpPolicy.FullCol].warps_m, grids[S.GemmWarpPolicy.FullCol].warps_n) == (1, 4)
    assert (grids[S.GemmWarpPolicy.Square].warps_m, grids[S.GemmWarpPolicy.Square].warps_n) == (2, 2)


def _attention(**kw):
    base = dict(batch=1, heads=2, seq_len=300, dim=128, block_m=128, block_n=128, num_stages=2, threads=256)
    return K.flash_attention(**{**base, **kw})


def _gemm_ops(func) -> list[S.Gemm]:
    return [n for n in walk(func.body) if isinstance(n, S.Gemm)]


def test_plan_puts_a_register_a_gemm_on_wgmma_rs():
    qk, pv = _gemm_ops(_attention(is_causal=False))
    target = Target.parse(SM90A)
    plan = plan_gemm(pv, 256, target, True)
    assert (plan.variant, plan.warps_m, plan.warps_n, plan.atom_b) == ("wgmma_rs", 2, 1, 64)
    assert plan.a_layout.linear == wgmma_operand_a(128, 128, 2, 1)
    # Q @ K^T's accumulator is P @ V's operand, register for register
    assert plan_gemm(qk, 256, target, True).c_layout.linear == plan.a_layout.linear
    assert plan_gemm(pv, 256, target, False).variant == "rs"
    with pytest.raises(LoweringError, match="cannot be transposed"):
        plan_gemm(dataclasses.replace(pv, transpose_a=True), 256, target, True)


def _attention_source(target: str = SM90A, pass_configs=None, **kw) -> str:
    artifact = tilecraft.lower(
        _attention(**kw), target=target, execution_backend="nvrtc", pass_configs=pass_configs
    )
    return artifact.source("cuda-source")


def test_flash_attention_runs_every_gemm_on_wgmma():
    src = _attention_source()
    assert "tc::gemm_wgmma<" in src and "tc::gemm_wgmma_rs<" in src and "struct tc_wgmma_rs_op<128>" in src
    assert "tc::gemm_rs<" not in src and "tc::gemm_ss<" not in src
    off = _attention_source(pass_configs={"tl.disable_wgmma": True})
    assert "tc::gemm_rs<" in off and "tc::gemm_ss<" in off and "wgmma" not in off.split('extern "C"')[1]


def test_register_a_gemm_that_wgmma_cannot_run_keeps_the_function_on_mma_sync():
    # 32-row tiles are below one 64-row wgmma: P @ V takes mma.sync, and so must Q @ K^T, whose
    # accumulator feeds it in the mma layout
    src = _attention_source(block_m=32, block_n=64, threads=128, dim=64)
    assert (
        "tc::gemm_rs<" in src and "tc::gemm_ss<" in src and "tc::gemm_wgmma" not in src.split('extern "C"')[1]
    )


def _kernel_source(func, target: str = SM90A) -> str:
    return tilecraft.lower(func, target=target, execution_backend="nvrtc").source("cuda-source")


def test_a_tile_read_through_wgmma_and_ldmatrix_takes_the_wgmma_layout():
    """K_shared feeds a 128-row gemm (wgmma-able) and a 32-row one (mma.sync only): the mma.sync gemm
    reads it in wgmma's canonical layout (64-element atoms), so the tile has one layout and the function
    keeps the sm_90a path (when each gemm imposed its own, the wgmma gemm read the other's layout on the
    H200: TileLang's mha_sink_bwd gave dV off by 5.8)."""
    from tilecraft.testing.conformance.shared_operands import k_shared_by_two_gemms

    body = _kernel_source(k_shared_by_two_gemms()).split('extern "C"')[1]
    assert "tc::gemm_wgmma<" in body
    assert "tc::gemm_ss<32, 128, 128, 2, 4, true, false, false, 0, 64>" in body


def test_two_layouts_demanded_of_one_shared_tile_are_an_error_not_an_overwrite(monkeypatch):
    """Were the path chosen per gemm anyway, layout inference refuses the tile instead of letting the
    later gemm's layout silently win."""
    import tilecraft.cuda.transform.gemm_instructions as gemm_instructions
    from tilecraft.testing.conformance.shared_operands import k_shared_by_two_gemms

    monkeypatch.setattr(gemm_instructions, "_read_wgmma_tiles_on_mma", lambda *a: None)
    monkeypatch.setattr(gemm_instructions, "_shared_operands_agree", lambda *a: True)
    with pytest.raises(LoweringError, match=r"shared buffer K_shared needs two different layouts"):
        _kernel_source(k_shared_by_two_gemms())


# ---------------------------------------------------------------- generated code


def _source(target: str, pass_configs=None, **kw) -> str:
    func = K.gemm(300, 260, 200, **kw)
    artifact = tilecraft.lower(func, target=target, execution_backend="nvrtc", pass_configs=pass_configs)
    return artifact.source("cuda-source")


def test_disable_wgmma_keeps_sm_90a_on_mma_sync():
    kw = dict(block_m=128, block_n=128, block_k=32)
    assert "tc::gemm_wgmma<" in _source(SM90A, **kw)
    off = _source(SM90A, {"tl.disable_wgmma": True}, **kw)
    assert "tc::gemm_wgmma<" not in off and "tc::gemm_ss<" in off
    assert _source(SM90A, **kw) != off


def test_sm_80_source_is_unchanged_by_the_wgmma_path():
    src = _source(SM80, block_m=128, block_n=128, block_k=32)
    assert "tc::gemm_ss<" in src and "struct tc_wgmma_op<" not in src
    assert "__align__(128) char tc_smem" in src and "tc_fence_proxy_async();" not in src


def test_asm_functions_cover_the_widths_used():
    text = asm_functions({64, 256})
    assert "struct tc_wgmma_op<64>" in text and "struct tc_wgmma_op<256>" in text
    assert "m64n256k16.f32.bf16.bf16" in text and "%127}" in text


def _sass_tool() -> str | None:
    return shutil.which("cuobjdump")


CASES = [
    dict(block_m=128, block_n=128, block_k=32, num_stages=4),
    dict(block_m=128, block_n=128, block_k=64, num_stages=3, transpose_b=True),
    dict(block_m=128, block_n=128, block_k=64, num_stages=3, transpose_a=True),
    dict(block_m=64, block_n=128, block_k=64, transpose_a=True, transpose_b=True, dtype="bfloat16"),
    dict(block_m=128, block_n=64, block_k=48, transpose_b=True),  # 32-byte swizzle rows of K = 48
]


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_generated_gemm_compiles(nvcc, kw, arch, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    source = _source(f"cuda -arch={arch}", **kw)
    assert ("tc::gemm_wgmma<" in source) == (arch == "sm_90a")
    cubin = compile_cubin(source, arch, keep_dir=tmp_path)
    assert cubin[:4] == b"\x7fELF"
    tool = _sass_tool()
    if tool is None:
        return
    path = Path(tmp_path) / "k.cubin"
    path.write_bytes(cubin)

    sass = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True).stdout
    if not sass:
        return  # cuobjdump without nvdisasm prints nothing useful
    assert ("HGMMA" in sass) == (arch == "sm_90a")
    assert "HMMA" in sass or arch == "sm_90a"


def test_disable_wgmma_is_accepted_where_there_is_no_wgmma():
    func = K.gemm(128, 128, 64, 64, 64, 32)
    assert tilecraft.lower(func, target="c", pass_configs={"tl.disable_wgmma": True}) is not None
    assert "tc::gemm_ss<" in tilecraft.lower(func, target=SM80, execution_backend="nvrtc",
                                              pass_configs={"tl.disable_wgmma": True}).source("cuda-source")  # fmt: skip


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_compiles_for_sm_90a(nvcc, causal, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    cubin = compile_cubin(_attention_source(is_causal=causal), "sm_90a", keep_dir=tmp_path)
    assert cubin[:4] == b"\x7fELF"
    tool = _sass_tool()
    if tool is None:
        return
    path = Path(tmp_path) / "fa.cubin"
    path.write_bytes(cubin)
    sass = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True).stdout
    if sass:
        assert "HGMMA" in sass and "HMMA" not in sass


@pytest.mark.parametrize(
    "rows, row_length, atom", [(64, 128, 128), (128, 64, 64), (64, 256, 128), (8, 32, 32)]
)
def test_a_float8_tile_is_the_16_bit_tile_of_half_its_width_byte_for_byte(rows, row_length, atom):
    """tc::gemm_wgmma_fp8 reads an (R x K) float8 tile through the descriptors of the (R x K/2) 16-bit
    tile with atoms of half the elements: both layouts must put every byte in the same place."""
    from tilecraft.cuda.shared_layout import wgmma_operand

    fp8 = wgmma_operand(rows, row_length, atom, element_bytes=1)
    half = wgmma_operand(rows, row_length // 2, atom // 2)
    assert fp8.swizzle_bytes == half.swizzle_bytes == atom
    for flat in range(rows * row_length):
        assert fp8.offset(flat) == 2 * half.offset(flat // 2) + flat % 2, flat
    placed = sorted(fp8.offset(f) for f in range(rows * row_length))
    assert placed == list(range(rows * row_length))  # a permutation of the tile's bytes
    from tilecraft.ir import expr as E
    from tilecraft.ir.eval import evaluate

    for f in range(0, rows * row_length, 7):  # the IR form the copies and TMA offsets use
        assert int(evaluate(fp8.physical(E.const(f)))) == fp8.offset(f)
