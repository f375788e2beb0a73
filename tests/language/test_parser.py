"""The parser's rules: parse-time Python, macros, bindings, loops, annotations and the eager style."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tests.language import future_kernels
from tests.language.helpers import assert_roundtrip, node_types
from tilecraft.errors import ParseError, TilecraftError
from tilecraft.ir import Buffer, structural_equal, walk
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.visitor import free_vars
from tilecraft.language.parser.core import EagerParam, parse_function
from tilecraft.transform.check import check_semantics

BLOCK = 32


def nodes(func, cls):
    return [n for n in walk(func.body) if isinstance(n, cls)]


# ---------------------------------------------------------------------------------- annotations


def test_future_annotations_module():
    assert_roundtrip(future_kernels.scale_rows)
    check_semantics(future_kernels.scale_rows)
    A, B, alpha, n = future_kernels.scale_rows.params
    assert [E.const_value(s) for s in A.shape] == [256, 64] and B.dtype == dt.float16
    assert alpha.dtype == dt.float32 and n.dtype == dt.int32


def test_future_annotations_name_locals_of_a_factory():
    add = future_kernels.make_add(1000, "bfloat16")
    assert [p.dtype for p in add.params] == [dt.bfloat16, dt.bfloat16]
    assert_roundtrip(add)


def test_factory_locals_used_only_in_annotations():
    """Python evaluates the annotations in the factory's scope; the parser uses those values."""

    def make(shape, dtype):
        @T.prim_func
        def k(A: T.Tensor(shape, dtype)):
            with T.Kernel(1, threads=32):
                A[0, 0] = 0

        return k

    (A,) = make((8, 4), "int16").params
    assert A.dtype == dt.int16 and [E.const_value(s) for s in A.shape] == [8, 4]


def test_tensor_subscript_spelling_equals_the_call():
    assert structural_equal(
        T.Tensor[[64, 32], "float16"].to_buffer("A"), T.Tensor((64, 32), "float16").to_buffer("A")
    )

    def subscripted(dtype="float16"):
        @T.prim_func
        def k(X: T.Tensor[[64, 32], dtype], Y: T.Tensor[(64,), T.float32]):
            with T.Kernel(1, threads=32):
                Y[0] = X[0, 0]

        return k

    def called():
        @T.prim_func
        def k(X: T.Tensor((64, 32), "float16"), Y: T.Tensor([64], "float32")):
            with T.Kernel(1, threads=32):
                Y[0] = X[0, 0]

        return k

    assert structural_equal(subscripted(), called())
    assert T.Buffer is T.Tensor


# ---------------------------------------------------------------------------------- parse-time Python

SCALE = 0.5


def tile_for(n: int) -> int:
    return 64 if n >= 1024 else 16


def test_closures_and_globals_are_evaluated_at_parse_time():
    n = 2048
    block = tile_for(n)

    @T.prim_func
    def k(A: T.Tensor((n,), "float32")):
        with T.Kernel(n // block, threads=128) as bx:
            for i in T.Parallel(block):
                A[bx * block + i] = A[bx * block + i] * SCALE + BLOCK

    (launch,) = nodes(k, S.KernelLaunch)
    assert E.const_value(launch.grid[0]) == 32
    (loop,) = nodes(k, S.For)
    assert E.const_value(loop.extent) == 64
    assert {n.value for n in walk(k.body) if isinstance(n, E.FloatImm)} == {0.5, 32.0}


def test_python_if_is_decided_at_parse_time_symbolic_if_becomes_ir():
    def make(use_bias: bool):
        @T.prim_func
        def k(A: T.Tensor((64,), "float32"), n: T.int32):
            with T.Kernel(1, threads=64):
                for i in T.Parallel(64):
                    if use_bias:
                        A[i] = A[i] + 1.0
                    else:
                        A[i] = A[i] * 2.0
                    if i < n:
                        A[i] = 0.0
                    if BLOCK > 16 and use_bias:
                        A[i] = 3.0

        return k

    with_bias, without = make(True), make(False)
    assert len(nodes(with_bias, S.IfThenElse)) == 1 and len(nodes(without, S.IfThenElse)) == 1
    assert len(nodes(with_bias, S.BufferStore)) == 3 and len(nodes(without, S.BufferStore)) == 2
    (cond,) = [s.condition for s in nodes(with_bias, S.IfThenElse)]
    assert isinstance(cond, E.LT)


def test_if_on_a_folded_constant_is_decided():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            if T.int32(4) > 3:
                A[0] = 1.0
            else:
                A[0] = 2.0

    assert "IfThenElse" not in node_types(k)
    assert nodes(k, S.BufferStore)[0].value.value == 1.0


def test_conditional_expression_and_logic_on_ir_become_select():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), n: T.int32):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                A[i] = 1.0 if i < n and not i >= 60 else 2.0
                A[i] = A[i] if BLOCK > 64 else 5.0

    stores = nodes(k, S.BufferStore)
    assert isinstance(stores[0].value, E.Select) and isinstance(stores[0].value.condition, E.And)
    assert isinstance(stores[1].value, E.FloatImm)


