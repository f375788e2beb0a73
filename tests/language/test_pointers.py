"""`T.ptr` parameters and `T.make_tensor(address, shape, dtype)`: tensors at raw addresses, from a pointer
parameter (a call passes an int or an array) or from a table of addresses read in the kernel, used as
tensor parameters are (element accesses, T.copy, T.gemm); checked on the CPU against float64 references
with ragged sizes, compiled by nvcc, and refused at lowering where kernels cannot address memory so."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_roundtrip
from tests.transform.helpers import WEBGPU, assert_nvcc_compiles
from tilecraft.errors import ArgumentError, LoweringError, ParseError


def _gemm(block_m=16, block_n=16, block_k=16):
    """C = A @ B of (m, k) and (k, n) float16 tensors at the addresses a call passes, accumulated in float32."""

    @T.prim_func
    def gemm(a_ptr: T.ptr, b_ptr: T.ptr, c_ptr: T.ptr, m: T.int32, n: T.int32, k: T.int32):
        A = T.make_tensor(a_ptr, (m, k), "float16")
        B = T.make_tensor(b_ptr, (k, n), "float16")
        C = T.make_tensor(c_ptr, (m, n), "float32")
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_m, block_k), "float16")
            B_s = T.alloc_shared((block_k, block_n), "float16")
            C_l = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                T.copy(A[by * block_m, ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block_n], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * block_m, bx * block_n])

    return gemm


def _table_copy(groups: int, n: int):
    @T.prim_func
    def table_copy(src: T.Tensor([groups], T.ptr), out: T.Tensor([groups, n], "float32")):
        with T.Kernel(groups, threads=32) as bx:
            S = T.make_tensor(src[bx], (n,), "float32")
            for i in T.Parallel(n):
                out[bx, i] = S[i] * 2.0

    return table_copy


def _grouped_gemm(sizes: list[int], n: int, k: int, block: int = 16):
    """One gemm per group (A_g of sizes[g] rows, zero-padded to max(sizes)), the group's tiles found from
    a table of tile offsets and its tensors from tables of addresses."""
    groups, most = len(sizes), max(sizes)
    tiles = sum(-(-s // block) for s in sizes)

    @T.prim_func
    def grouped(a_ptrs: T.Tensor([groups], T.ptr), b_ptrs: T.Tensor([groups], T.ptr),
                c_ptrs: T.Tensor([groups], T.ptr), offsets: T.Tensor([groups], T.int32)):  # fmt: skip
        with T.Kernel(tiles, T.ceildiv(n, block), threads=32) as (bx, by):
            A_s = T.alloc_shared((block, block), "float16")
            B_s = T.alloc_shared((block, block), "float16")
            C_l = T.alloc_fragment((block, block), "float32")
            g = T.alloc_var(T.int32)
            first = T.alloc_var(T.int32)
            g = 0
            first = 0
            for i in range(groups):
                mine = bx >= offsets[i]
                g = T.if_then_else(mine, i, g)
                first = T.if_then_else(mine, offsets[i], first)
            row = (bx - first) * block
            A = T.make_tensor(a_ptrs[g], (most, k), "float16")
            B = T.make_tensor(b_ptrs[g], (k, n), "float16")
            C = T.make_tensor(c_ptrs[g], (most, n), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(k, block), num_stages=1):
                T.copy(A[row, ko * block], A_s)
                T.copy(B[ko * block, by * block], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[row, by * block])

    return grouped


def test_gemm_of_tensors_at_pointer_parameters():
    m, n, k = 45, 37, 29
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    kernel = tilecraft.compile(_gemm(), target="c")
    want = a.astype(np.float64) @ b.astype(np.float64)
    for as_int in (True, False):  # addresses as ints, or the arrays themselves
        c = np.full((m, n), np.nan, np.float32)
        args = [x.ctypes.data for x in (a, b, c)] if as_int else [a, b, c]
        kernel(*args, m, n, k)
        np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3)


def test_tensors_from_a_table_of_addresses():
    groups, n = 3, 13
    rng = np.random.default_rng(1)
    sources = [rng.standard_normal(n).astype(np.float32) for _ in range(groups)]
    table = np.array([s.ctypes.data for s in sources], np.int64)
    out = np.full((groups, n), np.nan, np.float32)
    tilecraft.compile(_table_copy(groups, n), target="c")(table, out)
    np.testing.assert_array_equal(out, np.stack(sources) * 2)


def test_grouped_gemm_through_tables():
    sizes, n, k, block = [8, 12, 17], 32, 32, 16
    rng = np.random.default_rng(2)
    most = max(sizes)
    a = [np.zeros((most, k), np.float16) for _ in sizes]
    exact = [rng.standard_normal((s, k)).astype(np.float16) for s in sizes]
    for buf, x in zip(a, exact):
        buf[: len(x)] = x
    b = [rng.standard_normal((k, n)).astype(np.float16) for _ in sizes]
    c = [np.full((most, n), np.nan, np.float32) for _ in sizes]
    offsets = np.cumsum([0] + [-(-s // block) for s in sizes[:-1]]).astype(np.int32)
    tables = [np.array([x.ctypes.data for x in xs], np.int64) for xs in (a, b, c)]
    tilecraft.compile(_grouped_gemm(sizes, n, k, block), target="c")(*tables, offsets)
    for out, x, y, s in zip(c, exact, b, sizes):
        np.testing.assert_allclose(out[:s], x.astype(np.float64) @ y.astype(np.float64), rtol=1e-3, atol=1e-3)


def test_the_address_is_read_where_the_tensor_is_made():
    """T.make_tensor binds the address once: a later store into the table does not move the tensor."""

    @T.prim_func
    def rebind(table: T.Tensor([2], T.ptr), out: T.Tensor([4], "float32")):
        with T.Kernel(1, threads=1):
            X = T.make_tensor(table[0], (4,), "float32")
            table[0] = table[1]
            for i in T.serial(4):
                out[i] = X[i]

    first, second = np.arange(4, dtype=np.float32), np.arange(4, 8, dtype=np.float32)
    table = np.array([first.ctypes.data, second.ctypes.data], np.int64)
    out = np.full(4, np.nan, np.float32)
    tilecraft.compile(rebind, target="c")(table, out)
    np.testing.assert_array_equal(out, first)
    assert table[0] == second.ctypes.data


def test_the_ir_prints_and_parses_back():
    assert "a_ptr: T.ptr" in assert_roundtrip(_gemm())
    assert "T.make_tensor(S_address, (13,)" in assert_roundtrip(_table_copy(2, 13))


def test_a_table_of_pointers_is_int64():
    func = _table_copy(4, 8)
    table = func.buffer_map[func.params[0]]
    assert table.dtype == "int64" and [int(d) for d in table.shape] == [4]


def test_misuse_is_refused():
    with pytest.raises(ParseError, match="outside T.Kernel takes a T.ptr parameter"):

        @T.prim_func
        def not_a_pointer(a: T.int64, out: T.Tensor((4,), "float32")):
            A = T.make_tensor(a, (4,), "float32")
            with T.Kernel(1, threads=1):
                out[0] = A[0]

    with pytest.raises(ParseError, match="takes an address"):

        @T.prim_func
        def float_address(x: T.float32, out: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                A = T.make_tensor(x, (4,), "float32")
                out[0] = A[0]

    kernel = tilecraft.compile(_gemm(), target="c")
    with pytest.raises(ArgumentError, match="an address, T.ptr"):
        kernel("not an address", 0, 0, 1, 1, 1)


@pytest.mark.parametrize("target", ["opencl -fp64=true", "metal -family=apple8", WEBGPU])
def test_targets_that_reach_memory_only_through_arguments_refuse_it(target):
    with pytest.raises(LoweringError, match=r"T.make_tensor of an address \(S\) is not supported") as err:
        tilecraft.lower(_table_copy(2, 8), target=target)
    assert 'S = T.make_tensor(src[bx], (n,), "float32")' in str(err.value)


def test_cuda_source_compiles(tmp_path):
    source = assert_nvcc_compiles(_gemm(64, 64, 32), tmp_path)
    assert "(uintptr_t)(a_ptr)" in source
    assert_nvcc_compiles(_grouped_gemm([8, 12, 17], 32, 32), tmp_path)
