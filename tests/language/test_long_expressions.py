"""Long expressions (issue 31, item 8): a sum of hundreds of terms written out, or of thousands built by a
generator in the kernel, parses without recursion per term, is split into locals so that no later stage
recurses per term either, and computes what NumPy computes on the CPU target; what cannot be split is an
error at its line."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tilecraft.errors import KernelError, SemanticError
from tilecraft.execution.cc import toolchain
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir import walk
from tilecraft.ir.printer import print_ir
from tilecraft.ir.structural import structural_hash
from tilecraft.transform.expression_depth import HOIST_DEPTH, MAX_DEPTH, bound_expression_depth

needs_cc = pytest.mark.skipif(toolchain.find_compiler_path() is None, reason="no C compiler installed")
N = 77  # elements: ragged against every block the CPU target picks


def kernel_module(tmp_path: Path, body: str, dtype: str = "float32", threads: int = 1):
    """A module defining `k(A, C)` whose loop body is `body` (over `i`), written to a real file."""
    source = textwrap.dedent(f"""
        import functools
        import tilecraft
        import tilecraft.language as T

        @tilecraft.jit(target="c")
        def k(A: T.Tensor(({N},), "{dtype}"), C: T.Tensor(({N},), "{dtype}")):
            with T.Kernel(1, threads={threads}) as bx:
                for i in T.Parallel({N}):
        """)  # fmt: skip
    source += textwrap.indent(textwrap.dedent(body).strip(), " " * 12) + "\n"
    path = tmp_path / "long_kernel.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"long_kernel_{tmp_path.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def run(module, a: np.ndarray) -> np.ndarray:
    c = np.full_like(a, 123)  # poisoned
    module.k(a, c)
    return c


def floats(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(N).astype(np.float32)


def max_depth(node) -> int:
    """The deepest expression under `node` (computed without recursion)."""
    deepest = 0
    for e in walk(node):
        if isinstance(e, S.Stmt):
            for value in (getattr(e, f, None) for f in ("value", "condition", "extent")):
                if isinstance(value, E.Expr):
                    deepest = max(deepest, _depth(value))
    return deepest


def _depth(root: E.Expr) -> int:
    best, stack = 0, [(root, 1)]
    while stack:
        e, d = stack.pop()
        best = max(best, d)
        stack.extend((c, d + 1) for c in walk_children(e))
    return best


def walk_children(e: E.Expr) -> list[E.Expr]:
    out = []
    for name in ("a", "b", "value", "condition", "true_value", "false_value"):
        child = getattr(e, name, None)
        if isinstance(child, E.Expr):
            out.append(child)
    out.extend(getattr(e, "args", ()))
    return out


@needs_cc
def test_a_400_term_sum_written_out_compiles_and_is_right(tmp_path):
    module, _ = kernel_module(tmp_path, "C[i] = " + " + ".join(["A[i]"] * 400))
    a = floats()
    reference = 400 * a.astype(np.float64)
    np.testing.assert_allclose(run(module, a), reference, rtol=400 * 2**-23, atol=1e-3)
    func = module.k.get_tir()
    assert max_depth(func.body) <= HOIST_DEPTH  # split into locals: no later stage recurses per term


@needs_cc
def test_a_2000_term_sum_built_by_a_generator_is_right_and_split(tmp_path):
    """Alternating operations, so every partial result matters: the reference adds in the same order."""
    body = "C[i] = sum((A[i] * 0.5 if k % 2 else A[i] - 0.25) for k in range(2000))"
    module, _ = kernel_module(tmp_path, body)
    a = floats(1)
    c = run(module, a)
    reference = np.zeros(N, np.float32)
    for k in range(2000):  # float32 throughout, left to right, as the kernel computes
        reference = reference + (a * np.float32(0.5) if k % 2 else a - np.float32(0.25))
    np.testing.assert_allclose(c, reference, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(c, 1000 * (1.5 * a.astype(np.float64) - 0.25), rtol=1e-3, atol=0.05)
    func = module.k.get_tir()
    lets = [s for s in walk(func.body) if isinstance(s, S.LetStmt)]
    assert len(lets) >= 2000 // HOIST_DEPTH and max_depth(func.body) <= HOIST_DEPTH
    # What walks the whole function (the printer, the structural hash) handles it too.
    assert print_ir(func).count("partial") > len(lets) and len(structural_hash(func)) == 64


@needs_cc
def test_a_2000_term_integer_sum_wraps_as_numpy_does(tmp_path):
    module, _ = kernel_module(tmp_path, "C[i] = sum(A[i] * (k + 1) for k in range(2000))", dtype="int32")
    a = np.random.default_rng(2).integers(-(2**30), 2**30, N).astype(np.int32)
    exact = a.astype(object) * sum(range(1, 2001))  # Python ints: then wrapped to int32 as the kernel wraps
    wrapped = np.array([((int(v) + 2**31) % 2**32) - 2**31 for v in exact], np.int32)
    np.testing.assert_array_equal(run(module, a), wrapped)


@needs_cc
def test_right_deep_and_unary_chains_are_split_too(tmp_path):
    body = (
        """
        t = functools.reduce(lambda acc, x: x - acc, [A[i] * (k % 3) for k in range(600)])
        C[i] = t + """
        + "-" * 301
        + "A[i]"
    )
    module, _ = kernel_module(tmp_path, body)
    a = floats(3)
    acc = a * 0
    for k in range(1, 600):
        acc = a * (k % 3) - acc
    np.testing.assert_allclose(run(module, a), acc - a, rtol=1e-5, atol=1e-4)


def test_a_deep_branch_of_if_then_else_is_an_error_at_its_line(tmp_path):
    body = "C[i] = T.if_then_else(A[i] > 0, sum(A[i] for k in range(300)), 0.0)"
    with pytest.raises(SemanticError) as info:
        kernel_module(tmp_path, body)[0].k.get_tir()
    err = info.value
    assert "inside a T.if_then_else branch" in err.message and f"at most {MAX_DEPTH} levels" in err.message
    assert err.span.file.endswith("long_kernel.py") and "T.if_then_else(A[i] > 0" in err.span.source_line()
    assert "compute the deep part into a local first" in err.hint


def test_a_statement_too_long_to_split_is_an_error_that_says_what_to_do(tmp_path):
    with pytest.raises(SemanticError) as info:
        kernel_module(tmp_path, "C[i] = sum(A[i] for k in range(6000))")[0].k.get_tir()
    err = info.value
    assert "too long to compile" in err.message and "sum(A[i] for k in range(6000))" in err.span.source_line()
    assert "accumulate in a loop" in err.hint


def test_a_deep_call_nest_is_split_like_a_sum(tmp_path):
    body = "C[i] = " + "T.abs(" * 180 + "A[i] - 0.5" + ")" * 180
    module, _ = kernel_module(tmp_path, body)
    assert max_depth(module.k.get_tir().body) <= HOIST_DEPTH
    if toolchain.find_compiler_path() is not None:
        a = floats(4)
        np.testing.assert_allclose(run(module, a), np.abs(a - np.float32(0.5)), rtol=1e-6)


def test_what_exhausts_pythons_stack_while_parsing_is_named_at_its_line(tmp_path):
    """The parser's net: a statement whose parse reaches Python's recursion limit anyway (here a call nest
    under a lowered limit) is a ParseError at that statement, not a bare RecursionError."""
    import inspect
    import sys

    body = "x = A[i] * 2.0\nC[i] = " + "T.abs(" * 150 + "x" + ")" * 150
    module, path = kernel_module(tmp_path, body)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 250)
    try:
        with pytest.raises(KernelError) as info:
            module.k.get_tir()
    finally:
        sys.setrecursionlimit(limit)
    err = info.value
    assert "nests too deeply for the parser" in err.message
    assert err.span.file == str(path) and err.span.source_line().lstrip().startswith("C[i] = T.abs(")


@pytest.mark.parametrize(
    "depth, error, message",
    [(420, "LoweringError", "kernel nested nests too deeply to compile for c"),
     (900, "SemanticError", "kernel nested nests its statements too deeply to compile")],
    ids=["while-lowering", "while-splitting"],
)  # fmt: skip
def test_statements_nested_too_deeply_are_named_with_the_kernel(depth, error, message):
    """The nets: statements nested hundreds deep (built in Python) exhaust Python's stack in a pass, or
    already in bound-expression-depth; either way an error naming the kernel and its line."""
    import tilecraft
    from tilecraft.ir import dtype as dt
    from tilecraft.ir.buffer import Buffer
    from tilecraft.ir.function import PrimFunc
    from tilecraft.ir.span import Span

    a = Buffer("A", (E.const(8),), dt.float32)
    body: S.Stmt = S.BufferStore(a, E.const(1.0), (E.const(0),))
    for level in range(depth):
        body = S.IfThenElse(E.Var(dt.int32, f"c{level}") > 0, body)
    body = S.KernelLaunch((E.const(1),), (1,), (E.Var(dt.int32, "bx"),), (), body)
    func = PrimFunc("nested", (a,), body, span=Span("kernels.py", 7))
    with pytest.raises(KernelError) as info:
        tilecraft.lower(func, target="c")
    assert type(info.value).__name__ == error and message in info.value.message
    assert str(info.value.span) == "kernels.py:7:1"


def test_the_split_keeps_evaluation_order_and_is_idempotent():
    """Built in Python (not parsed): `tilecraft.lower` splits it the same way."""
    from tilecraft.ir import dtype as dt
    from tilecraft.ir.buffer import Buffer
    from tilecraft.ir.function import PrimFunc

    a = Buffer("A", (E.const(8),), dt.float32)
    i = E.Var(dt.int32, "i")
    value = a[i]
    for k in range(1, 300):
        value = value + a[i] * float(k)
    store = S.BufferStore(a, value, (i,))
    func = PrimFunc("f", (a,), S.For(i, E.const(0), E.const(8), S.ForKind.SERIAL, store))
    once = bound_expression_depth(func)
    assert bound_expression_depth(once) is once
    lets = [s for s in walk(once.body) if isinstance(s, S.LetStmt)]
    assert [s.var.name for s in lets] == ["partial"] * len(lets) and len(lets) == 300 // HOIST_DEPTH
    for outer, inner in zip(lets, lets[1:]):  # each partial result reads the one before it
        assert any(e is outer.var for e in walk(inner.value))


@needs_cc
def test_an_expression_built_in_python_is_split_when_compiled():
    """`tilecraft.compile` of a PrimFunc built without the parser: the cache key, the cache's fragment
    sizing and the lowering all see the split function."""
    import tilecraft
    from tilecraft.ir import dtype as dt
    from tilecraft.ir.buffer import Buffer
    from tilecraft.ir.function import PrimFunc

    a, c = Buffer("A", (E.const(N),), dt.float32), Buffer("C", (E.const(N),), dt.float32)
    i = E.Var(dt.int32, "i")
    value = a[i]
    for k in range(1, 3000):
        value = value + a[i] * float(k % 5)
    body = S.For(i, E.const(0), E.const(N), S.ForKind.SERIAL, S.BufferStore(c, value, (i,)))
    launch = S.KernelLaunch((E.const(1),), (1,), (E.Var(dt.int32, "bx"),), (), body)
    kernel = tilecraft.compile(PrimFunc("built", (a, c), launch), target="c")
    x = floats(5)
    expected = x.copy()
    for k in range(1, 3000):
        expected = expected + x * np.float32(k % 5)
    np.testing.assert_allclose(run_kernel(kernel, x), expected, rtol=1e-5, atol=1e-3)


def run_kernel(kernel, a: np.ndarray) -> np.ndarray:
    c = np.full_like(a, 123)
    kernel(a, c)
    return c


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target_case" in metafunc.fixturenames:
        from tests.conformance.targets import declared_cases

        cases = declared_cases()
        metafunc.parametrize("target_case", cases, ids=[c.id for c in cases])


def test_a_2000_term_sum_runs_on_every_available_target(tmp_path, target_case):
    """The split kernel on every (target, execution backend) pair here, threads and all."""
    import tilecraft
    from tests.conformance.targets import resolve

    ctx = resolve(target_case)
    module, _ = kernel_module(tmp_path, "C[i] = sum(A[i] * (k % 3 + 1) for k in range(2000))", threads=128)
    kernel = tilecraft.compile(module.k.get_tir(), ctx=ctx)
    a = floats(6)
    expected = np.zeros(N, np.float32)
    for k in range(2000):
        expected = expected + a * np.float32(k % 3 + 1)
    out = kernel.to_device(np.full(N, np.nan, np.float32))  # poisoned
    kernel(kernel.to_device(a), out)
    np.testing.assert_allclose(kernel.to_host(out), expected, rtol=1e-4, atol=1e-2)
