"""Plain Python functions a kernel calls (not @T.macro): the statements their T.* calls build and they do
not return go where the call is, as TileLang's builder places them (`_reduce_op(T, op, src, dst, dim)` in
TileLang's reduce tests)."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_located, assert_roundtrip
from tilecraft.errors import ParseError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir import walk

RNG = np.random.default_rng(20261207)


def _reduce_op(T, op, src, dst, dim):  # noqa: N803 - TileLang's spelling: the language module passed in
    """TileLang's helper: Python control flow picks the op; the op it builds is not returned."""
    if op == "sum":
        T.reduce_sum(src, dst, dim=dim)
    elif op == "max":
        T.reduce_max(src, dst, dim=dim)
    elif op == "min":
        T.reduce_min(src, dst, dim=dim)
    elif op == "absmax":
        T.reduce_absmax(src, dst, dim=dim)


def _load(src, rows, cols, zero_rows):
    """Allocates a fragment and fills it from `src`; a nested helper zeroes some rows. Returns it."""
    tile = T.alloc_fragment((rows, cols), "float32")
    T.copy(src, tile)
    for r in zero_rows:  # a Python loop: one fill per row, built while parsing
        _zero_row(tile, r)
    return tile


def _zero_row(tile, row):
    T.fill(tile[row, :], 0.0)


def _row_ops(x, m, s):
    """Builds three statements; returns the last for the caller to place (order must be kept)."""
    T.reduce_max(x, m, dim=1)
    T.reduce_sum(x, s, dim=1)
    return T.reduce_min(x, s, dim=1, clear=False)