def test_python_for_over_a_sequence_unrolls():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for scale in (1.0, 2.0, 3.0):
                A[0] = A[0] * scale
            for buf in [A, B]:
                T.fill(buf, 0)
            for idx, value in enumerate((4.0, 5.0)):
                B[idx] = value

    assert "For" not in node_types(k)
    stores = nodes(k, S.BufferStore)
    assert [s.value.b.value for s in stores[:3]] == [1.0, 2.0, 3.0]
    assert [f.dst.buffer.name for f in nodes(k, S.Fill)] == ["A", "B"]
    assert [E.const_value(s.indices[0]) for s in stores[3:]] == [0, 1]


def test_parse_time_assert_and_helper_functions():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32")):
        assert BLOCK % 16 == 0, "tile must be a multiple of 16"

        def double(x):
            return x * 2

        with T.Kernel(1, threads=64):
            for i in T.Parallel(BLOCK):
                A[double(i)] = 1.0

    (store,) = nodes(k, S.BufferStore)
    assert isinstance(store.indices[0], E.Mul)


def test_failing_parse_time_assert_reports_its_message():
    with pytest.raises(ParseError, match="tile must be a multiple of 64"):

        @T.prim_func
        def k(A: T.Tensor((64,), "float32")):
            assert BLOCK % 64 == 0, "tile must be a multiple of 64"


# ---------------------------------------------------------------------------------- bindings


def test_plain_assignment_of_ir_makes_an_immutable_let():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), n: T.int32):
        with T.Kernel(1, threads=64) as bx:
            base = bx * 64
            scale = 2
            limit: T.int64 = n
            A[base] = T.cast(scale + limit, "float32")

    lets = nodes(k, S.LetStmt)
    assert [(let.var.name, let.var.dtype) for let in lets] == [("base", dt.int32), ("limit", dt.int64)]
    (store,) = nodes(k, S.BufferStore)
    assert store.indices[0] is lets[0].var


def test_rebinding_in_the_same_block_shadows():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), n: T.int32):
        with T.Kernel(1, threads=64):
            x = n + 1
            x = x * 2
            A[x] = 0.0

    first, second = nodes(k, S.LetStmt)
    assert second.value.a is first.var
    assert nodes(k, S.BufferStore)[0].indices[0] is second.var


def test_alloc_var_is_the_mutable_scalar():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            total = T.alloc_var("float32", init=0)
            count = T.alloc_var("int32")
            count = 0
            for i in T.serial(64):
                total += A[i]
                count = count + 1
            A[0] = total / T.cast(count, "float32")

    stores = [s for s in nodes(k, S.BufferStore) if s.buffer.scope == "local.var"]
    assert [s.buffer.name for s in stores] == ["total", "count", "total", "count"]
    assert isinstance(stores[2].value, E.Add) and isinstance(stores[2].value.a, E.BufferLoad)


def test_augmented_assignment_on_buffer_elements():
    @T.prim_func
    def k(A: T.Tensor((16, 16), "float32"), x: T.float32):
        with T.Kernel(1, threads=64):
            acc = T.alloc_fragment((16, 16), "float32")
            for i, j in T.Parallel(16, 16):
                acc[i, j] += x
                acc[i, j] -= 1.0
                acc[i, j] *= A[i, j]
                acc[i, j] /= 2.0
            T.copy(acc, A)

    stores = nodes(k, S.BufferStore)
    assert [type(s.value).__name__ for s in stores] == ["Add", "Sub", "Mul", "Div"]
    for s in stores:
        assert isinstance(s.value.a, E.BufferLoad) and s.value.a.buffer is s.buffer
        assert [v.name for v in s.value.a.indices] == ["i", "j"]


