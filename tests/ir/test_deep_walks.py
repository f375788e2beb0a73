"""The generic IR walks need no Python stack per level (issue 31, item 8): a Visitor or Mutator that only
defines handlers walks an expression thousands of levels deep, calling its handlers in the order, and
building the result, that the recursive walk (still used under an overridden `visit` / `mutate`) does."""

from __future__ import annotations

import pytest

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import structural_equal, structural_hash
from tilecraft.ir.visitor import Mutator, Visitor, free_vars, substitute
from tilecraft.testing.conformance import kernels


class Recorder(Visitor):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def visit_Var(self, v: E.Var) -> None:
        self.seen.append(v.name)

    def visit_BufferLoad(self, e: E.BufferLoad) -> None:
        self.seen.append(f"load {e.buffer.name}")
        self.generic_visit(e)


class RecursiveRecorder(Recorder):
    def visit(self, node) -> None:  # overriding `visit` keeps the recursive walk
        super().visit(node)


class Renamer(Mutator):
    def mutate_Var(self, v: E.Var) -> E.Var:  # a new Var per use: the walk order shows in the numbering
        return E.Var(v.dtype, v.name + "_r")


class RecursiveRenamer(Renamer):
    def mutate(self, node):
        return super().mutate(node)


@pytest.mark.parametrize("name", ["flash_attention", "gemm", "layer_norm"])
def test_the_iterative_walks_match_the_recursive_ones(name):
    func = kernels.KERNELS[name]()
    fast, slow = Recorder(), RecursiveRecorder()
    fast.visit(func.body)
    slow.visit(func.body)
    assert fast.seen == slow.seen and fast.seen
    renamed, again = Renamer().mutate(func), RecursiveRenamer().mutate(func)
    assert structural_equal(renamed, again, map_names=False)
    assert not structural_equal(renamed, func, map_names=False)
    assert Renamer().mutate(kernels.KERNELS["transpose"]()) is not None


def chain(depth: int) -> tuple[E.Expr, E.Var, E.Var]:
    x, y = E.Var(dt.int32, "x"), E.Var(dt.int32, "y")
    value: E.Expr = x
    for k in range(depth):
        value = value + y * k if k % 2 else y - value  # left and right nesting, alternately
    return value, x, y


def test_handler_only_walks_take_any_depth():
    value, x, y = chain(20000)
    assert free_vars(value) == (y, x)
    z = E.Var(dt.int32, "z")
    replaced = substitute(value, {x: z})
    assert free_vars(replaced) == (y, z)
    assert substitute(value, {E.Var(dt.int32, "unused"): z}) is value  # nothing changed: the same object
    assert len(structural_hash(value)) == 64
    assert structural_equal(substitute(replaced, {z: x}), value, map_names=False)
