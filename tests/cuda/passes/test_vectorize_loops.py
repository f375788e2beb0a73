"""vectorize-loops (CUDA), Before/Expected: a `T.vectorized` copy of one run between global memory and a
per-thread array becomes one VectorCopy when the index arithmetic proves the run contiguous and aligned;
a run that is not stays a loop."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import SM80
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test


def _runs(start: int):
    @T.prim_func
    def runs(A: T.Tensor((4, 256), "float16"), B: T.Tensor((4, 256), "float16")):
        with T.Kernel(4, threads=32) as bx:
            tx = T.get_thread_binding(0)
            regs = T.alloc_local((8,), "float16")
            for v in T.vectorized(8):
                regs[v] = A[bx, tx * 8 + start + v]
            for v in T.vectorized(8):
                B[bx, tx * 8 + start + v] = regs[v]

    return runs


@pass_test("vectorize-loops", SM80)
def test_aligned_runs_become_16_byte_copies(target):
    """Thread tx's 8 float16 of row bx start at bx * 256 + tx * 8, a multiple of 8: one 16-byte load into
    the registers and one store out of them."""
    expected = """
    @T.prim_func
    def runs(A: T.Tensor((4, 256), "float16"), B: T.Tensor((4, 256), "float16")):
        with T.Kernel(4, threads=32) as bx:
            tx = T.get_thread_binding(0)
            regs = T.alloc_local((8,), "float16")
            T.ir.cuda.VectorCopy(dst=regs, dst_offset=0, src=A, src_offset=T.cast(bx, "int64") * 256 + T.cast(tx * 8, "int64"), bytes=16)
            T.ir.cuda.VectorCopy(dst=B, dst_offset=T.cast(bx, "int64") * 256 + T.cast(tx * 8, "int64"), src=regs, src_offset=0, bytes=16)
    """  # noqa: E501
    assert_pass(target, "vectorize-loops", _runs(0), expected, prefix=True)


@pass_test("vectorize-loops", SM80)
def test_a_run_off_its_alignment_stays_a_loop(target):
    """Starting at tx * 8 + 4, a run of 8 crosses a 16-byte boundary: no vector access holds it."""
    assert_pass(target, "vectorize-loops", _runs(4), UNCHANGED, prefix=True)


def _unpacked_stores(start: int):
    """A dequantizing macro's store (TileLang's bf16_mxfp4 example): a let `index` over the vectorized
    variable, the tile indexed by index // 128 and index % 128, into a tile a gemm reads (swizzled)."""

    @T.prim_func
    def unpacked(A: T.Tensor((128, 128), "float16"), B: T.Tensor((64, 128), "float16"), C: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            A_s = T.alloc_shared((128, 128), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 64), "float32")
            regs = T.alloc_local((8,), "float16")
            T.copy(A, A_s)
            T.clear(C_l)
            for i in T.serial(8):
                base = i * 1024 + tx * 8 + start
                for v in T.vectorized(8):
                    regs[v] = B[(base + v) // 128, (base + v) % 128]
                for v in T.vectorized(8):
                    index = base + v
                    B_s[index // 128, index % 128] = regs[v]
            T.gemm(A_s, B_s, C_l, transpose_B=True)
            T.copy(C_l, C)

    return unpacked


@pass_test("vectorize-loops", SM80)
def test_a_run_into_a_swizzled_tile_is_one_copy_at_its_physical_offset(target):
    """The run of 8 starts on a multiple of 8 (the enclosing let `base` says so) and stays in one row of
    128: one 16-byte store at the swizzled tile's physical offset of its first element (swizzle16 moves
    whole 16-byte chunks), and one 16-byte load of B."""
    from tilecraft.testing.passes import run_pass

    out = str(run_pass(target, "vectorize-loops", _unpacked_stores(0), prefix=True))
    assert "T.vectorized" not in out
    assert 'VectorCopy(dst=regs, dst_offset=0, src=B, src_offset=T.cast(base // 128, "int64") * 128' in out
    # swizzle16 of 128-element rows: the 16-byte chunk index XOR-ed with the row mod 8
    physical = "base // 128 * 128 + (base % 128 ^ (base // 128 & 7) << 3)"
    assert f"VectorCopy(dst=B_s, dst_offset={physical}, src=regs, src_offset=0, bytes=16)" in out


@pass_test("vectorize-loops", SM80)
def test_a_run_into_a_swizzled_tile_off_its_alignment_stays_a_loop(target):
    """Starting 4 past a multiple of 8, a run of 8 would straddle two 16-byte chunks of the swizzled tile."""
    from tilecraft.testing.passes import run_pass

    out = str(run_pass(target, "vectorize-loops", _unpacked_stores(4), prefix=True))
    assert out.count("T.vectorized(8)") == 2 and "VectorCopy(dst=B_s" not in out
