"""Before/Expected tests of single passes: run one named pass of a target's pipeline on a module and
compare the result with the expected IR.

    @pass_test("lower-buffer-views", *TARGETS)
    def test_view_accesses_address_the_base_buffer(target):
        \"""A load through a view reads the viewed buffer at the view's flattened index.\"""
        assert_pass(target, "lower-buffer-views", before, expected)

`before` and `expected` are kernels written in the kernel language (`@T.prim_func`), IR modules, or
printed IR text (what `func.script()` and `TILECRAFT_DUMP_IR` write; `T.parse_script` reads it back).
`expected=UNCHANGED` states that the pass leaves the module as it is. The comparison is structural
(`tilecraft.ir.structural_equal`). Every IR prints as text that parses back, lowered IR too (its backend
statements in the generic `T.ir.<name>(...)` form), so a pass late in a pipeline is tested like any
other: `before` is the printed input (a `TILECRAFT_DUMP_IR` file, or `tilecraft opt` output, trimmed to
the point), `expected` the printed output.

`prefix=True` takes `before` through what `tilecraft.lower` runs ahead of the pass instead (the frontend
and every earlier pass of the pipeline): for a test about what the whole pipeline hands the pass.

`pass_test` records which (target kind, pass) pairs have a test; `untested_passes` lists the passes of
given pipelines that have none, so a suite can fail when a pass is added without a test.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tilecraft.backend.context import create_backend_context
from tilecraft.backend.pipeline import PassContext, PassPipeline
from tilecraft.backend.target import Target
from tilecraft.errors import KernelError
from tilecraft.ir import IRModule, PrimFunc, Var, structural_equal
from tilecraft.ir import stmt as S
from tilecraft.ir.printer import print_ir
from tilecraft.ir.visitor import BufferKeepingMutator, Mutator, substitute

__all__ = [
    "UNCHANGED",
    "assert_pass",
    "canonical",
    "covered_passes",
    "pass_test",
    "pipeline_of",
    "run_pass",
    "untested_passes",
]

UNCHANGED = "<the pass leaves the module unchanged>"

_COVERED: set[tuple[str, str]] = set()

IRLike = PrimFunc | IRModule | str


def pipeline_of(target: Target | str) -> tuple[PassPipeline, PassContext]:
    """The pipeline that lowers for `target`, and a pass context like the one `tilecraft.lower` makes."""
    ctx = create_backend_context(target, require_available=False)
    return ctx.backend.pipelines[ctx.target.kind], PassContext(ctx.target, {}, ctx)


def run_pass(
    target: Target | str,
    pass_name: str,
    before: IRLike,
    *,
    pass_configs: Mapping[str, Any] | None = None,
    prefix: bool = False,
) -> IRModule:
    """The module after the pass named `pass_name` of `target`'s pipeline ran on `before` (the first
    pass of that name, where a pipeline runs one twice); `prefix=True` runs the earlier ones first."""
    _, result = _run(target, pass_name, before, pass_configs, prefix)
    return result


def assert_pass(
    target: Target | str,
    pass_name: str,
    before: IRLike,
    expected: IRLike,
    *,
    pass_configs: Mapping[str, Any] | None = None,
    prefix: bool = False,
    as_text: bool = False,
) -> IRModule:
    """Run the pass on `before` and require `expected` (or the input itself, for `UNCHANGED`).

    `as_text=True` compares the printed forms even where the expected text parses: for what the printed
    form cannot show (where a scope ends, say), which the test then checks itself on the returned module.
    An `expected` equal to the pass's input is refused: such a test would pass without the pass.
    """
    given, result = _run(target, pass_name, before, pass_configs, prefix)
    if isinstance(expected, str) and expected == UNCHANGED:
        _require(
            structural_equal(result, given), given, result, f"'{pass_name}' changed a module it must keep"
        )
        return result
    wanted = None if as_text else _expected_module(pass_name, expected)
    if wanted is None:
        _assert_text(pass_name, given, result, expected)
    else:
        if _same_functions(given, wanted):
            raise AssertionError(f"expected IR of '{pass_name}' equals its input: write UNCHANGED instead")
        _require(
            _same_functions(result, wanted), wanted, result, f"'{pass_name}' did not give the expected IR"
        )
    return result


def pass_test(pass_name: str, *targets: str) -> Callable[[Callable[..., Any]], Any]:
    """Decorator of a Before/Expected test of `pass_name`: parametrizes its `target` argument over
    `targets` and records the pass as tested for each target's kind. The test's docstring must name
    the invariant it checks (one line)."""
    import pytest

    if not targets:
        raise ValueError(f"pass_test({pass_name!r}) needs at least one target")
    kinds = [Target.parse(t).kind for t in targets]

    def decorate(fn: Callable[..., Any]) -> Any:
        if not (fn.__doc__ or "").strip():
            raise ValueError(f"{fn.__name__}: a pass test's docstring names the invariant it checks")
        _COVERED.update((kind, pass_name) for kind in kinds)
        ids = [_target_id(t) for t in targets]
        return pytest.mark.parametrize("target", targets, ids=ids)(fn)

    return decorate


def covered_passes() -> frozenset[tuple[str, str]]:
    """The (target kind, pass name) pairs that a `pass_test` imported so far tests."""
    return frozenset(_COVERED)


def untested_passes(pipelines: Iterable[PassPipeline]) -> list[str]:
    """`kind: pass-name` for every pass of `pipelines` that no imported `pass_test` tests."""
    covered = covered_passes()
    missing = []
    for pipeline in pipelines:
        for name in dict.fromkeys(pipeline.pass_names):
            if (pipeline.name, name) not in covered:
                missing.append(f"{pipeline.name}: {name}")
    return missing


# ---------------------------------------------------------------------------------- running


def _run(target, pass_name, before, pass_configs, prefix) -> tuple[IRModule, IRModule]:
    """(the pass's input, its output)."""
    pipeline, ctx = pipeline_of(target)
    ctx = PassContext(ctx.target, pass_configs or {}, ctx.backend_context)
    index = _index_of(pipeline, pass_name)
    mod = _module(before)
    if prefix:
        # the earlier passes as one pipeline run, so TILECRAFT_DUMP_IR shows them too
        mod = PassPipeline(pipeline.name, pipeline.passes[:index]).run(_frontend(mod), ctx)
    return mod, PassPipeline(pipeline.name, pipeline.passes[index : index + 1]).run(mod, ctx)


def _index_of(pipeline: PassPipeline, pass_name: str) -> int:
    names = pipeline.pass_names
    if pass_name not in names:
        raise ValueError(
            f"pipeline {pipeline.name!r} has no pass {pass_name!r}; its passes: {', '.join(names)}"
        )
    return names.index(pass_name)


def _frontend(mod: IRModule) -> IRModule:
    """What `tilecraft.lower` does to a kernel before the pipeline: fragment sizing and the check."""
    from tilecraft.transform.check import check_semantics
    from tilecraft.transform.widen_fragments import widen_fragments

    mod = widen_fragments(mod)
    check_semantics(mod)
    return mod


def _module(ir: IRLike) -> IRModule:
    if isinstance(ir, IRModule):
        return ir
    if isinstance(ir, PrimFunc):
        return IRModule.from_func(ir)
    if isinstance(ir, str):
        return _module(_parse(ir))
    raise TypeError(f"expected a PrimFunc, an IRModule or IR text, got {type(ir).__name__}")


def _parse(text: str) -> PrimFunc | IRModule:
    from tilecraft.language import parse_script

    body = textwrap.dedent(text).strip() + "\n"
    if "import tilecraft.language as T" not in body:
        body = "import tilecraft.language as T\n\n" + body
    return parse_script(body)


def _expected_module(pass_name: str, expected: IRLike) -> IRModule:
    """`expected` as a module; expected text that does not parse fails the test with the parser's error."""
    if not isinstance(expected, str):
        return _module(expected)
    try:
        return _module(_parse(expected))
    except (KernelError, SyntaxError) as err:
        raise AssertionError(f"expected IR of '{pass_name}' does not parse: {err}") from None


# ---------------------------------------------------------------------------------- comparing


def _same_functions(a: IRModule, b: IRModule) -> bool:
    """Equal functions, in order; the name of a module's only function is not compared (a test names
    its kernels `before` and `expected`)."""
    if len(a.functions) != len(b.functions):
        return False
    pairs = [(canonical(f), canonical(g)) for f, g in zip(a.functions, b.functions)]
    if len(pairs) == 1:
        ((f, g),) = pairs
        return structural_equal(f, PrimFunc(f.name, g.params, g.body, g.attrs, span=g.span))
    return all(structural_equal(f, g) for f, g in pairs)


class _Canonical(BufferKeepingMutator):
    """Nested and empty statement sequences flattened (a pass that deletes a statement may leave an
    empty sequence behind, which prints as nothing and means nothing), and a loop variable or a buffer
    a pass bound (allocated) a second time replaced there by one of its own (as parsing the printed text
    makes one per loop and per allocation: a pipeline's prologue repeats the loop body's scratch tiles)."""

    def __init__(self) -> None:
        super().__init__()
        self.bound: set[int] = set()

    def mutate_SeqStmt(self, s: S.SeqStmt) -> S.Stmt:
        return S.seq(*(self.mutate(child) for child in s.stmts))

    def mutate_Allocate(self, s: S.Allocate) -> S.Stmt:
        if id(s.buffer) in self.bound:
            fresh = dataclasses.replace(s.buffer)  # a new buffer object with the same fields
            s = S.Allocate(fresh, _RenameBuffer(s.buffer, fresh).mutate(s.body), span=s.span)
        self.bound.add(id(s.buffer))
        return self.generic_mutate(s)

    def mutate_For(self, s: S.For) -> S.Stmt:
        if id(s.loop_var) in self.bound:
            fresh = Var(s.loop_var.dtype, s.loop_var.name)
            s = dataclasses.replace(s, loop_var=fresh, body=substitute(s.body, {s.loop_var: fresh}))
        self.bound.add(id(s.loop_var))
        return self.generic_mutate(s)


class _RenameBuffer(Mutator):
    """Every use of buffer `old` made a use of `new`."""

    def __init__(self, old, new) -> None:
        super().__init__()
        self.old, self.new = old, new

    def mutate_Buffer(self, buf):
        return self.new if buf is self.old else buf


def canonical(f: PrimFunc) -> PrimFunc:
    """`f` as Before/Expected tests compare it: what printing and parsing it back does not change."""
    return f.with_body(_Canonical().mutate(f.body))


def _require(ok: bool, wanted: IRModule, got: IRModule, what: str) -> None:
    if not ok:
        raise AssertionError(f"{what}:\n{_diff(_normalized(print_ir(wanted)), _normalized(print_ir(got)))}")


def _assert_text(pass_name: str, given: IRModule, result: IRModule, expected: IRLike) -> None:
    wanted = _normalized(expected if isinstance(expected, str) else print_ir(_module(expected)))
    if _normalized(print_ir(given)) == wanted:
        raise AssertionError(f"expected IR of '{pass_name}' equals its input: write UNCHANGED instead")
    got = _normalized(print_ir(result))
    if got != wanted:
        raise AssertionError(
            f"'{pass_name}' did not give the expected IR (compared as text):\n{_diff(wanted, got)}"
        )


def _normalized(text: str) -> str:
    """Printed IR without the dump header, the import line, surrounding indentation and blank lines."""
    lines = [line.rstrip() for line in textwrap.dedent(text).splitlines()]
    kept = [
        line
        for line in lines
        if line.strip() and not line.startswith(("# tilecraft IR after", "import tilecraft.language as T"))
    ]
    if sum(line.startswith("def ") for line in kept) == 1:  # the only function's name is not compared
        kept = [re.sub(r"^def \w+\(", "def _(", line) for line in kept]
    return "\n".join(kept)


def _diff(wanted: str, got: str) -> str:
    lines = difflib.unified_diff(wanted.splitlines(), got.splitlines(), "expected", "actual", lineterm="")
    return (
        "\n".join(lines) or "(the printed forms are equal; the IR differs in what the printer does not show)"
    )


def _target_id(target: str) -> str:
    """A short test id: the kind and the arch, if any (`kind-arch`), not every attribute."""
    parsed = Target.parse(target)
    arch = parsed.attr("arch")
    return f"{parsed.kind}-{arch}" if arch else parsed.kind
