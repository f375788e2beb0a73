"""lower-buffer-views, Before/Expected: accesses through a `T.Tensor(shape, dtype, A.data)` view address A."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.testing.passes import assert_pass, pass_test


@pass_test("lower-buffer-views", "c", SM80, OPENCL, WEBGPU)
def test_a_view_access_reads_the_base_buffer_at_the_flattened_index(target):
    """V[j, i] of an 8 x 8 view of a 64-element buffer A reads A[j * 8 + i]; the view is gone."""

    @T.prim_func
    def before(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            V = T.Tensor((8, 8), "float32", A.data)
            for i in T.serial(8):
                for j in T.serial(8):
                    B[i * 8 + j] = V[j, i]

    @T.prim_func
    def expected(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.serial(8):
                for j in T.serial(8):
                    B[i * 8 + j] = A[j * 8 + i]

    assert_pass(target, "lower-buffer-views", before, expected)


@pass_test("lower-buffer-views", "c", SM80, OPENCL, WEBGPU)
def test_a_store_through_a_view_writes_the_base_buffer(target):
    """A store through an 8 x 8 view of a 4 x 16 buffer writes the base at the same flat offset."""

    @T.prim_func
    def before(A: T.Tensor((4, 16), "float32")):
        with T.Kernel(1, threads=64):
            V = T.Tensor((8, 8), "float32", A.data)
            for i in T.serial(8):
                V[i, 7 - i] = 1.0

    @T.prim_func
    def expected(A: T.Tensor((4, 16), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.serial(8):
                A[0, i * 8 + (7 - i)] = 1.0

    assert_pass(target, "lower-buffer-views", before, expected)


@pass_test("lower-buffer-views", "c")
def test_a_view_of_a_shared_tile_addresses_the_tile_in_its_own_dims(target):
    """V[k] of a 1-D view of a 4 x 8 shared tile reads tile[k // 8, k % 8]: the tile's own dims, which a
    layout it has still maps (lower-to-threads does this on the SIMT targets)."""

    @T.prim_func
    def before(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tile = T.alloc_shared((4, 8), "float32")
            V = T.Tensor((32,), "float32", tile.data)
            for k in T.serial(32):
                A[k] = V[k]

    @T.prim_func
    def expected(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tile = T.alloc_shared((4, 8), "float32")
            for k in T.serial(32):
                A[k] = tile[k // 8, k % 8]

    assert_pass(target, "lower-buffer-views", before, expected)


@pass_test("lower-buffer-views", "c", SM80, OPENCL)
def test_a_view_of_another_dtype_reads_and_writes_the_bases_bits(target):
    """A float32 view of a float16 tensor reads the bits of two elements (the lower first, little-endian)
    and a store through it writes both; a float16 view of a float32 tensor shifts its half out."""

    @T.prim_func
    def before(A: T.Tensor((8,), "float16"), B: T.Tensor((4,), "float32"), C: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            wide = T.Tensor((4,), "float32", A.data)
            halves = T.Tensor((8,), "float16", C.data)
            for k in T.serial(4):
                B[k] = wide[k]
                wide[k] = T.cast(halves[k + 1], "float32")

    @T.prim_func
    def expected(A: T.Tensor((8,), "float16"), B: T.Tensor((4,), "float32"), C: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            for k in T.serial(4):
                B[k] = T.reinterpret(
                    T.bitwise_or(
                        T.Cast("uint32", T.reinterpret(A[k * 2], "uint16")),
                        T.shift_left(T.Cast("uint32", T.reinterpret(A[k * 2 + 1], "uint16")), T.uint32(16)),
                    ),
                    "float32",
                )
                wide_bits: T.uint32 = T.reinterpret(
                    T.Cast("float32", T.reinterpret(
                        T.Cast("uint16", T.shift_right(T.reinterpret(C[(k + 1) // 2], "uint32"),
                                                       T.Cast("uint32", (k + 1) % 2 * 16))), "float16")),
                    "uint32",
                )
                A[k * 2] = T.reinterpret(T.Cast("uint16", wide_bits), "float16")
                A[k * 2 + 1] = T.reinterpret(T.Cast("uint16", T.shift_right(wide_bits, T.uint32(16))), "float16")

    assert_pass(target, "lower-buffer-views", before, expected)
