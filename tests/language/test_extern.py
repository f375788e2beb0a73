"""TVM's builtins TileLang's dequantize examples use: `T.import_source`, `T.call_extern`, `T.access_ptr`
(and `buf.access_ptr`), `T.dp4a`, `T.alloc_buffer`, `T.shift_left`."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import LoweringError, ParseError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.function import WORKSPACE_ATTR
from tilecraft.ir.visitor import walk
from tilecraft.language.extern import IMPORT_SOURCE_ATTR, imported_sources

DECODER = """
__device__ void twice(const float* x, float* y, int n) { for (int i = 0; i < n; ++i) y[i] = 2.0f * x[i]; }
"""


def extern_kernel(source=DECODER):
    @T.prim_func
    def k(A: T.Tensor((128, 4), "float32"), B: T.Tensor((128, 4), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            x = T.alloc_local((4,), "float32")
            y = T.alloc_local((4,), "float32")
            T.import_source(source)
            T.import_source(source)  # the same text twice: imported once
            for i in T.serial(4):
                x[i] = A[tx, i]
            T.call_extern("twice", T.access_ptr(x, "r"), y.access_ptr("w"), 4, dtype="handle")
            for i in T.serial(4):
                B[tx, i] = y[i]

    return k


def calls(func, op):
    return [n for n in walk(func.body) if isinstance(n, E.Call) and n.op == op]


def test_import_source_is_recorded_once_with_its_line():
    func = extern_kernel()
    ((code, file, line, col),) = imported_sources(func)
    assert code == DECODER and file.endswith("test_extern.py") and line > 0
    assert func.attr(IMPORT_SOURCE_ATTR)[0][0] == DECODER


def test_import_source_of_none_imports_nothing():
    # TileLang's gemv example calls T.import_source(None) when fast decoding is off
    func = extern_kernel(source=None)
    assert imported_sources(func) == ()


def test_import_source_needs_text():
    with pytest.raises(ParseError, match="T.import_source takes the source text"):

        @T.prim_func
        def bad(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32):
                T.import_source(3)
                A[0] = 1.0


def test_call_extern_alone_is_a_statement_and_its_pointers_address_local_arrays():
    func = extern_kernel()
    (stmt,) = [n for n in walk(func.body) if isinstance(n, S.Evaluate)]
    call = stmt.value
    assert call.op == "call_extern" and call.args[0].value == "twice" and str(call.dtype) == "int32"
    x_ptr, y_ptr, n = call.args[1:]
    assert x_ptr.op == y_ptr.op == "access_ptr"
    assert (x_ptr.args[0].buffer.name, x_ptr.args[1].value) == ("x", "r")
    assert (y_ptr.args[0].buffer.name, y_ptr.args[1].value) == ("y", "w")
    assert E.const_value(n) == 4


def test_call_extern_takes_tvms_argument_order_and_gives_a_value():
    @T.prim_func
    def k(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            A[tx] = T.call_extern("float32", "my_fn", A[tx], 2)

    (call,) = calls(k, "call_extern")
    assert str(call.dtype) == "float32" and call.args[0].value == "my_fn" and len(call.args) == 3


def test_call_extern_needs_a_c_name():
    with pytest.raises(ParseError, match="is not a C identifier"):

        @T.prim_func
        def bad(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                T.call_extern("handle", "not a name", A[0])


def test_access_ptr_forms():
    @T.prim_func
    def k(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            x = T.alloc_local((8,), "float32")
            v = T.alloc_var("int32")
            T.call_extern("handle", "f", T.access_ptr(x[2], "rw"), x.access_ptr(1, offset=4),
                          T.access_ptr(x, 2, 8), T.access_ptr(v, "w"))  # fmt: skip
            A[0] = x[0]

    (call,) = calls(k, "call_extern")
    got = [(E.const_value(p.args[0].indices[0]), p.args[1].value, E.const_value(p.args[2])) for p in call.args[1:]]
    assert got == [(2, "rw", 1), (4, "r", 1), (0, "w", 8), (0, "w", 1)]


def test_access_ptr_of_shared_memory_is_refused():
    with pytest.raises(ParseError, match=r"T.access_ptr of S_ \(shared.dyn\): .*T.alloc_local"):

        @T.prim_func
        def bad(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                S_ = T.alloc_shared((32,), "float32")  # noqa: N806
                T.call_extern("handle", "f", T.access_ptr(S_, "r"))
                A[0] = S_[0]


def test_import_source_is_refused_on_the_cpu_at_its_line():
    with pytest.raises(LoweringError) as info:
        tilecraft.lower(extern_kernel(), target="c")
    text = str(info.value)
    assert "test_extern.py" in text and "T.import_source(source)" in text
    assert "T.import_source: the CPU target compiles C for the host" in text and "(target: c" in text
    assert "run the kernel on a CUDA target" in text


def dp4a_kernel(n: int):
    @T.prim_func
    def dot(A: T.Tensor((32, n), "int8"), B: T.Tensor((32, n), "int8"), C: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            a = T.alloc_local((n,), "int8")
            b = T.alloc_local((n,), "int8")
            acc = T.alloc_local((1,), "int32")
            for i in T.serial(n):
                a[i] = A[tx, i]
                b[i] = B[tx, i]
            acc[0] = 7
            for k in T.serial(n // 4):
                T.dp4a(a[k * 4], b[k * 4], acc[0])
            C[tx] = acc[0]

    return dot


def test_dp4a_accumulates_four_products_per_call_on_the_cpu():
    n = 16
    kernel = tilecraft.compile(dp4a_kernel(n), target="c")
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (32, n), dtype=np.int8)
    b = rng.integers(-128, 128, (32, n), dtype=np.int8)
    c = np.zeros(32, np.int32)
    kernel(a, b, c)
    np.testing.assert_array_equal(c, 7 + (a.astype(np.int64) * b.astype(np.int64)).sum(axis=1))


def test_dp4a_needs_8_bit_operands():
    with pytest.raises(ParseError, match="dp4a multiplies int8 or uint8"):

        @T.prim_func
        def bad(C: T.Tensor((32,), "int32")):
            with T.Kernel(1, threads=32):
                a = T.alloc_local((4,), "float16")
                acc = T.alloc_local((1,), "int32")
                T.dp4a(a[0], a[0], acc[0])
                C[0] = acc[0]


def test_alloc_buffer_maps_by_scope():
    n, splits = 40, 2

    @T.prim_func
    def row_sum(A: T.Tensor((8, n), "float32"), Out: T.Tensor((8,), "float32")):
        partial = T.alloc_buffer([splits, 8], "float32")  # TVM's default scope: global, a workspace
        with T.Kernel(8, splits, threads=32) as (r, s):
            tile = T.alloc_buffer((n // splits,), "float32", scope="shared")
            acc = T.alloc_buffer((1,), "float32", scope="local")
            for k in T.serial(n // splits):
                tile[k] = A[r, s * (n // splits) + k]
            acc[0] = 0.0
            for k in T.serial(n // splits):
                acc[0] += tile[k]
            partial[s, r] = acc[0]
        with T.Kernel(8, threads=32) as r:
            Out[r] = partial[0, r] + partial[1, r]

    assert row_sum.attr(WORKSPACE_ATTR) == (2,) and row_sum.params[2].name == "partial"
    scopes = {n.buffer.name: n.buffer.scope for n in walk(row_sum.body) if isinstance(n, S.Allocate)}
    assert scopes == {"tile": "shared", "acc": "local"}
    a = np.random.default_rng(1).standard_normal((8, n)).astype(np.float32)
    out = tilecraft.compile(row_sum, out_idx=[-1], target="c")(a)
    np.testing.assert_allclose(out, a.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_alloc_buffer_refuses_an_unknown_scope():
    with pytest.raises(ParseError, match="T.alloc_buffer: scope 'texture'"):

        @T.prim_func
        def bad(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32):
                t = T.alloc_buffer((4,), "float32", scope="texture")
                A[0] = t[0]


def test_shift_left_of_a_python_int_is_int32_as_in_tvm():
    @T.prim_func
    def k(S_: T.Tensor((32,), "uint8"), Out: T.Tensor((32,), "int32")):  # noqa: N803
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            Out[tx] = T.shift_left(1, S_[tx]) + T.shift_right(T.bitwise_and(255, S_[tx]), 1)

    (shl,) = calls(k, "shift_left")
    assert str(shl.dtype) == "int32"
    s = np.arange(32, dtype=np.uint8) % 20
    out = np.zeros(32, np.int32)
    tilecraft.compile(k, target="c")(s, out)
    np.testing.assert_array_equal(out, (1 << s.astype(np.int64)) + (s >> 1))
