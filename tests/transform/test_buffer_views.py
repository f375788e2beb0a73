"""lower-buffer-views: accesses through `T.Tensor(shape, dtype, A.data)` views address their base, at
the row-major offset of the view's index, and every access of a viewed buffer takes that flat form."""

from __future__ import annotations

import dataclasses

import pytest

import tilecraft.language as T
from tests.transform.helpers import OPENCL
from tilecraft.backend import create_backend_context
from tilecraft.errors import LoweringError
from tilecraft.ir import Buffer, IRModule, structural_equal, walk
from tilecraft.transform.buffer_views import lower_views
from tilecraft.transform.written import written_params


def assert_lowered_as(before, expected) -> None:
    """`lower-buffer-views` turns `before` into `expected` (compared structurally; names aside)."""
    after = dataclasses.replace(lower_views(before), name=expected.name)
    assert structural_equal(after, expected), after.script()


def test_view_accesses_address_the_base_at_the_flat_offset():
    """`V[i, j]` of a (12, 10) view of a (3, 4, 10) tensor is `A[0, 0, i * 10 + j]`; the base's own
    accesses in the same function take the flat form too, and other buffers keep theirs."""

    @T.prim_func
    def before(A: T.Tensor((3, 4, 10), "float32"), B: T.Tensor((12, 10), "float32")):
        with T.Kernel(1, threads=32):
            flat = T.Tensor((12, 10), "float32", A.data)
            for i, j in T.Parallel(12, 10):
                flat[i, j] = B[i, j] + A[i // 4, i % 4, j]

    @T.prim_func
    def expected(A: T.Tensor((3, 4, 10), "float32"), B: T.Tensor((12, 10), "float32")):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(12, 10):
                A[0, 0, i * 10 + j] = B[i, j] + A[0, 0, (i // 4 * 4 + i % 4) * 10 + j]

    assert_lowered_as(before, expected)


def test_a_view_is_gone_after_lowering_on_every_target():
    """After the pipeline no buffer is a view, and the device kernel takes the base as its parameter."""

    @T.prim_func
    def reshape_copy(A: T.Tensor((4, 6), "float32"), B: T.Tensor((3, 8), "float32")):
        with T.Kernel(1, threads=32):
            a_rows = T.Tensor((3, 8), "float32", A.data)
            T.copy(a_rows, B)

    for target, execution in (("c", "cc"), (OPENCL, "opencl"), ("cuda -arch=sm_80", "nvrtc")):
        ctx = create_backend_context(target, execution_backend=execution, require_available=False)
        mod = ctx.lower(IRModule.from_func(reshape_copy))
        buffers = [n for f in mod.functions for n in walk(f.body) if isinstance(n, Buffer)]
        assert buffers and all(b.base is None for b in buffers), target
        kernels = [f for f in mod.functions if f.attr("tilecraft.role") == "device"]
        assert [p.name for p in kernels[0].params] == ["A", "B"], target


def test_a_region_of_a_view_left_whole_is_an_error():
    """T.print keeps its region until code generation, and a view's region is no region of its base."""

    @T.prim_func
    def print_view(A: T.Tensor((4, 6), "float32")):
        with T.Kernel(1, threads=32):
            rows = T.Tensor((3, 8), "float32", A.data)
            T.print(rows[0:2, 0:8])

    with pytest.raises(LoweringError, match="a region of the view rows \\(of A\\) is still whole") as info:
        lower_views(print_view)
    assert info.value.span is not None and "T.print(rows" in str(info.value)


def test_writes_through_a_view_make_its_base_written():
    """The call checks writability and copies back by this fact: a view's stores write its base."""

    @T.prim_func
    def store_through_view(A: T.Tensor((4, 6), "float32"), B: T.Tensor((4, 6), "float32")):
        with T.Kernel(1, threads=32):
            b_flat = T.Tensor((24,), "float32", B.data)
            a_flat = T.Tensor((24,), "float32", A.data)
            for i in T.Parallel(24):
                b_flat[i] = a_flat[i]

    assert written_params(store_through_view) == (False, True)
