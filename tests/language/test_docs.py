"""docs/language.md stays true: every `python` block runs, its kernels pass the semantic check and
round-trip, error examples fail as the page says, and every name of the dialect is documented."""

from __future__ import annotations

import importlib.util
import inspect
import re
import warnings
from pathlib import Path

import pytest

import tilecraft.language as T
from tests.language.helpers import assert_roundtrip
from tilecraft.errors import KernelError, KernelWarning
from tilecraft.ir import IRModule, PrimFunc
from tilecraft.language.parser.core import EagerParam, parse_function
from tilecraft.transform.check import check_semantics
from tilecraft.transform.widen_fragments import widen_fragments

DOC = Path(__file__).resolve().parents[2] / "docs" / "language.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
EXPECT = re.compile(r"# expect: (\w+): (.*)")


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(DOC.read_text())]


def python_blocks() -> list[pytest.param]:
    found = [code for lang, code in blocks() if lang == "python"]
    return [pytest.param(code, id=f"block{k}") for k, code in enumerate(found)]


def load(code: str, path: Path):
    """Import `code` from a real file (the parser reads kernels' source through inspect)."""
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(f"doc_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernels_of(module) -> list[PrimFunc]:
    from tilecraft.jit.api import JITFunction

    found = []
    for value in vars(module).values():
        if isinstance(value, PrimFunc):
            found.append(value)
        elif isinstance(value, JITFunction):
            found.append(_parse_jit(value))
    return found


def _parse_jit(fn) -> PrimFunc:
    """Parameters with defaults are Python values; the others receive arrays (eager) or are required."""
    if not fn.eager:
        return fn.func()
    params = inspect.signature(fn.func).parameters.values()
    eager = {
        p.name: EagerParam(True) if p.default is inspect.Parameter.empty else EagerParam(False, p.default)
        for p in params
    }
    return parse_function(fn.func, eager=eager)


@pytest.mark.parametrize("code", python_blocks())
def test_python_block(code, tmp_path):
    expect = EXPECT.match(code)
    if expect is not None:
        with pytest.raises(KernelError) as info:
            for func in kernels_of(load(code, tmp_path / "kernel.py")):
                check_semantics(func)
        assert type(info.value).__name__ == expect.group(1)
        assert info.value.message == expect.group(2)
        return
    funcs = kernels_of(load(code, tmp_path / "kernel.py"))
    assert funcs, "a python block on the page should define at least one kernel"
    for func in funcs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", KernelWarning)  # the page shows a fragment sized by its loops
            check_semantics(widen_fragments(IRModule.from_func(func)))  # as lowering runs them
        assert_roundtrip(func)


def test_error_example_shows_the_real_message(tmp_path):
    """The `text` block after an `# expect:` block is the error exactly as tilecraft prints it."""
    pairs = list(zip(blocks(), blocks()[1:]))
    shown = [
        (code, text)
        for (lang, code), (next_lang, text) in pairs
        if EXPECT.match(code) and next_lang == "text"
    ]
    assert shown
    for code, text in shown:
        path = tmp_path / "kernel.py"
        with pytest.raises(KernelError) as info:
            load(code, path)
        assert str(info.value).replace(str(path), "kernel.py") == text.rstrip("\n")


def test_every_name_of_the_dialect_is_documented():
    text = DOC.read_text()
    missing = [name for name in T.__all__ if f"`T.{name}`" not in text and f"T.{name}(" not in text]
    assert not missing, f"undocumented: {missing}"


def test_the_page_has_the_main_examples():
    names = set()
    for lang, code in blocks():
        if lang == "python":
            names |= set(re.findall(r"^def (\w+)\(", code, re.MULTILINE))
    assert {"matmul", "split_k_gemm", "scale_rows", "parser_rules", "add_bias", "two_launches"} <= names
