"""narrow-shared-scopes, Before/Expected: a shared buffer is in scope from its first to its last use.

The printed form does not show where a scope ends (statements after an allocation print the same
whether they are inside its scope or after it), so the expected IR is compared as text and the
scopes' nesting is checked on the module itself."""

from __future__ import annotations

import tilecraft.language as T
from tests.transform.helpers import OPENCL, SM80, WEBGPU
from tilecraft.ir import stmt as S
from tilecraft.ir.visitor import walk
from tilecraft.testing.passes import assert_pass, pass_test


def scopes(mod) -> dict[str, list[str]]:
    """Each shared buffer's name -> the names of the buffers allocated inside its scope."""
    allocs = [n for f in mod.functions for n in walk(f.body) if isinstance(n, S.Allocate)]
    return {a.buffer.name: [n.buffer.name for n in walk(a.body) if isinstance(n, S.Allocate)] for a in allocs}


@pass_test("narrow-shared-scopes", SM80, OPENCL, WEBGPU)
def test_a_buffer_first_used_after_another_is_done_is_allocated_after_it(target):
    """A buffer first used after another's last use gets a scope of its own after the other's."""
    # `b` is first used after `a`'s last use: its scope follows `a`'s instead of nesting in it, so
    # storage planning can give both the same bytes.

    @T.prim_func
    def before(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            a = T.alloc_shared((128,), "float32")
            b = T.alloc_shared((128,), "float32")
            a[tx] = A[tx]
            B[tx] = a[127 - tx]
            b[tx] = B[tx] * 2.0
            B[tx] = b[127 - tx]

    expected = """
    @T.prim_func
    def before(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            with T.ir.scope():
                a = T.alloc_shared((128,), "float32")
                a[tx] = A[tx]
                B[tx] = a[127 - tx]
            b = T.alloc_shared((128,), "float32")
            b[tx] = B[tx] * 2.0
            B[tx] = b[127 - tx]
    """

    result = assert_pass(target, "narrow-shared-scopes", before, expected, as_text=True)
    assert scopes(result) == {"a": [], "b": []}


@pass_test("narrow-shared-scopes", SM80, OPENCL, WEBGPU)
def test_buffers_in_use_at_the_same_time_stay_nested(target):
    """`a` is read after `b` is written: `b`'s scope (from its first use) stays inside `a`'s."""

    @T.prim_func
    def before(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            a = T.alloc_shared((128,), "float32")
            b = T.alloc_shared((128,), "float32")
            a[tx] = A[tx]
            b[tx] = A[127 - tx]
            B[tx] = a[127 - tx] + b[tx]

    @T.prim_func
    def expected(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            a = T.alloc_shared((128,), "float32")
            a[tx] = A[tx]
            b = T.alloc_shared((128,), "float32")
            b[tx] = A[127 - tx]
            B[tx] = a[127 - tx] + b[tx]

    result = assert_pass(target, "narrow-shared-scopes", before, expected)
    assert scopes(result) == {"a": ["b"], "b": []}