def reduce_kernel(op: str, rows: int, cols: int):
    @T.prim_func
    def main(A: T.Tensor((rows, cols), "float32"), B: T.Tensor((rows,), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((rows, cols), "float32")
            m = T.alloc_fragment((rows,), "float32")
            T.copy(A, x)
            _reduce_op(T, op, x, m, dim=1)
            T.copy(m, B)

    return main


REFERENCES = {
    "sum": lambda a: a.sum(axis=1),
    "max": lambda a: a.max(axis=1),
    "min": lambda a: a.min(axis=1),
    "absmax": lambda a: np.abs(a).max(axis=1),
}


@pytest.mark.parametrize("op", sorted(REFERENCES))
def test_a_tile_op_a_plain_helper_builds_runs_where_it_is_called(op):
    rows, cols = 37, 23  # ragged
    kernel = tilecraft.compile(reduce_kernel(op, rows, cols), target="c")
    a = RNG.standard_normal((rows, cols)).astype(np.float32)
    b = np.full(rows, np.nan, np.float32)  # poisoned: a reduction that never ran leaves NaN
    kernel(a, b)
    ref = REFERENCES[op](a.astype(np.float64))
    assert np.abs(b - ref).max() / np.abs(ref).max() < 1e-5


def test_the_statements_go_at_the_call_in_the_order_built():
    func = reduce_kernel("max", 8, 8)
    body = _seq_after_allocations(func)
    assert [type(s).__name__ for s in body] == ["Copy", "Reduce", "Copy"]
    assert_roundtrip(func)


def _seq_after_allocations(func) -> list:
    node = next(n for n in walk(func.body) if isinstance(n, S.KernelLaunch)).body
    while isinstance(node, S.Allocate):
        node = node.body
    return list(node.stmts)


def row_stats_kernel(rows: int, cols: int):
    @T.prim_func
    def main(
        A: T.Tensor((rows, cols), "float32"),
        M: T.Tensor((rows,), "float32"),
        S_: T.Tensor((rows,), "float32"),
    ):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((rows, cols), "float32")
            m = T.alloc_fragment((rows,), "float32")
            s = T.alloc_fragment((rows,), "float32")
            T.copy(A, x)
            _row_ops(x, m, s)  # the returned statement is dropped here, so it is placed too
            T.copy(m, M)
            T.copy(s, S_)

    return main


def test_a_helper_that_returns_a_statement_keeps_the_order_it_built_them_in():
    rows, cols = 19, 45
    a = RNG.standard_normal((rows, cols)).astype(np.float32)
    m, s = np.full(rows, np.nan, np.float32), np.full(rows, np.nan, np.float32)
    tilecraft.compile(row_stats_kernel(rows, cols), target="c")(a, m, s)
    a64 = a.astype(np.float64)
    assert np.abs(m - a64.max(axis=1)).max() < 1e-6
    ref = np.minimum(a64.sum(axis=1), a64.min(axis=1))  # reduce_min(clear=False) into the sums
    assert np.abs(s - ref).max() / np.abs(ref).max() < 1e-5


def test_a_returned_statement_the_caller_places_is_not_placed_twice():
    @T.prim_func
    def main(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            x = T.alloc_fragment((8, 8), "float32")
            m = T.alloc_fragment((8,), "float32")
            T.copy(A, x)
            _row_max_returned(x, m)
            T.copy(m, B)

    assert [type(s).__name__ for s in _seq_after_allocations(main)] == ["Copy", "Reduce", "Copy"]


def _row_max_returned(x, out):
    return T.reduce_max(x, out, dim=1)


def helper_allocation_kernel(rows: int, cols: int):
    @T.prim_func
    def main(A: T.Tensor((rows, cols), "float32"), B: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=128):
            tile = _load(A, rows, cols, (0, rows - 1))  # allocates; what it builds uses the allocation
            for i, j in T.Parallel(rows, cols):
                B[i, j] = tile[i, j] * 2.0

    return main


def test_a_helper_may_allocate_for_the_statements_it_builds():
    rows, cols = 13, 29
    func = helper_allocation_kernel(rows, cols)
    assert_roundtrip(func)
    a = RNG.standard_normal((rows, cols)).astype(np.float32)
    b = np.full((rows, cols), np.nan, np.float32)
    tilecraft.compile(func, target="c")(a, b)
    ref = 2.0 * a.astype(np.float64)
    ref[[0, rows - 1]] = 0.0
    assert np.abs(b - ref).max() < 1e-6


def test_a_helper_inside_a_loop_places_its_statements_in_the_loop_body():
    rows, cols, blocks = 4, 16, 3

    @T.prim_func
    def main(A: T.Tensor((blocks * rows, cols), "float32"), B: T.Tensor((blocks * rows,), "float32")):
        with T.Kernel(1, threads=64):
            x = T.alloc_fragment((rows, cols), "float32")
            m = T.alloc_fragment((rows,), "float32")
            for k in T.serial(blocks):
                T.copy(A[k * rows : (k + 1) * rows, :], x)
                _reduce_op(T, "sum", x, m, dim=1)
                T.copy(m, B[k * rows : (k + 1) * rows])

    a = RNG.standard_normal((blocks * rows, cols)).astype(np.float32)
    b = np.full(blocks * rows, np.nan, np.float32)
    tilecraft.compile(main, target="c")(a, b)
    ref = a.astype(np.float64).sum(axis=1)
    assert np.abs(b - ref).max() / np.abs(ref).max() < 1e-5


def _warp_sum_after_copy(src, tile):
    T.copy(src, tile)
    return T.warp_reduce_sum(tile[T.get_thread_binding()])


def test_statements_a_helper_builds_keep_their_order_with_those_its_value_needs():
    """The copy the helper builds runs before the warp reduction its returned value reads."""

    @T.prim_func
    def main(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tile = T.alloc_shared((32,), "float32")
            tx = T.get_thread_binding()
            B[tx] = _warp_sum_after_copy(A, tile)

    a = RNG.standard_normal(32).astype(np.float32)
    b = np.full(32, np.nan, np.float32)
    tilecraft.compile(main, target="c")(a, b)
    assert np.abs(b - a.astype(np.float64).sum()).max() < 1e-4


def _loop_in_helper(tile):
    for i in T.Parallel(4):
        tile[i] = 0


def _store_in_helper(tile):
    tile[0] = 1.0


@T.macro
def _clear(tile):
    T.clear(tile)


def _macro_in_helper(tile):
    _clear(tile)


def _symbolic_if_in_helper(tile, n):
    if n > 0:
        T.clear(tile)


@pytest.mark.parametrize(
    ("helper", "words"),
    [
        (
            _loop_in_helper,
            "loop iterators such as T.Parallel can only be used in a `for` inside a kernel or a @T.macro",
        ),
        (_store_in_helper, "an element store .* @T.macro"),
        (_symbolic_if_in_helper, "use it as an `if` condition inside the kernel or a @T.macro"),
        (_macro_in_helper, "macro _clear is called from a plain Python function"),
    ],
)
def test_what_a_plain_helper_cannot_build_is_refused_at_the_call_naming_macro(helper, words):
    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32"), n: T.int32):
            with T.Kernel(1, threads=32):
                tile = T.alloc_fragment((4,), "float32")
                helper(tile, n) if helper is _symbolic_if_in_helper else helper(tile)  # <- error
                T.copy(tile, A)

        return main

    with pytest.raises(ParseError, match=words) as info:
        make()
    assert_located(info.value, make)


def test_a_tile_op_a_helper_builds_outside_t_kernel_is_refused():
    def make():
        @T.prim_func
        def main(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8,), "float32")):
            _reduce_op(T, "max", A, B, dim=1)  # <- error

        return main

    with pytest.raises(
        ParseError, match=r"T.reduce, which _reduce_op\(\) builds, is only valid inside"
    ) as info:
        make()
    assert_located(info.value, make)


def _warp_sum(x):
    return T.warp_reduce_sum(x)


def test_a_while_condition_whose_helper_builds_statements_is_refused():
    def make():
        @T.prim_func
        def main(A: T.Tensor((32,), "int32")):
            with T.Kernel(1, threads=32):
                k = T.alloc_var("int32")
                k = 0
                while _warp_sum(k) < A[0]:  # <- error
                    k = k + 1

        return main

    with pytest.raises(
        ParseError, match="this `while` condition calls a function that builds statements"
    ) as info:
        make()
    assert_located(info.value, make)


def _accumulate_twice(x_rows, sums):
    """The same statement built twice from the same objects: both run (the sum is doubled)."""
    T.reduce_sum(x_rows, sums, dim=1, clear=False)
    T.reduce_sum(x_rows, sums, dim=1, clear=False)


def _sequence_and_respanned(x, m):
    """Intermediates a T.* call may make: a sequence `S.seq` flattens into another, a statement built
    without a span and copied with the call's (tilecraft.compat's MMA emitters do). Only what is finally
    built is placed, once."""
    import dataclasses

    inner = S.seq(T.reduce_max(x, m, dim=1), T.reduce_min(x, m, dim=1, clear=False))
    S.seq(inner, T.fill(x, 0.0))
    bare = S.Fill(x.full_region(), E.const(2.0, x.dtype))
    dataclasses.replace(bare, span=T.fill(x, 1.0).span)


def test_twice_the_same_statement_runs_twice():
    rows, cols = 11, 9

    @T.prim_func
    def main(A: T.Tensor((rows, cols), "float32"), B: T.Tensor((rows,), "float32")):
        with T.Kernel(1, threads=32):
            x = T.alloc_fragment((rows, cols), "float32")
            s = T.alloc_fragment((rows,), "float32")
            T.copy(A, x)
            T.clear(s)
            _accumulate_twice(x[0:rows, 0:cols], s[0:rows])
            T.copy(s, B)

    a = RNG.standard_normal((rows, cols)).astype(np.float32)
    b = np.full(rows, np.nan, np.float32)
    tilecraft.compile(main, target="c")(a, b)
    ref = 2.0 * a.astype(np.float64).sum(axis=1)
    assert np.abs(b - ref).max() / np.abs(ref).max() < 1e-5


def test_intermediates_of_a_helper_are_not_placed():
    @T.prim_func
    def main(A: T.Tensor((8, 8), "float32")):
        with T.Kernel(1, threads=32):
            x = T.alloc_fragment((8, 8), "float32")
            m = T.alloc_fragment((8,), "float32")
            _sequence_and_respanned(x, m)
            T.copy(x, A)

    placed = [s for s in _seq_after_allocations(main) if isinstance(s, S.TileOp)]
    assert [getattr(s, "kind", type(s).__name__) for s in placed] == [
        "max",
        "min",
        "Fill",
        "Fill",
        "Fill",
        "Copy",
    ]
    assert [s.value.value for s in placed if isinstance(s, S.Fill)] == [0.0, 1.0, 2.0]


def _parses_a_kernel_of_its_own(n):
    @T.prim_func
    def inner(A: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32):
            T.fill(A, 1.0)

    return n * 2


def test_a_kernel_parsed_inside_a_helper_keeps_its_statements():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            A[0] = _parses_a_kernel_of_its_own(4)

    assert not [s for s in walk(main.body) if isinstance(s, S.Fill)]


def _staged(src, dst, n):
    """Returns statements that address a buffer it allocated: the allocation opens before them."""
    stage = T.alloc_shared((n,), "float32")
    return [T.copy(src, stage), T.copy(stage, dst)]


def test_statements_a_helper_returns_may_use_its_allocations():
    n = 19

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32):
            _staged(A, B, n)

    a = RNG.standard_normal(n).astype(np.float32)
    b = np.full(n, np.nan, np.float32)
    tilecraft.compile(main, target="c")(a, b)
    assert np.array_equal(a, b)