def test_kernel_bindings_unpack():
    @T.prim_func
    def k(A: T.Tensor((8, 8, 8), "float32")):
        with T.Kernel(2, 4, 8, threads=(32, 4)) as (bx, by):
            bz = T.get_block_binding(2)
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            A[bx, by, bz] = T.cast(tx + ty, "float32")
        with T.Kernel(8) as (b,):
            A[b, 0, 0] = 0.0

    first, second = nodes(k, S.KernelLaunch)
    assert [v.name for v in first.block_vars] == ["bx", "by", "bz"]
    assert [v.name for v in first.thread_vars] == ["tx", "ty"]
    (store,) = [s for s in nodes(k, S.BufferStore) if s.buffer.name == "A" and len(s.indices) == 3][:1]
    assert [i is v for i, v in zip(store.indices, first.block_vars)] == [True, True, True]
    assert [v.name for v in second.block_vars] == ["b"] and second.threads == (128,)


def test_tuple_assignment_reads_every_value_before_it_writes():
    """`a[0], a[1] = a[1], a[0]` swaps, as in Python (TileLang's 2:4 compressor swaps so): the values
    that read memory are bound first, then stored; names alone bind as before."""
    import numpy as np

    import tilecraft

    @T.prim_func
    def swaps(A: T.Tensor((4,), "int32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1):
            pair = T.alloc_local((2,), "int32")
            x = T.alloc_var("int32")
            y = T.alloc_var("int32")
            pair[0], pair[1] = A[0], A[1]
            pair[0], pair[1] = pair[1], pair[0]
            x, y = A[2], A[3]
            x, y = y, x
            A[0], A[1] = A[1] + 10, A[0]
            B[0], B[1], B[2], B[3] = pair[0], pair[1], x, y

    a, b = np.array([1, 2, 3, 4], np.int32), np.zeros(4, np.int32)
    tilecraft.compile(swaps, target="c")(a, b)
    assert b.tolist() == [2, 1, 4, 3] and a.tolist()[:2] == [12, 1]
    assert_roundtrip(swaps)


def test_range_is_a_serial_loop():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in range(4, 12):
                A[i] = 0.0

    (loop,) = nodes(k, S.For)
    assert loop.kind is S.ForKind.SERIAL
    assert (E.const_value(loop.min), E.const_value(loop.extent)) == (4, 8)


# ---------------------------------------------------------------------------------- macros


@T.macro
def online_max(acc, scores, row_max):
    T.reduce_max(scores, row_max, dim=1, clear=False)
    for i, j in T.Parallel(16, 16):
        acc[i, j] = T.exp2(scores[i, j] - row_max[i])


@T.macro
def scaled(buf, i, factor=2.0):
    value = buf[i] * factor
    return value + 1.0


@T.macro
def twice_scaled(buf, i):
    return scaled(buf, i) * 2.0


def test_macro_inlines_into_the_caller():
    def with_macro():
        @T.prim_func
        def k(A: T.Tensor((16, 16), "float32")):
            with T.Kernel(1, threads=128):
                acc = T.alloc_fragment((16, 16), "float32")
                scores = T.alloc_fragment((16, 16), "float32")
                row_max = T.alloc_fragment((16,), "float32")
                online_max(acc, scores, row_max)
                online_max(acc, scores, row_max)

        return k

    def by_hand():
        @T.prim_func
        def k(A: T.Tensor((16, 16), "float32")):
            with T.Kernel(1, threads=128):
                acc = T.alloc_fragment((16, 16), "float32")
                scores = T.alloc_fragment((16, 16), "float32")
                row_max = T.alloc_fragment((16,), "float32")
                T.reduce_max(scores, row_max, dim=1, clear=False)
                for i, j in T.Parallel(16, 16):
                    acc[i, j] = T.exp2(scores[i, j] - row_max[i])
                T.reduce_max(scores, row_max, dim=1, clear=False)
                for i, j in T.Parallel(16, 16):
                    acc[i, j] = T.exp2(scores[i, j] - row_max[i])

        return k

    assert structural_equal(with_macro(), by_hand())


def test_macro_returns_a_value_and_sees_its_own_names():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16):
            for i in T.Parallel(16):
                A[i] = scaled(A, i) + twice_scaled(A, i) + scaled(A, i, factor=3.0)

    lets = nodes(k, S.LetStmt)
    assert [let.var.name for let in lets] == ["value", "value", "value"]
    assert [let.value.b.value for let in lets] == [2.0, 2.0, 3.0]
    assert_roundtrip(k)


def _row_max_dropped(x, out):
    T.reduce_max(x, out, dim=1)  # built, not returned: placed at the call, as TileLang's builder does


def _row_max_returned(x, out):
    return T.reduce_max(x, out, dim=1)


def _row_max_twice_removed(x, out):
    _row_max_returned(x, out)  # what the inner helper returned is dropped here: placed at the outer call


def _kernel_calling(helper):
    @T.prim_func
    def k(A: T.Tensor((64, 32), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((64, 32), "float32")
            m = T.alloc_fragment((64,), "float32")
            T.copy(A, x)
            helper(x, m)
            T.copy(m, B)

    return k


@pytest.mark.parametrize("helper", [_row_max_dropped, _row_max_returned, _row_max_twice_removed])
def test_a_tile_op_a_plain_helper_builds_reaches_the_kernel_once(helper):
    """Returned (the expression statement places it) or dropped (placed at the call), the reduction is
    in the kernel exactly once (tests/language/test_python_helpers.py runs such kernels)."""
    assert len(nodes(_kernel_calling(helper), S.Reduce)) == 1


def test_macro_outside_a_kernel_function_is_refused():
    with pytest.raises(TilecraftError, match="only be called inside"):
        scaled(None, 0)


def test_macro_with_wrong_arguments_is_located():
    with pytest.raises(ParseError, match="macro scaled: missing a required argument: 'i'"):

        @T.prim_func
        def k(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=16):
                A[0] = scaled(A)


@T.macro
def tree_sum(tile, lo, n):
    """Recursion that stops on a Python value: the halving ends at one element."""
    if n == 1:
        return tile[lo]
    return tree_sum(tile, lo, n // 2) + tree_sum(tile, lo + n // 2, n // 2)


def test_macro_recursion_that_ends_while_parsing_is_allowed():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16):
            A[0] = tree_sum(A, 0, 16)

    loads = [n for n in walk(k.body) if isinstance(n, E.BufferLoad)]
    assert sorted(E.const_value(n.indices[0]) for n in loads) == list(range(16))


# ---------------------------------------------------------------------------------- dtypes and constants


def test_dtype_constructors_and_special_values():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "int32"), n: T.int32):
        with T.Kernel(1, threads=32):
            A[0] = T.float32(n)
            A[1] = T.float32(3)
            A[2] = T.infinity("float32")
            A[3] = T.max_value("float16")
            A[4] = T.min_value(T.float32)
            B[0] = T.max_value("int32")
            B[1] = T.min_value("int8")
            B[2] = T.int32(7.0)

    values = [s.value for s in nodes(k, S.BufferStore)]
    assert isinstance(values[0], E.Cast)
    assert [E.const_value(v) for v in values[1:]] == [
        3.0, float("inf"), 65504.0, -3.4028234663852886e38, 2**31 - 1, -128, 7
    ]  # fmt: skip


# ---------------------------------------------------------------------------------- eager style


def eager_scale(A, B, M, scale):
    N = T.const("N")
    A: T.Tensor((M, N), "float16")
    B: T.Tensor((N,), "float16")
    C = T.empty((M, N), "float32")
    with T.Kernel(T.ceildiv(M, 32), threads=128) as bx:
        for i, j in T.Parallel(32, N):
            C[bx * 32 + i, j] = A[bx * 32 + i, j] * scale + B[j]
    return C


EAGER = {
    "A": EagerParam(is_tensor=True),
    "B": EagerParam(True),
    "M": EagerParam(False, 256),
    "scale": EagerParam(False, 0.5),
}


def test_eager_style_parses_into_a_plain_primfunc():
    func = parse_function(eager_scale, eager=EAGER)
    A, B, C = func.params
    assert [p.name for p in func.params] == ["A", "B", "C"]
    (N,) = func.attr("tilecraft.consts")
    assert E.const_value(A.shape[0]) == 256 and A.shape[1] is N and B.shape[0] is N
    assert C.dtype == dt.float32 and [s for s in C.shape][1] is N
    assert func.attr("tilecraft.out_idx") == (2,)
    assert func.symbolic_dims == (N,)
    check_semantics(func)
    text = assert_roundtrip(func)
    assert "T.func_attr({'tilecraft.out_idx': (2,), 'tilecraft.consts': (N,)})" in text


def test_eager_python_values_are_constants():
    func = parse_function(eager_scale, eager={**EAGER, "scale": EagerParam(False, 4.0)})
    floats = {n.value for n in walk(func.body) if isinstance(n, E.FloatImm)}
    assert floats == {4.0}


def test_eager_tensor_never_declared_is_an_error():
    def missing(A, B):
        A: T.Tensor((16,), "float32")
        with T.Kernel(1, threads=16):
            A[0] = 1.0

    with pytest.raises(ParseError, match="tensor parameter 'B' is never declared") as info:
        parse_function(missing, eager={"A": EagerParam(True), "B": EagerParam(True)})
    assert "add `B: T.Tensor((M, N), dtype)`" in str(info.value)


def test_eager_output_must_be_returned():
    def no_return(A):
        A: T.Tensor((16,), "float32")
        C = T.empty((16,), "float32")
        with T.Kernel(1, threads=16):
            C[0] = A[0]

    with pytest.raises(ParseError, match="returns nothing"):
        parse_function(no_return, eager={"A": EagerParam(True)})


def test_eager_output_shape_over_a_bound_name_is_its_value():
    """`OH = (H + 2 * P - K) // S + 1` before `T.empty((N, OH, F))`, as TileLang's convolution example
    writes it: the output's shape (and a view's) holds the expression, not the let-bound name, so the
    call can allocate it from the inputs' dims; the kernel still reads the name."""

    def conv_rows(A, P):
        N, H, K = T.const("N, H, K")
        OH = (H + 2 * P - K) // 1 + 1
        A: T.Tensor((N, H), "float32")
        out = T.empty((N, OH), "float32")
        with T.Kernel(N, threads=32) as bx:
            flat = T.Tensor((N * OH,), "float32", out.data)
            for i in T.Parallel(OH):
                flat[bx * OH + i] = A[bx, i % H]
        return out

    func = parse_function(conv_rows, eager={"A": EagerParam(True), "P": EagerParam(False, 1)})
    lets = {n.var for n in nodes(func, S.LetStmt)}
    out = func.params[1]
    views = [b for b in walk(func.body) if isinstance(b, Buffer) and b.base is not None]
    assert [v.name for v in views] == ["flat"] and views[0].base is out
    for shape in (out.shape, views[0].shape):
        assert not lets & set(free_vars(shape)), shape
    assert {v.name for v in func.symbolic_dims} == {"N", "H", "K"}


def test_eager_parameter_shape_over_a_bound_name_is_its_value():
    """`nchunks = T.ceildiv(seqlen, chunk)` before `dt: T.Tensor((nchunks, chunk))` (TileLang's mamba
    examples): the parameter's shape holds the expression of the compile-time symbols, not a new
    symbolic dim named `nchunks` that the call would bind from whatever array it is given."""

    def chunked(x, dt):
        seqlen, chunk = T.const("seqlen, chunk")
        nchunks = T.ceildiv(seqlen, chunk)
        x: T.Tensor((seqlen,), "float32")
        dt: T.Tensor((nchunks, chunk), "float32")
        with T.Kernel(nchunks, threads=32) as bx:
            for i in T.Parallel(chunk):
                dt[bx, i] = x[bx * chunk + i]

    func = parse_function(chunked, eager={"x": EagerParam(True), "dt": EagerParam(True)})
    lets = {n.var for n in nodes(func, S.LetStmt)}
    dt_param = func.params[1]
    assert not lets & set(free_vars(dt_param.shape)), dt_param.shape
    assert {v.name for v in func.symbolic_dims} == {"seqlen", "chunk"}


def test_eager_return_of_several_outputs_and_inputs():
    def two_outputs(A):
        A: T.Tensor((16,), "float32")
        C = T.empty((16,), "float32")
        D = T.empty((16,), "int32")
        with T.Kernel(1, threads=16):
            C[0] = A[0]
            D[0] = 1
        return C, D

    func = parse_function(two_outputs, eager={"A": EagerParam(True)})
    assert func.attr("tilecraft.out_idx") == (1, 2)
    assert [p.name for p in func.params] == ["A", "C", "D"]
    assert all(isinstance(p, Buffer) for p in func.params)


@T.macro
def with_helper(buf):
    def index(k):
        return k * 2

    buf[index(1)] = 1.0


def test_nested_helper_in_a_macro_called_twice_keeps_its_lines():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16):
            with_helper(A)
            with_helper(A)

    stores = nodes(k, S.BufferStore)
    assert [E.const_value(s.indices[0]) for s in stores] == [2, 2]
    assert stores[0].span.line == stores[1].span.line


def test_a_finisher_registered_while_parsing_rewrites_the_parsed_function():
    """`Builder.finishers` run in order on the parsed function before the parser returns it (a parse-time
    library such as tilecraft.compat's MMA emitters registers one)."""
    import dataclasses

    from tilecraft.language import builder as B

    seen = []

    def mark(tag):
        def finish(func):
            seen.append(tag)
            return dataclasses.replace(func, name=f"{func.name}_{tag}")

        return finish

    def register():
        B.current().finishers.extend([mark("a"), mark("b")])

    @T.prim_func
    def kernel(A: T.Tensor((4,), "float32")):
        register()
        with T.Kernel(1, threads=32):
            A[0] = 1.0

    assert seen == ["a", "b"] and kernel.name == "kernel_a_b"
