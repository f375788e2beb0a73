"""apply-lds-layouts (HIP), Before/Expected: LDS tiles with an LdsLayout become 1-D buffers addressed at
each element's swizzled offset; the MFMA call reads the same buffer."""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.hip.lds_layout import lds_layout
from tilecraft.ir.printer import print_ir
from tilecraft.testing.passes import assert_pass, pass_test, run_pass

HIP = "hip -arch=gfx942"


@pass_test("apply-lds-layouts", HIP)
def test_accesses_of_a_swizzled_tile_use_its_physical_offsets(target):
    """Each access of a swizzled tile goes to the element's physical offset in a 1-D buffer."""
    # s[r, c] of an 8 x 64 float16 tile (128-byte rows: the key is the row, f >> 6) is s[p(f)] with
    # f = r * 64 + c and p(f) = ((f >> 3 ^ (f >> 6 ^ f >> 6 >> 3 << 1) & 7) << 3) + (f & 7): the 16-byte
    # granule f >> 3 XOR the key, back in elements, plus the offset within the granule. The annotation
    # is gone; other buffers keep their indices.

    @T.prim_func
    def before(A: T.Tensor((8, 64), "float16"), B: T.Tensor((8, 64), "float16")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((8, 64), "float16")
            T.annotate_layout({s: lds_layout(8, 64, 2)})
            for r in T.serial(8):
                s[r, tx] = A[r, tx]
            T.sync_threads()
            for r in T.serial(8):
                B[r, tx] = s[7 - r, tx]

    @T.prim_func
    def expected(A: T.Tensor((8, 64), "float16"), B: T.Tensor((8, 64), "float16")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((512,), "float16")
            for r in T.serial(8):
                s[
                    ((r * 64 + tx >> 3 ^ (r * 64 + tx >> 6 ^ (r * 64 + tx >> 6 >> 3) << 1) & 7) << 3)
                    + (r * 64 + tx & 7)
                ] = A[r, tx]  # noqa: E501
            T.sync_threads()
            for r in T.serial(8):
                B[r, tx] = s[
                    (
                        (
                            (7 - r) * 64 + tx >> 3
                            ^ ((7 - r) * 64 + tx >> 6 ^ ((7 - r) * 64 + tx >> 6 >> 3) << 1) & 7
                        )
                        << 3
                    )
                    + ((7 - r) * 64 + tx & 7)
                ]  # noqa: E501

    assert_pass(target, "apply-lds-layouts", before, expected)


@pass_test("apply-lds-layouts", HIP)
def test_the_mfma_call_and_atomics_address_the_same_flat_tile(target):
    """The gemm reads the flattened tile in the layout its copies were addressed with; an atomic update
    of the tile is addressed through the layout too."""
    # As[1, 8] is offset 72 of the 64 x 64 tile: its granule 9 XOR key(row 1) = 1 is granule 8, element 64.

    @T.prim_func
    def before(
        A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")
    ):
        with T.Kernel(1, threads=128):
            As = T.alloc_shared((64, 64), "float16")
            Bs = T.alloc_shared((64, 64), "float16")
            Cf = T.alloc_fragment((64, 64), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.atomic_add(As[1, 8], 1.0)
            T.gemm(As, Bs, Cf, clear_accum=True)
            T.copy(Cf, C)

    text = print_ir(run_pass(target, "apply-lds-layouts", before, prefix=True))
    layout = "T.ir.hip.LdsLayout(element_bytes=2, line_shift=6)"
    assert 'As = T.alloc_shared((4096,), "float16")' in text
    assert "T.ir.hip.MfmaGemm(a=As, b=Bs, c=Cf, m=64, n=64, k=64," in text
    assert f"kpack=True, layout_a={layout}, layout_b={layout})" in text
    shift = 'T.ir.Call(dtype="int32", op=\'shift_right\', args=(72, {}))'
    granule = f"{shift.format(3)} ^ ({shift.format(6)} ^ {shift.format(6)} >> 3 << 1) & 7"
    within = 'T.ir.Call(dtype="int32", op=\'bitwise_and\', args=(72, 7))'
    assert f"indices=((({granule}) << 3) + {within},)" in text
    assert lds_layout(64, 64, 2).offset(72) == 64
