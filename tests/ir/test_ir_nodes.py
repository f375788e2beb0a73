"""IR construction rules, and the Visitor / Mutator / substitute utilities."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tilecraft.ir import (
    Buffer,
    BufferRegion,
    IRError,
    IRModule,
    Mutator,
    PrimFunc,
    Range,
    Var,
    Visitor,
    free_vars,
    structural_equal,
    substitute,
    walk,
)
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import extent_between

i, j, n = Var(dt.int32, "i"), Var(dt.int32, "j"), Var(dt.int32, "n")


# ---------------------------------------------------------------------------------- expressions


def test_operators_build_ir_instead_of_comparing():
    eq = i == j
    assert isinstance(eq, E.EQ) and eq.dtype == dt.bool_
    assert isinstance(i != j, E.NE)
    with pytest.raises(IRError, match="truth value"):
        bool(i < j)


def test_constants_fold_and_keep_their_dtype():
    assert E.const_value(E.add(E.const(2, "int8"), 3)) == 5
    assert E.add(E.const(2, "int8"), 3).dtype == dt.int8
    assert E.const_value(E.floordiv(-7, 2)) == -4 and E.const_value(E.truncdiv(-7, 2)) == -3
    assert E.const_value(E.floormod(-7, 2)) == 1 and E.const_value(E.truncmod(-7, 2)) == -1
    assert E.const_value(E.compare(E.LT, 1, 2)) == 1 and E.compare(E.LT, 1, 2).dtype == dt.bool_


def test_mixed_dtypes_promote():
    h = Var(dt.float16, "h")
    assert (h + 1).dtype == dt.float16
    assert (h + 1.5).b.dtype == dt.float16
    assert (h + Var(dt.float32, "f")).dtype == dt.float32
    assert (i + Var(dt.int64, "k")).dtype == dt.int64
    assert (i * 0.5).dtype == dt.float32


def test_bitwise_ops_need_integers():
    assert isinstance(i & j, E.Call) and (i & j).op == "bitwise_and"
    with pytest.raises(IRError, match="integer"):
        E.int_call("shift_left", Var(dt.float32, "x"), 1)
    b = Var(dt.bool_, "b")
    assert isinstance(b & (i < j), E.And)
    assert isinstance(~b, E.Not)


def test_dtype_constructor_makes_constants_or_casts():
    assert isinstance(T.float16(1.5), E.FloatImm) and T.float16(1.5).dtype == dt.float16
    assert isinstance(T.int8(-3), E.IntImm) and T.int8(-3).value == -3
    assert isinstance(T.float32(i), E.Cast)
    assert T.int32(i) is i


def test_python_numbers_stay_python_in_t_helpers():
    assert T.max(3, 4) == 4 and isinstance(T.max(3, 4), int)
    assert T.min(3, 4, 1) == 1 and T.ceildiv(10, 4) == 3 and T.abs(-2) == 2
    assert isinstance(T.max(i, 4), E.Max) and isinstance(T.ceildiv(n, 4), E.FloorDiv)
    assert T.if_then_else(True, 1, 2) == 1


def test_same_expr_counts_variables_by_identity():
    other_i = Var(dt.int32, "i")
    assert E.same_expr(i * 2 + 1, i * 2 + 1)
    assert not E.same_expr(i, other_i)
    assert structural_equal(i, other_i)


# ---------------------------------------------------------------------------------- buffers


def test_buffer_indexing_makes_loads_and_regions():
    A = Buffer("A", (E.const(64), n), dt.float16)
    load = A[i, j]
    assert isinstance(load, E.BufferLoad) and load.buffer is A and load.dtype == dt.float16
    region = A[i, 0:16]
    assert isinstance(region, BufferRegion)
    assert [E.const_value(r.extent) for r in region.ranges] == [1, 16]
    assert A[:, :].ranges[1].extent is n
    with pytest.raises(IRError, match="2 dimensions"):
        A[i]
    with pytest.raises(IRError, match="step"):
        A[0:8:2, 0]
    with pytest.raises(IRError, match="integers"):
        A[Var(dt.float32, "x"), 0]
    with pytest.raises(IRError, match="scope"):
        Buffer("B", (E.const(4),), dt.float32, "texture")


def test_region_extents_of_the_usual_slices_are_constants():
    """`A[k * 32:(k + 1) * 32]` is a 32-element tile however k is written."""
    k = Var(dt.int32, "k")
    assert E.const_value(extent_between(k * 32, (k + 1) * 32)) == 32
    assert E.const_value(extent_between(k * 32 + 8, k * 32 + 40)) == 32
    assert E.const_value(extent_between(2 * (k + n), 2 * k + 2 * n + 6)) == 6
    assert E.same_expr(extent_between(k, k + n), n)


def test_region_extents_do_not_confuse_distinct_variables():
    """Two variables that print alike are still different: `A[k:j + 16]` is not 16 long."""
    k, j2 = Var(dt.int32, "k"), Var(dt.int32, "k")
    extent = extent_between(k, j2 + 16)
    assert E.const_value(extent) is None
    assert isinstance(extent, E.Sub)
    assert E.const_value(extent_between(k, Var(dt.int32, "n") * 1)) is None


def test_range_from_bounds():
    r = Range.from_bounds(2, n)
    assert E.const_value(r.min) == 2 and structural_equal(r.extent, n - 2)


# ---------------------------------------------------------------------------------- statements


def test_seq_flattens_and_unwraps():
    a = S.Evaluate(E.const(1))
    b = S.Evaluate(E.const(2))
    assert S.seq(a) is a
    flat = S.seq(a, S.SeqStmt((b, a)), None)
    assert isinstance(flat, S.SeqStmt) and [s for s in flat.stmts] == [a, b, a]


def test_primfunc_attrs_and_symbolic_dims():
    M, N = T.dynamic("M, N")
    A = Buffer("A", (M, N), dt.float32)
    alpha = Var(dt.float32, "alpha")
    f = PrimFunc("f", (A, alpha), S.SeqStmt(()))
    assert f.symbolic_dims == (M, N)
    g = f.with_attr("tilecraft.out_idx", (0,)).with_attr("tilecraft.out_idx", (1,))
    assert g.attr("tilecraft.out_idx") == (1,) and f.attr("tilecraft.out_idx") is None
    assert g.buffer_params == (A,)


def test_module_lookup_names_the_functions():
    f = PrimFunc("f", (), S.SeqStmt(()))
    mod = IRModule((f,))
    assert mod["f"] is f
    with pytest.raises(KeyError, match="functions: \\['f'\\]"):
        mod["g"]


# ---------------------------------------------------------------------------------- traversal


def make_kernel():
    M = T.dynamic("M")

    @T.prim_func
    def k(A: T.Tensor((M, 64), "float32"), B: T.Tensor((64,), "float32"), s: T.float32):
        with T.Kernel(T.ceildiv(M, 32), threads=128) as bx:
            tile = T.alloc_fragment((32, 64), "float32")
            T.copy(A[bx * 32, 0], tile)
            for i, j in T.Parallel(32, 64):
                tile[i, j] = tile[i, j] * s + B[j]
            T.copy(tile, A[bx * 32, 0])

    return k


class _Count(Visitor):
    def __init__(self):
        self.loads = 0
        self.loops = 0

    def visit_BufferLoad(self, node):
        self.loads += 1
        self.generic_visit(node)

    def visit_For(self, node):
        self.loops += 1
        self.generic_visit(node)


def test_visitor_dispatches_by_class_name():
    c = _Count()
    c.visit(make_kernel().body)
    assert (c.loads, c.loops) == (2, 2)


class _ScaleByTwo(Mutator):
    """Rewrites every float constant `x` to `2 * x`."""

    def mutate_FloatImm(self, node):
        return E.FloatImm(node.dtype, node.value * 2)


def test_mutator_without_changes_returns_the_same_tree():
    k = make_kernel()
    assert Mutator().mutate(k) is k


def test_mutator_rebuilds_only_changed_subtrees():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                B[i] = i * 2
            for i in T.Parallel(64):
                A[i] = 1.5

    new = _ScaleByTwo().mutate(k)
    old_launch, new_launch = k.body, new.body
    assert new is not k and new_launch is not old_launch
    int_loop_old, float_loop_old = old_launch.body.stmts
    int_loop_new, float_loop_new = new_launch.body.stmts
    assert int_loop_new is int_loop_old
    assert float_loop_new is not float_loop_old and float_loop_new.body.value.value == 3.0
    assert new.params is k.params


def test_substitute_dynamic_dim_remaps_buffers_consistently():
    k = make_kernel()
    (M,) = k.symbolic_dims
    new = substitute(k, {M: E.const(256)})
    A_new, B_new = new.buffer_params
    A_old, B_old = k.buffer_params
    assert [E.const_value(s) for s in A_new.shape] == [256, 64]
    assert B_new is B_old, "buffers that do not mention M are kept"
    uses = {id(n.buffer) for n in walk(new.body) if isinstance(n, (E.BufferLoad, S.BufferStore))}
    uses |= {id(r.buffer) for n in walk(new.body) if isinstance(n, S.Copy) for r in (n.src, n.dst)}
    assert id(A_old) not in uses and id(A_new) in uses
    assert new.symbolic_dims == ()
    assert all(v is not M for v in free_vars(new.body))


def test_free_vars_in_order_of_first_use():
    expr = (j + i) * n + i
    assert free_vars(expr) == (j, i, n)
