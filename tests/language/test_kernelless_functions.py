"""A function that allocates on-chip buffers outside `T.Kernel` (TileLang's test_dtype_str_repr declares a
shared buffer of each dtype in a kernel-less body): it parses and prints, as in TileLang, and lowering
refuses it at the allocation, since on-chip memory belongs to a kernel's blocks."""

from __future__ import annotations

import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_roundtrip, marker_line
from tilecraft.errors import SemanticError
from tilecraft.ir import stmt as S
from tilecraft.ir import walk


def declarations():
    @T.prim_func
    def declare():
        flag = T.alloc_buffer((1,), dtype=T.bool, scope="shared")  # noqa: F841 - declared, not used
        short = T.alloc_buffer((1,), dtype=T.short, scope="shared")  # noqa: F841
        half = T.alloc_buffer((2, 3), dtype=T.half, scope="shared")  # noqa: F841
        e8m0 = T.alloc_buffer((1,), dtype=T.float8_e8m0fnu, scope="shared")  # noqa: F841
        frag = T.alloc_fragment((4,), T.float)  # noqa: F841
        acc = T.alloc_var(T.long, init=3)  # noqa: F841

    return declare


def test_a_kernel_less_function_declaring_buffers_parses_and_prints():
    func = declarations()
    allocated = [
        (s.buffer.name, str(s.buffer.dtype), s.buffer.scope)
        for s in walk(func.body)
        if isinstance(s, S.Allocate)
    ]
    assert allocated == [
        ("flag", "bool", "shared"),
        ("short", "int16", "shared"),
        ("half", "float16", "shared"),
        ("e8m0", "float8_e8m0fnu", "shared"),
        ("frag", "float32", "local.fragment"),
        ("acc", "int64", "local.var"),
    ]
    text = assert_roundtrip(func)
    assert 'flag = T.alloc_shared((1,), "bool", scope="shared")' in text and "acc = 3" in text


def test_lowering_a_kernel_less_allocation_is_refused_at_its_line():
    def first_allocation():
        @T.prim_func
        def declare(A: T.Tensor((4,), "float32")):
            tile = T.alloc_shared((4,), "float32")  # <- error
            with T.Kernel(1, threads=32):
                T.copy(A, tile)

        return declare

    with pytest.raises(SemanticError, match="allocating tile is only valid inside `with T.Kernel") as info:
        tilecraft.compile(first_allocation(), target="c")
    assert info.value.span.line == marker_line(first_allocation)  # located at lowering, at the allocation
    assert "allocate it inside the T.Kernel block that uses it" in info.value.hint
