"""`T.Persistent`: every tile of the domain runs exactly once whatever the wave size and group size
(the coordinates are a bijection, a block runs only the waves whose tile exists), the loop's structure,
and the errors. The kernel runs on every target in the conformance kit (`persistent_gemm_in_waves`)."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tilecraft.errors import KernelError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.eval import evaluate
from tilecraft.ir.expr import IRError, Var
from tilecraft.ir.visitor import walk


@pytest.mark.parametrize("rows, cols", [(3, 5), (1, 7), (8, 8), (5, 1), (7, 3)])
@pytest.mark.parametrize("group", [1, 2, 3, 8])
@pytest.mark.parametrize("wave", [1, 4, 9, 132])
def test_every_tile_runs_once(rows, cols, group, wave):
    index, w, tile = Var(dt.int32, "index"), Var(dt.int32, "w"), Var(dt.int32, "tile")
    spec = T.Persistent([rows, cols], wave, index, group)
    coords = spec.coordinates(tile)
    seen = []
    for block in range(wave):
        for step in range(int(evaluate(spec.waves(), {index: block}))):
            t = step * wave + block
            seen.append(tuple(int(evaluate(c, {tile: t, w: step})) for c in coords))
    assert sorted(seen) == [(i, j) for i in range(rows) for j in range(cols)]


def test_one_dimensional_domains_count_in_order():
    index, tile = Var(dt.int32, "index"), Var(dt.int32, "tile")
    spec = T.Persistent(10, 4, index)
    assert [int(evaluate(spec.waves(), {index: b})) for b in range(4)] == [3, 3, 2, 2]
    (i,) = spec.coordinates(tile)
    assert int(evaluate(i, {tile: 7})) == 7


def test_the_loop_is_annotated_and_binds_the_tile_coordinates():
    @T.prim_func
    def f(A: T.Tensor((6, 4), "float32")):
        with T.Kernel(3, threads=1) as block:
            for i, j in T.Persistent([6, 4], 3, block):
                A[i, j] = 1.0

    loops = [n for n in walk(f.body) if isinstance(n, S.For)]
    assert S.annotation(loops[0].annotations, S.PERSISTENT) is True and loops[0].kind is S.ForKind.SERIAL
    lets = [n.var.name for n in walk(loops[0].body) if isinstance(n, S.LetStmt)]
    assert lets == ["tile", "i", "j"]
    assert not any(isinstance(n, S.IfThenElse) for n in walk(loops[0].body))  # no guard: waves are exact
    assert isinstance(loops[0].extent, E.Expr)


def test_binding_the_wrong_number_of_names_is_a_located_error():
    with pytest.raises(KernelError, match="binds 2 variable"):

        @T.prim_func
        def f(A: T.Tensor((6, 4), "float32")):
            with T.Kernel(3, threads=1) as block:
                for i in T.Persistent([6, 4], 3, block):
                    A[i, 0] = 1.0


@pytest.mark.parametrize(("args", "match"), [(([], 4, 0), "one or more integer extents"),
                                             (([4.5], 4, 0), "integer extents"),
                                             (([4], 4, 0, 0), "group_size")])  # fmt: skip
def test_bad_arguments_say_what_is_wrong(args, match):
    with pytest.raises(IRError, match=match):
        T.Persistent(*args)


def test_three_dimensional_domains_are_row_major():
    index, tile = Var(dt.int32, "index"), Var(dt.int32, "tile")
    spec = T.Persistent([2, 3, 4], 5, index)
    coords = spec.coordinates(tile)
    seen = [tuple(int(evaluate(c, {tile: t})) for c in coords) for t in range(24)]
    assert seen == [(i, j, k) for i in range(2) for j in range(3) for k in range(4)]
