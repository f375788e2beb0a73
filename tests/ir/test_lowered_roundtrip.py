"""Every stage of lowering prints as text that parses back: the IR after each pass of each pipeline, over
the conformance kernels, backend statements and layouts included (the generic `T.ir.<name>(...)` form).

Lowering every kernel for every target is what takes the time; of the modules it makes, a module is
round-tripped when it holds a class not round-tripped yet after that pass (so every class that occurs
after every pass is covered), and the first kernel's output of every pass is round-tripped whole.
"""

from __future__ import annotations

import contextlib

import pytest

import tilecraft.language as T
from tilecraft.backend import create_backend_context
from tilecraft.backend.instrument import PassInstrument
from tilecraft.ir import IRModule, PrimFunc, nodes, structural_equal
from tilecraft.ir import stmt as S
from tilecraft.ir.expr import Expr, node
from tilecraft.ir.printer import print_ir
from tilecraft.testing.conformance import CASES
from tilecraft.testing.passes import canonical
from tilecraft.transform.check import check_semantics
from tilecraft.transform.widen_fragments import widen_fragments

TARGETS = (
    "cpu",
    "cuda -arch=sm_80",
    "cuda -arch=sm_90a",
    "opencl",
    "webgpu",
    "hip -arch=gfx942",
    "metal -family=apple8",
)


class _Stages(PassInstrument):
    def __init__(self) -> None:
        self.modules: list[tuple[str, IRModule]] = []

    def enter_pipeline(self, pipeline, mod) -> None:
        self.modules.append(("input", mod))

    def after_pass(self, index, pass_, mod, seconds) -> None:
        self.modules.append((pass_.name, mod))


def stages(target: str, cases=CASES):
    """(kernel, pass, module after it) for every conformance kernel the target lowers."""
    ctx = create_backend_context(target, require_available=False)
    for case in cases:
        mod = widen_fragments(IRModule.from_func(case.build()))
        check_semantics(mod)
        seen = _Stages()
        with contextlib.suppress(Exception):  # a kernel the target declines: its stages so far count
            ctx.lower(mod, {}, seen)
        for pass_name, stage in seen.modules:
            yield case.name, pass_name, stage


def classes_in(mod: IRModule) -> set[str]:
    """The registered classes of every object the module holds (nodes, layouts and other values)."""
    found: set[str] = set()
    for value in _registered_in([mod.functions, mod.attrs]):
        found |= _classes_under(value)
    return set(found)


# Successive stages share most of their nodes (a pass rebuilds only what it changes), so each node's
# classes are worked out once: id -> (the node, kept alive so the id stays its own; its classes).
_CLASSES_UNDER: dict[int, tuple[object, frozenset[str]]] = {}


def _registered_in(value) -> list:
    """The registered objects in a field's value, through tuples, lists and dicts."""
    found, stack = [], [value]
    while stack:
        value = stack.pop()
        if isinstance(value, (tuple, list)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend([*value.keys(), *value.values()])
        elif nodes.is_registered(value):
            found.append(value)
    return found


def _classes_under(root) -> frozenset[str]:
    stack = [(root, False)]
    while stack:
        value, children_done = stack.pop()
        if id(value) in _CLASSES_UNDER:
            continue
        children = _registered_in(list(nodes.fields_of(value).values()))
        if not children_done:
            stack.append((value, True))
            stack.extend((child, False) for child in children if id(child) not in _CLASSES_UNDER)
            continue
        classes = {nodes.qualified_name(type(value))}
        for child in children:
            classes |= _CLASSES_UNDER.get(id(child), (None, frozenset()))[1]
        _CLASSES_UNDER[id(value)] = (value, frozenset(classes))
    return _CLASSES_UNDER[id(root)][1]


def assert_round_trip(mod: IRModule, where: str) -> None:
    text = print_ir(mod)
    again = T.parse_script(text)
    functions = again.functions if isinstance(again, IRModule) else (again,)
    assert print_ir(IRModule(functions, mod.attrs)) == text, f"{where}: the re-parsed IR prints otherwise"
    # Function by function: a module's functions may share buffer objects, which parsing makes per function.
    for f, g in zip(mod.functions, functions, strict=True):
        assert structural_equal(_flat(f), _flat(g)), (
            f"{where}: the re-parsed {f.name} differs from the original"
        )


def _flat(f: PrimFunc) -> PrimFunc:
    return canonical(f)


@pytest.mark.parametrize("target", TARGETS)
def test_every_stage_of_lowering_parses_back(target):
    """After every pass, the IR prints as text that parses back to the same IR (and the same text)."""
    covered: set[tuple[str, str]] = set()
    passes_done: set[str] = set()
    classes: set[str] = set()
    for kernel, pass_name, mod in stages(target):
        found = {(pass_name, c) for c in classes_in(mod)}
        if found <= covered and pass_name in passes_done:
            continue
        covered |= found
        passes_done.add(pass_name)
        classes |= {c for _, c in found}
        assert_round_trip(mod, f"{target}, {kernel}, after {pass_name}")
    assert classes, "no stage was round-tripped"


def test_the_targets_lowerings_use_the_backend_classes():
    """The lowered IR of the conformance kernels holds backend statements: the test above covers them."""
    found = set()
    cases = [c for c in CASES if c.name in ("gemm_f16_nn", "split_k_gemm_atomic")]
    for _, pass_name, mod in stages("cuda -arch=sm_90a", cases):
        if pass_name == "split-host-device":
            found |= classes_in(mod)
    assert {"KernelCall", "cuda.TmaCopy", "cuda.TmaLoad", "cuda.GemmCall", "cuda.MbarWait"} <= found


@node
class Pause(S.Stmt):
    """A statement of a backend this test makes up: registering it is all it takes to print and parse."""

    cycles: Expr
    reason: str = "wait"


@node
class Region(S.Stmt):
    body: S.Stmt
    depth: int | Expr = 0


def test_a_new_backends_statements_round_trip_without_shared_changes():
    """A class made with `@node` anywhere prints in the generic form and parses back, bodies included."""

    @T.prim_func
    def kernel(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = 1.0

    launch = kernel.body
    body = S.seq(Pause(launch.thread_vars[0] * 2), Region(Pause(launch.grid[0] + 1), depth=T.int32(3)))
    func = kernel.with_body(S.KernelLaunch(launch.grid, launch.threads, launch.block_vars,
                                           launch.thread_vars, S.seq(launch.body, body)))  # fmt: skip
    text = func.script()
    name = nodes.qualified_name(Pause)
    assert f"T.ir.{name}(cycles=tx * 2)" in text
    assert f"with T.ir.{nodes.qualified_name(Region)}(depth=T.int32(3)):" in text
    assert_round_trip(IRModule.from_func(func), "a made-up backend")


def test_an_unknown_class_is_named_with_the_registered_ones():
    """A misspelt `T.ir.<name>` says so, and suggests the registered names it is close to."""
    with pytest.raises(Exception, match=r"T.ir has no attribute 'KernelCal'(.|\n)*did you mean 'KernelCall'"):
        T.parse_script("import tilecraft.language as T\n\n@T.prim_func\ndef f():\n    T.ir.KernelCal()\n")


def test_a_statement_with_a_body_needs_its_block():
    """`T.ir.<name>(...)` of a statement with a body, written without a `with` block, is an error."""
    text = f"import tilecraft.language as T\n\n@T.prim_func\ndef f():\n    T.ir.{nodes.qualified_name(Region)}()\n"
    with pytest.raises(Exception, match="lacks its field 'body'"):
        T.parse_script(text)
