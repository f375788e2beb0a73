"""TileLang's fragment constructors: `T.Fragment(shape, forward_fn=...)` (thread and local index from
one function, the replica variable as an extra parameter), `make_gemm_fragment_8x8` / `_transposed` and
`Fragment.repeat`, as maps and as annotations of kernels checked against float64 NumPy references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.ir.eval import evaluate
from tilecraft.layout import Fragment, make_gemm_fragment_8x8, make_gemm_fragment_8x8_transposed


def holders(fragment: Fragment) -> dict[tuple[int, ...], set[tuple[int, int]]]:
    """Each element's (thread, local slot) pairs, one per replica."""
    result: dict[tuple[int, ...], set[tuple[int, int]]] = {}
    for point in itertools.product(*(range(n) for n in fragment.shape)):
        for rep in range(fragment.replicate):
            env = {**dict(zip(fragment.vars, point)), fragment.replica_var: rep}
            slot = tuple(int(evaluate(e, env)) for e in fragment.index)
            result.setdefault(point, set()).add((int(evaluate(fragment.thread, env)), *slot))
    return result


def test_the_8x8_fragments_give_each_of_32_threads_two_adjacent_elements():
    plain, transposed = holders(make_gemm_fragment_8x8()), holders(make_gemm_fragment_8x8_transposed())
    for i, j in itertools.product(range(8), range(8)):
        assert plain[i, j] == {(4 * i + j // 2, j % 2)}
        assert transposed[i, j] == {(4 * j + i // 2, i % 2)}
    for table in (plain, transposed):
        assert sorted(h for hs in table.values() for h in hs) == [(t, s) for t in range(32) for s in range(2)]


@pytest.mark.parametrize("on_thread", [False, True])
def test_repeat_tiles_the_fragment_on_local_slots_or_on_threads(on_thread):
    base = make_gemm_fragment_8x8_transposed()
    tiled = base.repeat([2, 3], repeat_on_thread=on_thread)
    assert tiled.shape == (16, 24)
    table, inner = holders(tiled), holders(base)
    for i, j in itertools.product(range(16), range(24)):
        ((thread, slot),) = inner[i % 8, j % 8]
        copy = (i // 8) * 3 + j // 8  # the last dim fastest
        expected = (thread + 32 * copy, slot) if on_thread else (thread, slot + 2 * copy)
        assert table[i, j] == {expected}
    assert tiled.thread_extent() == (32 * 6 if on_thread else 32)
    first_dim_first = holders(base.repeat([2, 3], repeat_on_thread=True, lower_dim_first=False))
    assert first_dim_first[8, 0] == {(inner[0, 0].pop()[0] + 32, 0)}


def test_forward_fn_passes_the_replica_when_the_function_takes_it():
    rows = Fragment((4,), forward_fn=lambda i, rep: (16 * i + rep, 0), replicate=16)
    assert holders(rows)[2,] == {(32 + r, 0) for r in range(16)}
    cols = Fragment((4, 8), forward_fn=lambda i, j: (j, (i,)))
    assert holders(cols)[3, 5] == {(5, 3)}


def test_forward_fn_with_the_separate_functions_or_a_bad_result_is_refused():
    with pytest.raises(ValueError, match="not both"):
        Fragment((4,), forward_fn=lambda i: (i, 0), forward_thread_fn=lambda i: i)
    with pytest.raises(ValueError, match=r"must return \(thread, local index\)"):
        Fragment((4,), forward_fn=lambda i: i)


ROWS, WIDTH, VECTOR = 4, 64, 8


def grouped_row_sums(offset: int, threads: int = 32):
    """x / rowsum(x), its fragments laid out by forward_fn: each row's WIDTH elements over WIDTH / VECTOR
    threads from `offset` on, VECTOR per thread; the sums replicated over those threads (TileLang's
    partial-thread reductions; the other threads of the block hold nothing)."""

    @T.prim_func
    def kernel(x: T.Tensor((ROWS, WIDTH), "float32"), out: T.Tensor((ROWS, WIDTH), "float32")):
        with T.Kernel(1, threads=threads):
            x_frag = T.alloc_fragment((ROWS, WIDTH), "float32")
            sums = T.alloc_fragment((ROWS,), "float32")
            T.annotate_layout({
                x_frag: T.Fragment(x_frag.shape, forward_fn=lambda i, j: (
                    offset + j // VECTOR, i * VECTOR + j % VECTOR)),
                sums: T.Fragment(sums.shape, forward_fn=lambda i, rep: (offset + rep, i),
                                 replicate=WIDTH // VECTOR),
            })  # fmt: skip
            for i, j in T.Parallel(ROWS, WIDTH):
                x_frag[i, j] = x[i, j]
            T.reduce_sum(x_frag, sums, dim=1)
            for i, j in T.Parallel(ROWS, WIDTH):
                out[i, j] = x_frag[i, j] / sums[i]

    return kernel


@pytest.mark.parametrize("offset", [0, 8])
def test_a_reduction_through_forward_fn_fragments(offset):
    x = np.random.default_rng(11 + offset).uniform(0.5, 2.0, (ROWS, WIDTH)).astype(np.float32)
    out = np.full_like(x, np.nan)
    tilecraft.compile(grouped_row_sums(offset), target="c")(x, out)
    ref = x.astype(np.float64) / x.astype(np.float64).sum(1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def transposed_8x8_tiles():
    """B = 3 * A + 1 through a 16x8 int8 fragment laid out as two transposed 8x8 tiles."""

    @T.prim_func
    def kernel(A: T.Tensor((16, 8), "int8"), B: T.Tensor((16, 8), "int32")):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((16, 8), "int8")
            T.annotate_layout({frag: make_gemm_fragment_8x8_transposed().repeat([2, 1], repeat_on_thread=False)})
            for i, j in T.Parallel(16, 8):
                frag[i, j] = A[i, j]
            for i, j in T.Parallel(16, 8):
                B[i, j] = T.cast(frag[i, j], "int32") * 3 + 1

    return kernel


def test_a_kernel_through_a_repeated_transposed_8x8_fragment():
    a = np.random.default_rng(12).integers(-40, 40, (16, 8)).astype(np.int8)
    b = np.full((16, 8), -777, np.int32)
    tilecraft.compile(transposed_8x8_tiles(), target="c")(a, b)
    np.testing.assert_array_equal(b, a.astype(np.int64) * 3 + 1)
